// Where each value of a delegate's subgraph lives, planned once for every backend that runs a subgraph
// node by node with one scratch buffer (cpu_ref, vulkan): views and in-place updates share their root's
// storage; a root is a subgraph input, the first subgraph output of its alias group, a constant, or a
// scratch slot living from its first definition to its last use (plan_arena shares the bytes of slots
// whose lifetimes do not overlap).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "hfstatic/ext/backend.h"
#include "runtime/graph_analysis.h"

namespace hfs::detail {

struct ValueStorage {
  enum class Kind : uint8_t { kInput, kOutput, kConstant, kScratch };
  Kind kind = Kind::kInput;
  size_t index = 0;                     // kInput/kOutput: position in the subgraph's inputs/outputs
  size_t offset = 0;                    // kScratch: byte offset in the scratch buffer
  const TensorView* constant = nullptr; // kConstant: the value in the subgraph's constant store
};

// Values a backend binds as a byte range of another value instead of computing them (the Vulkan
// backend's contiguous slices): value → (source value, byte offset in the source). The planner gives a
// view no storage of its own and keeps its source alive while the view is used.
using ValueViews = std::map<std::string, std::pair<std::string, uint64_t>, std::less<>>;

struct SubgraphStorage {
  std::map<std::string, AliasInfo, std::less<>> aliases;
  ValueViews views;
  std::map<std::string, ValueStorage, std::less<>> roots;  // by root value name
  size_t scratch_bytes = 0;

  const std::string& root_of(const std::string& value) const;
  // The root whose storage holds `value` and the byte offset of `value` in it (0 unless through views).
  std::pair<std::string, uint64_t> place(const std::string& value) const;
  const ValueStorage& at(const std::string& value) const { return roots.at(root_of(value)); }
};

// Plans `sg` (with `types` from infer_value_types). Errors, prefixed with `where`: an operand that is no
// input, constant or earlier node output (kUndefinedValue); an in-place update of a constant (kBadAlias).
[[nodiscard]] Result<SubgraphStorage> plan_subgraph_storage(const Subgraph& sg, const TypeMap& types,
                                                            std::string_view where, ValueViews views = {});

}  // namespace hfs::detail
