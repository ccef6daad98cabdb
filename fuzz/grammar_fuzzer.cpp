// libFuzzer driver for fuzz/targets/grammar.h (see that file for what is fuzzed).
#include <cstdio>
#include <cstdlib>

#include "targets/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string violation = hfs::fuzz::fuzz_grammar(data, size);
  if (!violation.empty()) {
    std::fprintf(stderr, "fuzz_grammar: %s\n", violation.c_str());
    std::abort();
  }
  return 0;
}
