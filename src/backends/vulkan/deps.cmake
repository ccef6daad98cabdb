# The vulkan backend (src/backends/vulkan/): optional, with HFS_VULKAN=ON|OFF|AUTO (AUTO: on when the
# Vulkan headers and glslc are found). Only the headers and glslc are needed to build: the loader is
# dlopen'ed at run time (vk_api.cpp), so the library runs on machines without Vulkan.
set(HFS_VULKAN AUTO CACHE STRING "Vulkan compute backend: ON, OFF or AUTO (on when the Vulkan headers and glslc are found)")
set_property(CACHE HFS_VULKAN PROPERTY STRINGS ON OFF AUTO)
find_path(HFS_VULKAN_INCLUDE_DIR vulkan/vulkan.h)
find_program(HFS_GLSLC glslc)

set(HFS_VULKAN_ENABLED OFF)
if(HFS_VULKAN STREQUAL "ON" OR HFS_VULKAN STREQUAL "AUTO")
  if(HFS_VULKAN_INCLUDE_DIR AND HFS_GLSLC)
    set(HFS_VULKAN_ENABLED ON)
  elseif(HFS_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "HFS_VULKAN=ON needs the Vulkan headers and glslc (Debian: apt-get install libvulkan-dev glslc)")
  endif()
elseif(NOT HFS_VULKAN STREQUAL "OFF")
  message(FATAL_ERROR "HFS_VULKAN must be ON, OFF or AUTO, got '${HFS_VULKAN}'")
endif()
message(STATUS "hfstatic: vulkan backend ${HFS_VULKAN_ENABLED} (HFS_VULKAN=${HFS_VULKAN})")

if(NOT HFS_VULKAN_ENABLED)
  # The layer globbed every backend file: leave this one out.
  get_target_property(hfs_backend_sources hfs_backends SOURCES)
  list(FILTER hfs_backend_sources EXCLUDE REGEX "/src/backends/vulkan/")
  set_property(TARGET hfs_backends PROPERTY SOURCES ${hfs_backend_sources})
  return()
endif()

# Shaders: glslc → SPIR-V → one generated .cpp holding every module as a uint32_t array.
file(GLOB HFS_VULKAN_SHADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backends/vulkan/shaders/*.comp)
file(GLOB HFS_VULKAN_SHADER_INCLUDES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backends/vulkan/shaders/*.glsl)
set(hfs_spv_dir ${CMAKE_BINARY_DIR}/vulkan_shaders)
file(MAKE_DIRECTORY ${hfs_spv_dir})
set(hfs_spv_files)
foreach(shader ${HFS_VULKAN_SHADERS})
  get_filename_component(stem ${shader} NAME_WE)
  set(spv ${hfs_spv_dir}/${stem}.spv)
  add_custom_command(OUTPUT ${spv}
    COMMAND ${HFS_GLSLC} -fshader-stage=compute --target-env=vulkan1.1 -O -Werror ${shader} -o ${spv}
    DEPENDS ${shader} ${HFS_VULKAN_SHADER_INCLUDES} COMMENT "glslc ${stem}.comp" VERBATIM)
  list(APPEND hfs_spv_files ${spv})
endforeach()
set(hfs_spv_cpp ${hfs_spv_dir}/shaders_embedded.cpp)
add_custom_command(OUTPUT ${hfs_spv_cpp}
  COMMAND ${CMAKE_COMMAND} -DOUT=${hfs_spv_cpp} "-DSPV=${hfs_spv_files}"
          -P ${CMAKE_SOURCE_DIR}/src/backends/vulkan/embed_spirv.cmake
  DEPENDS ${hfs_spv_files} ${CMAKE_SOURCE_DIR}/src/backends/vulkan/embed_spirv.cmake
  COMMENT "embedding SPIR-V shaders" VERBATIM)
target_sources(hfs_backends PRIVATE ${hfs_spv_cpp})
set_source_files_properties(${hfs_spv_cpp} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
target_include_directories(hfs_backends PRIVATE ${HFS_VULKAN_INCLUDE_DIR})
