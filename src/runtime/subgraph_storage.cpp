#include "runtime/subgraph_storage.h"

#include <utility>
#include <vector>

#include "hfstatic/ext/method.h"

namespace hfs::detail {

const std::string& SubgraphStorage::root_of(const std::string& value) const {
  auto it = aliases.find(value);
  return it == aliases.end() ? value : it->second.root;
}

std::pair<std::string, uint64_t> SubgraphStorage::place(const std::string& value) const {
  std::string r = root_of(value);
  uint64_t offset = 0;
  for (auto it = views.find(r); it != views.end(); it = views.find(r)) {
    offset += it->second.second;
    r = root_of(it->second.first);
  }
  return {r, offset};
}

Result<SubgraphStorage> plan_subgraph_storage(const Subgraph& sg, const TypeMap& types, std::string_view where,
                                              ValueViews views) {
  if (!sg.constants) return make_error(ErrorCode::kInvalidArgument, std::string(where) + ": no constant store");
  SubgraphStorage p;
  p.aliases = alias_info(sg.nodes);
  p.views = std::move(views);
  for (size_t i = 0; i < sg.inputs.size(); ++i)
    p.roots.emplace(sg.inputs[i].name, ValueStorage{ValueStorage::Kind::kInput, i, 0, nullptr});
  for (size_t j = 0; j < sg.outputs.size(); ++j)
    p.roots.emplace(p.root_of(sg.outputs[j].name), ValueStorage{ValueStorage::Kind::kOutput, j, 0, nullptr});

  std::map<std::string, std::pair<size_t, size_t>, std::less<>> life;  // scratch roots: [first, last] node
  for (size_t i = 0; i < sg.nodes.size(); ++i) {
    const NodeDef& node = sg.nodes[i];
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      const std::string root = p.place(in).first;
      if (auto it = life.find(root); it != life.end()) {
        it->second.second = i;
        continue;
      }
      if (p.roots.count(root)) continue;
      const TensorView* c = sg.constants->find(root);
      if (!c) return make_error(ErrorCode::kUndefinedValue, std::string(where) + ": " + node_label(i, node) +
                                                                ": operand '" + in + "' has no storage");
      p.roots.emplace(root, ValueStorage{ValueStorage::Kind::kConstant, 0, 0, c});
    }
    const OpSchema* s = find_op(node.op);
    if (s && s->in_place && s->alias_input >= 0 && !node.outputs.empty()) {
      auto it = p.roots.find(p.root_of(node.outputs[0]));
      if (it != p.roots.end() && it->second.kind == ValueStorage::Kind::kConstant)
        return make_error(ErrorCode::kBadAlias, std::string(where) + ": " + node_label(i, node) +
                                                    ": updates constant '" + it->first + "' in place");
    }
    for (const std::string& out : node.outputs) {
      const std::string root = p.place(out).first;
      if (p.roots.count(root)) continue;
      auto [it, fresh] = life.emplace(root, std::make_pair(i, i));
      if (!fresh) it->second.second = i;
    }
  }
  std::vector<PlanItem> items;
  std::vector<std::string> item_roots;
  for (const auto& [root, range] : life) {
    auto t = types.find(root);
    if (t == types.end())
      return make_error(ErrorCode::kUndefinedValue, std::string(where) + ": value '" + root + "' has no type");
    items.push_back(PlanItem{t->second.nbytes(), range.first, range.second, 0});
    item_roots.push_back(root);
  }
  p.scratch_bytes = plan_arena(items);
  for (size_t k = 0; k < items.size(); ++k)
    p.roots.emplace(item_roots[k], ValueStorage{ValueStorage::Kind::kScratch, 0, items[k].offset, nullptr});
  return p;
}

}  // namespace hfs::detail
