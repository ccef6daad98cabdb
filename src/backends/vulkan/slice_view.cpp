#include "backends/vulkan/slice_view.h"

#include <set>

#include "hfstatic/ext/ops.h"

namespace hfs::vulkan {

SliceViews slice_views(const Subgraph& sg, const detail::TypeMap& types,
                       const std::function<std::string(const std::string&)>& root_of) {
  std::set<std::string, std::less<>> pinned;  // roots that are subgraph outputs or updated in place
  for (const IOSpec& o : sg.outputs) pinned.insert(root_of(o.name));
  for (const NodeDef& n : sg.nodes) {
    const OpSchema* s = find_op(n.op);
    if (s && s->in_place && s->alias_input >= 0 && static_cast<size_t>(s->alias_input) < n.inputs.size())
      pinned.insert(root_of(n.inputs[static_cast<size_t>(s->alias_input)]));
  }
  SliceViews views;
  for (const NodeDef& n : sg.nodes) {
    if (n.op != "slice" || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
    if (pinned.count(n.outputs[0]) || pinned.count(root_of(n.inputs[0]))) continue;
    auto x = types.find(n.inputs[0]);
    if (x == types.end() || (x->second.dtype != DType::kF32 && x->second.dtype != DType::kI32)) continue;
    const Shape& shape = x->second.shape;
    const int rank = shape.rank();
    const int64_t raw = attr_int(n.attrs, "axis");
    const int axis = static_cast<int>(raw < 0 ? raw + rank : raw);
    if (axis < 0 || axis >= rank) continue;
    bool contiguous = true;
    for (int i = 0; i < axis; ++i) contiguous = contiguous && shape[i] == 1;
    if (!contiguous) continue;
    int64_t inner = 1;
    for (int i = axis + 1; i < rank; ++i) inner *= shape[i];
    views[n.outputs[0]] = {n.inputs[0], static_cast<uint64_t>(attr_int(n.attrs, "start") * inner * 4)};
  }
  return views;
}

}  // namespace hfs::vulkan
