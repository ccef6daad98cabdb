# The vulkan backend's tests (tests/backends/vulkan/): their own binary, hfstatic_vulkan_tests, labelled
# `vulkan` (ctest -L vulkan), run with the Khronos validation layer on (HFS_VULKAN_VALIDATION=1: any
# validation message fails the run). Built only with the backend (HFS_VULKAN); kept out of hfstatic_tests
# so that a build without Vulkan has nothing to skip.
get_target_property(hfs_unit_sources hfstatic_tests SOURCES)
list(FILTER hfs_unit_sources EXCLUDE REGEX "/tests/backends/vulkan/")
set_property(TARGET hfstatic_tests PROPERTY SOURCES ${hfs_unit_sources})

if(HFS_VULKAN_ENABLED)
  file(GLOB HFS_VULKAN_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/backends/vulkan/*.cpp)
  add_executable(hfstatic_vulkan_tests ${HFS_VULKAN_TEST_SOURCES} ${HFS_TEST_SUPPORT})
  target_include_directories(hfstatic_vulkan_tests PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}
                             ${HFS_VULKAN_INCLUDE_DIR})
  target_link_libraries(hfstatic_vulkan_tests PRIVATE hfstatic_internal GTest::gtest GTest::gtest_main nlohmann_json::nlohmann_json)
  target_compile_definitions(hfstatic_vulkan_tests PRIVATE HFS_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                             HFS_BINARY_DIR="${CMAKE_BINARY_DIR}" HFS_CLI_PATH="${hfs_cli_command}")
  hfs_test_precompiled_headers(hfstatic_vulkan_tests)
  gtest_discover_tests(hfstatic_vulkan_tests DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT 600 LABELS vulkan ENVIRONMENT HFS_VULKAN_VALIDATION=1)
endif()
