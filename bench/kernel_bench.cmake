# bench/kernel_bench.cpp as a target (build/kernel_bench), built with everything else so that it always
# builds: a hand-written compile line listing cpu_fast's sources went stale as files were added. It links
# the library (whose internal symbols are visible) and OpenBLAS (the prefill comparison).
# Included from the top-level CMakeLists.txt.
find_library(HFS_OPENBLAS openblas)
find_path(HFS_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas)
if(NOT HFS_OPENBLAS OR NOT HFS_CBLAS_INCLUDE)
  message(WARNING "hfstatic: bench/kernel_bench disabled (needs OpenBLAS; apt: libopenblas-dev)")
  return()
endif()
add_executable(kernel_bench ${CMAKE_SOURCE_DIR}/bench/kernel_bench.cpp)
target_include_directories(kernel_bench PRIVATE ${CMAKE_SOURCE_DIR}/src ${HFS_CBLAS_INCLUDE})
target_link_libraries(kernel_bench PRIVATE hfstatic ${HFS_OPENBLAS})
