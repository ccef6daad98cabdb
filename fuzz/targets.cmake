# The libFuzzer targets inside the main project's ASan+UBSan build (-DHFS_SANITIZE=ON -DHFS_FUZZ=ON, clang):
# each fuzz/<name>_fuzzer.cpp links the instrumented layer objects (hfstatic_internal: the fuzz targets reach
# src/ beyond the exported API), so the sanitizer suite and the fuzzers share one build of the library.
# scripts/test builds them in build-asan/; scripts/fuzz runs them.
file(GLOB HFS_FUZZ_DRIVERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/fuzz/*_fuzzer.cpp)
# The test-only ops of the tiny fixture program, so the program target's seed passes verification.
add_library(hfs_fuzz_fixtures OBJECT ${CMAKE_SOURCE_DIR}/tests/support/program_fixtures.cpp)
target_include_directories(hfs_fuzz_fixtures PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(hfs_fuzz_fixtures PRIVATE nlohmann_json::nlohmann_json)
foreach(driver ${HFS_FUZZ_DRIVERS})
  get_filename_component(name ${driver} NAME_WE)
  add_executable(${name} ${driver} $<TARGET_OBJECTS:hfs_fuzz_fixtures>)
  target_compile_definitions(${name} PRIVATE HFS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")  # the fixture locator
  target_link_libraries(${name} PRIVATE hfstatic_internal nlohmann_json::nlohmann_json)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
endforeach()
add_executable(write_seed_program ${CMAKE_SOURCE_DIR}/fuzz/write_seed_program.cpp $<TARGET_OBJECTS:hfs_fuzz_fixtures>)
target_include_directories(write_seed_program PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
target_compile_definitions(write_seed_program PRIVATE HFS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
target_link_libraries(write_seed_program PRIVATE hfstatic_internal nlohmann_json::nlohmann_json)
