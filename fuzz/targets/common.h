// fuzz/targets/common.h — shared helpers for the fuzz entry points (fuzz/targets/*.h).
//
// Every entry point has the shape `std::string fuzz_<name>(const uint8_t* data, size_t size)`: it feeds the
// bytes to one public API and returns "" when the library behaved (success or a clean hfs::Error), or a
// description of a broken property (e.g. a JSON round trip that changed the value). Memory errors and UB
// are caught by the sanitizers of the fuzz build. The same functions are called by libFuzzer
// (fuzz/<name>_fuzzer.cpp) and by the regression replay test (tests/fuzz_regressions/replay_test.cpp), so
// a reproducer file exercises exactly the code path that found it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "../../tests/support/fixtures.h"  // relative: the fuzz build has no tests/ include path

namespace hfs::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Deep nesting from a short input, which the fuzzer's small inputs never reach otherwise: text holding
// four 0x02 bytes, "A\x02B\x02C\x02D\x02E", stands for A, then B repeated kAmplify times, C, D repeated
// kAmplify times, E — e.g. "root ::= \x02(\x02\"a\"\x02)\x02\n" is 100 000 nested groups. Any other text
// is itself.
inline constexpr size_t kAmplify = 100000;
inline std::string amplify(std::string_view in) {
  std::string_view part[5];
  for (int i = 0; i < 4; ++i) {
    const size_t at = in.find('\x02');
    if (at == std::string_view::npos) return std::string(in);
    part[i] = in.substr(0, at);
    in.remove_prefix(at + 1);
  }
  part[4] = in;
  if ((part[1].size() + part[3].size()) * kAmplify > (size_t{64} << 20)) return std::string(in);  // bounded output
  std::string out(part[0]);
  for (size_t i = 0; i < kAmplify; ++i) out += part[1];
  out += part[2];
  for (size_t i = 0; i < kAmplify; ++i) out += part[3];
  out += part[4];
  return out;
}

inline bool read_text_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

// The stories260K model directory from the tests' fixture locator (tests/support/fixtures.h); empty when
// it has no tokenizer.json.
inline std::string stories_dir() {
  const std::string d = hfs::test::stories_dir();
  return std::ifstream(d + "/tokenizer.json") ? d : std::string();
}

}  // namespace hfs::fuzz
