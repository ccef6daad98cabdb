// Which nodes the vulkan backend runs (`vulkan_supports`) and how each becomes one kernel dispatch
// (`lower_node`): the kernel, the operands bound to its bindings, its push constants and its grid.
// The shaders' semantics are the reference kernels' (src/ops/*.cpp); docs/vulkan-backend.md lists what
// runs where.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "backends/vulkan/kernels.h"
#include "hfstatic/error.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/tensor.h"

namespace hfs::vulkan {

// Where an operand's bytes are when the delegate runs.
struct Operand {
  enum class Kind : uint8_t { kNone, kInput, kOutput, kConstant, kScratch };
  Kind kind = Kind::kNone;
  uint32_t index = 0;   // input/output position, constant slot
  uint64_t offset = 0;  // scratch byte offset
};

struct Dispatch {
  Kernel kernel = Kernel::kEltwise;
  std::array<Operand, kMaxBindings> operands{};      // binding b reads/writes operands[b]
  std::array<uint32_t, kPushWords> push{};           // words [0, bindings): operand word offsets (set when recorded)
  std::array<uint32_t, 3> groups{1, 1, 1};
  size_t node = 0;
};

// A host-side check before a step: the i32 values of subgraph input `input` must lie in [lo, hi)
// (slots may also be negative: lo = INT32_MIN). Indices that come from the device are not checked.
struct IndexCheck {
  uint32_t input = 0;
  int64_t count = 0;
  int32_t lo = 0;
  int64_t hi = 0;
  std::string what;  // "node 3 (op 'embedding'): ids"
};

// Whether the backend has a kernel for this node with these operand types; `why` gets the reason when not.
bool vulkan_supports(const NodeDef& node, std::span<const TensorType* const> types, std::string* why = nullptr);

// Kernel choices made once per backend at load (never per step): the same node lowers to the same
// kernel in every method a backend compiles.
struct LowerOptions {
  bool subgroup_gemv = false;  // few-row linears on linear_gemv_subgroup instead of linear_gemv
};

struct Lowered {
  std::optional<Dispatch> dispatch;  // none for a pure view (reshape)
  std::optional<IndexCheck> check;
};

// `in`/`out`: the node's operands (absent optional operands have Kind::kNone) and their types.
[[nodiscard]] Result<Lowered> lower_node(size_t index, const NodeDef& node, std::span<const Operand> in,
                                         std::span<const TensorType* const> in_types, std::span<const Operand> out,
                                         std::span<const TensorType* const> out_types, const LowerOptions& options);

}  // namespace hfs::vulkan
