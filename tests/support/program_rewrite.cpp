#include "support/program_rewrite.h"

#include <cstring>

#include "hfstatic/ext/program_writer.h"

namespace hfs::test {

Status rewrite_program(const Program& p, const std::string& out, const ProgramEdit& edit) {
  ProgramWriter w;
  Metadata meta = p.metadata();
  if (edit.metadata) edit.metadata(meta);
  for (auto& [k, v] : meta) w.set_metadata(k, v);
  for (const ConstantInfo& c : p.constants()) {
    HFS_ASSIGN_OR_RETURN(auto view, p.constant(c.name));
    HFS_TRY(
        w.add_constant(c.name, c.type, std::span<const std::byte>(static_cast<const std::byte*>(view.ptr), c.nbytes)));
  }
  for (const MethodDef& m : p.methods()) {
    MethodDef copy = m;
    if (edit.method) edit.method(copy);
    HFS_TRY(w.add_method(std::move(copy)));
  }
  return w.write(out);
}

}  // namespace hfs::test
