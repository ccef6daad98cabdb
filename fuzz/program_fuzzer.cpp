// libFuzzer driver for fuzz/targets/program.h (see that file for what is fuzzed).
#include <cstdio>
#include <cstdlib>

#include "targets/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string violation = hfs::fuzz::fuzz_program(data, size);
  if (!violation.empty()) {
    std::fprintf(stderr, "fuzz_program: %s\n", violation.c_str());
    std::abort();
  }
  return 0;
}
