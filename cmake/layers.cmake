# The library, one object library per layer (src/<layer>/), combined into the shared libhfstatic.
#
# Each layer compiles against a view of the source tree, build/layers/<layer>/, holding links to just the
# public headers (include/hfstatic/, include/hfstatic/ext/) and the internal headers (src/<layer>/) of
# itself and the layers it may use, and no others: a forbidden include ("backends/cpu_fast/..." from the
# exporter, "hfstatic/tokenizer.h" from the grammar compiler) fails to build instead of creeping in. The
# tables below are the architecture (docs/architecture.md): lower layers never see higher ones, the
# runtime and runner never see a backend or an architecture, and only the exporter knows models.
# tests/build/layering_test.sh checks every edge of the tables on the views.
#
# The layers stay object libraries: ops, backends and IO managers register themselves from their own
# files at static-init time, which a static archive would drop. They are compiled with hidden
# visibility, so libhfstatic exports only what the headers mark HFS_API (hfstatic/export_macro.h).
set(HFS_LAYER_DEPS
  "core:"
  "alloc:core"
  "format:core,ops"  # the verifier checks every node against its op's schema (operands, attributes, shapes)
  "ops:core"
  "runtime:core,alloc,format,ops"
  "backends:core,alloc,format,ops,runtime"
  "tokenizer:core,format"
  "chat:core"
  "constrain:core"
  "llm:core,alloc,format,ops,runtime,tokenizer,constrain"
  "export:core,format,ops,tokenizer"
  "hub:core")
# A row lists every layer whose headers the layer sees: where a listed layer's headers include a third
# layer's (runtime's speak in ops), the row lists that one too (tests/build/layering_test.sh compiles every
# header a row allows). Built outside the library (src/server/deps.cmake, the CLI in tools/), on views of their own.
set(HFS_CLIENT_LAYER_DEPS
  "server:core,alloc,format,ops,runtime,tokenizer,chat,constrain,llm"
  "tools:core,alloc,format,ops,runtime,tokenizer,chat,constrain,llm,export,hub,server")

# The owning layer of every public header (relative to include/hfstatic/). A header may include only
# headers of its own layer and the layers that one may use; a new header needs a row here.
set(HFS_HEADER_OWNERS
  "core:export_macro.h,error.h,dtype.h,tensor.h,value.h,ext/graph.h"
  "alloc:ext/allocator.h"
  "format:program.h,ext/program_writer.h,ext/metadata_keys.h"
  "ops:ext/ops.h"
  "runtime:ext/backend.h,ext/backend_kernels.h,ext/method.h"
  "tokenizer:tokenizer.h"
  "chat:chat_template.h"
  "constrain:constraint.h"
  "llm:llm_runner.h,engine.h,sampler.h,ext/io_contract.h"
  "export:export.h,ext/safetensors.h"
  "hub:hub.h")

