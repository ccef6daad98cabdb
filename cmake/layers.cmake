# The library, one object library per layer (src/<layer>/), combined into the shared libhfstatic.
#
# Each layer compiles against the public headers (include/) and the internal headers of the layers it
# may use, and no others: build/layers/<layer>/ holds links to just those src/ folders, so a forbidden
# include ("backends/cpu_fast/..." from the exporter, say) fails to build instead of creeping in. The
# table below is the architecture (docs/architecture.md): lower layers never see higher ones, the
# runtime and runner never see a backend or an architecture, and only the exporter knows models.
#
# The layers stay object libraries of one shared library: ops, backends and IO managers register
# themselves from their own files at static-init time, which a static archive would drop.
set(HFS_LAYER_DEPS
  "core:"
  "alloc:core"
  "format:core"
  "ops:core"
  "runtime:core,alloc,format,ops"
  "backends:core,alloc,format,ops,runtime"
  "tokenizer:core,format"
  "chat:core"
  "constrain:core"
  "llm:core,alloc,format,runtime,tokenizer,constrain"
  "export:core,format,ops,tokenizer"
  "hub:core")

set(HFS_LAYER_OBJECTS)
foreach(entry ${HFS_LAYER_DEPS})
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 layer)
  list(LENGTH parts n)
  set(deps)
  if(n GREATER 1)
    list(GET parts 1 deps)
    string(REPLACE "," ";" deps "${deps}")
  endif()
  # The layer's view of src/: itself and what it may use.
  set(view ${CMAKE_BINARY_DIR}/layers/${layer})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view})
  foreach(d ${layer} ${deps})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${d} ${view}/${d} SYMBOLIC)
  endforeach()
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${layer}/*.cpp)
  add_library(hfs_${layer} OBJECT ${srcs})
  target_include_directories(hfs_${layer} PRIVATE ${CMAKE_SOURCE_DIR}/include ${view})
  target_link_libraries(hfs_${layer} PRIVATE Threads::Threads nlohmann_json::nlohmann_json)
  hfs_precompile(hfs_${layer} ${HFS_COMMON_PCH})
  list(APPEND HFS_LAYER_OBJECTS $<TARGET_OBJECTS:hfs_${layer}>)
endforeach()
