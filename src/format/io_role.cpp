// Names of IORole as spelled in the manifest ("role" fields).
#include "hfstatic/ext/graph.h"

namespace hfs {

std::string_view io_role_name(IORole r) {
  switch (r) {
    case IORole::kInput: return "input";
    case IORole::kState: return "state";
    case IORole::kOutput: return "output";
  }
  return "?";
}

Result<IORole> io_role_from_name(std::string_view s) {
  if (s == "input") return IORole::kInput;
  if (s == "state") return IORole::kState;
  if (s == "output") return IORole::kOutput;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown role '" + std::string(s) + "' (expected input, state or output)");
}

}  // namespace hfs
