# The benchmark programs, built only with -DHFS_BUILD_BENCH=ON (bench/compare and bench/tokenizer_bench/run
# configure it; scripts/install-deps --bench installs what they need). Included from the top-level
# CMakeLists.txt.
#   build/kernel_bench     bench/kernel_bench.cpp: cpu_fast kernels vs the triad bandwidth and OpenBLAS
#   build/tokenizer_bench  bench/tokenizer_bench/main.cpp: encode throughput (bench/tokenizer_bench/run)
#   build/constraint_bench bench/constraint_bench/main.cpp: structured output's token mask per step
# kernel_bench is a target rather than a hand-written compile line, which went stale as cpu_fast gained
# files; it links the library (whose internal symbols are visible) and OpenBLAS (the prefill comparison).
if(NOT HFS_BUILD_BENCH)
  return()
endif()
find_library(HFS_OPENBLAS openblas)
find_path(HFS_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas)
if(NOT HFS_OPENBLAS OR NOT HFS_CBLAS_INCLUDE)
  message(FATAL_ERROR "hfstatic: HFS_BUILD_BENCH needs OpenBLAS for kernel_bench "
                      "(scripts/install-deps --bench; apt: libopenblas-dev)")
endif()
add_executable(kernel_bench ${CMAKE_SOURCE_DIR}/bench/kernel_bench.cpp)
target_include_directories(kernel_bench PRIVATE ${CMAKE_SOURCE_DIR}/src ${HFS_CBLAS_INCLUDE})
target_link_libraries(kernel_bench PRIVATE hfstatic_internal ${HFS_OPENBLAS})

add_executable(tokenizer_bench ${CMAKE_SOURCE_DIR}/bench/tokenizer_bench/main.cpp)
target_link_libraries(tokenizer_bench PRIVATE hfstatic_internal nlohmann_json::nlohmann_json)

# build/constraint_bench  bench/constraint_bench/main.cpp: structured output's per-step token mask cost
add_executable(constraint_bench ${CMAKE_SOURCE_DIR}/bench/constraint_bench/main.cpp)
target_link_libraries(constraint_bench PRIVATE hfstatic_internal)
