// libFuzzer driver for fuzz/targets/chat_template.h (see that file for what is fuzzed).
#include <cstdio>
#include <cstdlib>

#include "targets/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string violation = hfs::fuzz::fuzz_chat_template(data, size);
  if (!violation.empty()) {
    std::fprintf(stderr, "fuzz_chat_template: %s\n", violation.c_str());
    std::abort();
  }
  return 0;
}
