// Internal graph facts shared by the partitioner, the Method and the CPU reference backend: value types
// (from the ops' shape rules) and buffer aliasing (views and in-place updates share storage).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/ext/backend.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/ext/ops.h"

namespace hfs::detail {

using TypeMap = std::map<std::string, TensorType, std::less<>>;

// Types of every value: `inputs`, the constants the nodes reference (looked up in `constants`) and node
// outputs (op infer rules). `where` prefixes messages, e.g. "method 'decode'". Errors: unknown op,
// undefined operand, rule failures — each naming the node index and op.
[[nodiscard]] Result<TypeMap> infer_value_types(std::span<const IOSpec> inputs, std::span<const NodeDef> nodes,
                                                const ConstantStore& constants, std::string_view where);

// Per value: the value whose buffer it lives in, and its version of that buffer (an in-place update makes
// a new version; a view keeps the version). Values not produced by an aliasing op are their own root.
struct AliasInfo {
  std::string root;
  int version = 0;
};
std::map<std::string, AliasInfo, std::less<>> alias_info(std::span<const NodeDef> nodes);

// Operand types of one node, in operand order (nullptr for absent optional operands).
std::vector<const TensorType*> operand_types(const NodeDef& node, const TypeMap& types);

std::string node_label(size_t index, const NodeDef& node);  // "node 3 (op 'linear')"

}  // namespace hfs::detail
