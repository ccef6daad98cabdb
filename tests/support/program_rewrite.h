// Test helper: copy a loaded program into a new file with its metadata and/or methods edited —
// the corruption matrices use it to break one thing at a time in an otherwise valid program.
#pragma once

#include <functional>
#include <string>

#include "hfstatic/program.h"

namespace hfs::test {

struct ProgramEdit {
  std::function<void(Metadata&)> metadata;     // may be empty
  std::function<void(MethodDef&)> method;      // applied to every method; may be empty
};

// Writes `out` with the same constants as `p` and the edits applied. Verification of the edited
// methods still runs (so edits must keep the graph structurally valid, as contract tests need).
[[nodiscard]] Status rewrite_program(const Program& p, const std::string& out, const ProgramEdit& edit);

}  // namespace hfs::test
