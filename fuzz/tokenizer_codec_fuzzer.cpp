// libFuzzer driver for fuzz/targets/tokenizer_codec.h (see that file for what is fuzzed).
#include <cstdio>
#include <cstdlib>

#include "targets/tokenizer_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string violation = hfs::fuzz::fuzz_tokenizer_codec(data, size);
  if (!violation.empty()) {
    std::fprintf(stderr, "fuzz_tokenizer_codec: %s\n", violation.c_str());
    std::abort();
  }
  return 0;
}
