// fuzz/targets/program.h — program loader + verifier: hfs::Program::from_bytes on arbitrary bytes.
//
// A file that loads must be fully usable: every constant view lies inside the file and every method
// re-verifies against the constant table.
#pragma once

#include <span>

#include "common.h"
#include "hfstatic/program.h"

namespace hfs::fuzz {

inline std::string fuzz_program(const uint8_t* data, size_t size) {
  auto prog = Program::from_bytes(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz.hfs");
  if (!prog) return "";
  const Program& p = **prog;
  for (const ConstantInfo& c : p.constants()) {
    auto view = p.constant(c.name);
    if (!view) return "constant '" + c.name + "' listed but not viewable: " + view.error().to_string();
  }
  for (const MethodDef& m : p.methods()) {
    Status s = verify_method(m, p.constants());
    if (!s) return "method '" + m.name + "' loaded but fails re-verification: " + s.error().to_string();
    if (p.method(m.name) != &m) return "method lookup by name disagrees for '" + m.name + "'";
  }
  return "";
}

}  // namespace hfs::fuzz