# Every public header has an owner.
file(GLOB_RECURSE hfs_public_headers RELATIVE ${CMAKE_SOURCE_DIR}/include/hfstatic CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/include/hfstatic/*.h)
set(hfs_owned)
foreach(entry ${HFS_HEADER_OWNERS})
  string(REGEX REPLACE "^[^:]*:" "" headers "${entry}")
  string(REPLACE "," ";" headers "${headers}")
  list(APPEND hfs_owned ${headers})
endforeach()
foreach(h ${hfs_public_headers})
  if(NOT h IN_LIST hfs_owned)
    message(FATAL_ERROR "include/hfstatic/${h} has no owning layer: add it to HFS_HEADER_OWNERS (cmake/layers.cmake)")
  endif()
endforeach()

# hfs_layer_view(layer deps...): build/layers/<layer>/ with the src/ folders and the public headers of
# `layer` and `deps`. Also written to build/layers/table.txt for the layering test.
set(HFS_LAYER_TABLE ${CMAKE_BINARY_DIR}/layers/table.txt)
file(REMOVE_RECURSE ${CMAKE_BINARY_DIR}/layers)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/layers)
function(hfs_layer_view layer)
  set(view ${CMAKE_BINARY_DIR}/layers/${layer})
  file(MAKE_DIRECTORY ${view}/hfstatic/ext)
  foreach(d ${layer} ${ARGN})
    if(IS_DIRECTORY ${CMAKE_SOURCE_DIR}/src/${d})  # tools/ (the CLI) is no src/ folder
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${d} ${view}/${d} SYMBOLIC)
    endif()
    foreach(entry ${HFS_HEADER_OWNERS})
      if(entry MATCHES "^${d}:(.*)$")
        string(REPLACE "," ";" headers "${CMAKE_MATCH_1}")
        foreach(h ${headers})
          file(CREATE_LINK ${CMAKE_SOURCE_DIR}/include/hfstatic/${h} ${view}/hfstatic/${h} SYMBOLIC)
        endforeach()
      endif()
    endforeach()
  endforeach()
  string(REPLACE ";" "," deps "${ARGN}")
  file(APPEND ${HFS_LAYER_TABLE} "layer ${layer} ${deps}\n")
endfunction()
foreach(entry ${HFS_HEADER_OWNERS})
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 layer)
  list(GET parts 1 headers)
  file(APPEND ${HFS_LAYER_TABLE} "headers ${layer} ${headers}\n")
endforeach()

# hfs_layer_parse(entry layer_var deps_var): "llm:core,alloc" -> llm, core;alloc
macro(hfs_layer_parse entry layer_var deps_var)
  string(REPLACE ":" ";" hfs_parts "${entry}")
  list(GET hfs_parts 0 ${layer_var})
  list(LENGTH hfs_parts hfs_n)
  set(${deps_var})
  if(hfs_n GREATER 1)
    list(GET hfs_parts 1 ${deps_var})
    string(REPLACE "," ";" ${deps_var} "${${deps_var}}")
  endif()
endmacro()

# hfs_use_layer_view(target layer): `target` compiles against the view of `layer` (a client layer: server,
# tools) instead of include/ and src/.
function(hfs_use_layer_view target layer)
  target_include_directories(${target} PRIVATE ${CMAKE_BINARY_DIR}/layers/${layer})
endfunction()

# What the library links (the layers' deps.cmake add theirs): libhfstatic and hfstatic_internal share it.
add_library(hfs_layer_deps INTERFACE)
target_link_libraries(hfs_layer_deps INTERFACE Threads::Threads nlohmann_json::nlohmann_json ${CMAKE_DL_LIBS})

set(HFS_LAYER_OBJECTS)
foreach(entry ${HFS_LAYER_DEPS})
  hfs_layer_parse("${entry}" layer deps)
  hfs_layer_view(${layer} ${deps})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${layer}/*.cpp)
  add_library(hfs_${layer} OBJECT ${srcs})
  target_include_directories(hfs_${layer} PRIVATE ${CMAKE_BINARY_DIR}/layers/${layer})
  target_link_libraries(hfs_${layer} PRIVATE Threads::Threads nlohmann_json::nlohmann_json)
  set_target_properties(hfs_${layer} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  hfs_precompile(hfs_${layer} ${HFS_COMMON_PCH})
  list(APPEND HFS_LAYER_OBJECTS $<TARGET_OBJECTS:hfs_${layer}>)
endforeach()
foreach(entry ${HFS_CLIENT_LAYER_DEPS})
  hfs_layer_parse("${entry}" layer deps)
  hfs_layer_view(${layer} ${deps})
endforeach()

# hfstatic_internal: the layers' objects themselves, for the programs that use src/ beyond the exported
# API (the unit tests, fuzzers, benchmarks), with include/ and all of src/ to include from. The CLI links
# hfs_layer_objects (the same objects, no include paths) and compiles against its own view. A program
# links either these or libhfstatic, never both: each would bring its own op, backend and IO-manager
# registries.
add_library(hfs_layer_objects INTERFACE)
target_sources(hfs_layer_objects INTERFACE ${HFS_LAYER_OBJECTS})
target_link_libraries(hfs_layer_objects INTERFACE hfs_layer_deps)
target_compile_features(hfs_layer_objects INTERFACE cxx_std_20)
add_library(hfstatic_internal INTERFACE)
target_include_directories(hfstatic_internal INTERFACE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(hfstatic_internal INTERFACE hfs_layer_objects)
