#include "backends/vulkan/fuse_linear_pass.h"

#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "backends/vulkan/lowering.h"
#include "runtime/graph_analysis.h"

namespace hfs::vulkan {
namespace {

// Operand positions of `linear` (src/ops/linear.cpp).
constexpr size_t kX = 0, kWeight = 1, kBias = 2, kScale = 3;
constexpr size_t kParts = 3;  // weight, bias, scale: what gets concatenated

std::string operand(const NodeDef& n, size_t i) {
  return i < n.inputs.size() ? n.inputs[i] : std::string();
}

// What must be equal for two linears to share one: the input, the weight format and K, and which of
// bias/scale are present. Sources must be constants (a weight computed in the graph is left alone).
struct Key {
  std::string x;
  DType dtype;
  int64_t k;
  bool bias, scale;
  auto operator<=>(const Key&) const = default;
};

struct Member {
  size_t node;
  int64_t n;  // output features
  std::array<const TensorView*, kParts> src{};
};

// Fused bytes, built once per set of source addresses and shared by every store that asks while one
// still holds them. A source address cannot be reused while the entry lives: each store holding the
// entry also keeps the sources it was built from alive.
class FusedCache {
 public:
  using SourceKey = std::vector<std::pair<const void*, uint64_t>>;
  std::shared_ptr<std::vector<std::byte>> get(const std::vector<const TensorView*>& parts) {
    SourceKey key;
    for (const TensorView* p : parts) key.emplace_back(p->ptr, p->nbytes());
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end())
      if (auto bytes = it->second.lock()) return bytes;
    uint64_t total = 0;
    for (const TensorView* p : parts) total += p->nbytes();
    auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(total));
    uint64_t at = 0;
    // Every supported format stores rows (blocks of a row for q4_0) output feature by output feature,
    // so concatenating along the output dim is concatenating the bytes.
    for (const TensorView* p : parts) {
      if (p->nbytes() != 0) std::memcpy(bytes->data() + at, p->ptr, p->nbytes());
      at += p->nbytes();
    }
    std::erase_if(cache_, [](const auto& e) { return e.second.expired(); });  // programs unloaded since
    cache_[key] = bytes;
    return bytes;
  }

 private:
  std::mutex mu_;
  std::map<SourceKey, std::weak_ptr<std::vector<std::byte>>> cache_;
};

FusedCache& fused_cache() {
  static FusedCache cache;
  return cache;
}

std::string joined(const std::vector<Member>& group, const MethodDef& m, size_t part) {
  std::string s;
  for (const Member& g : group) s += (s.empty() ? "" : "+") + m.nodes[g.node].inputs[part];
  return s;
}

// Adds the concatenation of the group's `part` constants (e.g. all weights) under a name made of theirs,
// unless this store has it already (several groups cannot share sources, but a rerun could).
Result<std::string> add_fused(const std::vector<Member>& group, const MethodDef& m, size_t part, ConstantStore& store) {
  const std::string name = "vulkan.concat(" + joined(group, m, kWeight + part) + ")";
  if (store.find(name)) return name;
  std::vector<const TensorView*> parts;
  int64_t rows = 0;
  for (const Member& g : group) parts.push_back(g.src[part]), rows += g.n;
  TensorType type{parts[0]->dtype, parts[0]->shape};
  type.shape[0] = rows;
  std::shared_ptr<std::vector<std::byte>> bytes = fused_cache().get(parts);
  if (bytes->size() != type.nbytes())
    return make_error(ErrorCode::kInternal, std::string(kFuseLinearsPass) + ": constant '" + name + "' of type " +
                                                type.to_string() + ": concatenation has " +
                                                std::to_string(bytes->size()) + " bytes");
  const void* data = bytes->data();
  HFS_TRY(store.add_shared(name, type, std::move(bytes), data));
  return name;
}

Status fuse(MethodDef& m, ConstantStore& store, uint64_t max_binding_bytes) {
  HFS_ASSIGN_OR_RETURN(detail::TypeMap types,
                       detail::infer_value_types(m.inputs, m.nodes, store, "method '" + m.name + "'"));
  std::map<Key, std::vector<Member>> groups;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const NodeDef& n = m.nodes[i];
    if (n.op != "linear" || !n.attrs.empty() || n.outputs.size() != 1) continue;
    const TensorView* w = store.find(operand(n, kWeight));
    if (!w || w->shape.rank() != 2) continue;
    Member g{i, w->shape[0], {w, nullptr, nullptr}};
    bool constant_operands = true;
    for (size_t p = 1; p < kParts; ++p) {
      const std::string name = operand(n, kWeight + p);
      if (name.empty()) continue;
      g.src[p] = store.find(name);
      constant_operands = constant_operands && g.src[p] != nullptr;
    }
    if (!constant_operands) continue;
    groups[Key{operand(n, kX), w->dtype, w->shape[1], g.src[1] != nullptr, g.src[2] != nullptr}].push_back(g);
  }

  // Rewrites, by the index of the group's first node: that node becomes the fused linear and its slices,
  // the group's other nodes are dropped. The input is defined before the first node, and every result
  // is now defined no later than before, so the order stays valid.
  std::map<size_t, std::vector<NodeDef>> replace;
  std::set<size_t> drop;
  std::vector<std::pair<std::string, uint64_t>> released;
  for (const auto& [key, group] : groups) {
    if (group.size() < 2) continue;
    int64_t total = 0;
    for (const Member& g : group) total += g.n;
    TensorType weight{key.dtype, {total, key.k}};
    if (weight.nbytes() == 0 || weight.nbytes() > max_binding_bytes) continue;
    auto x = types.find(key.x);
    if (x == types.end()) continue;
    TensorType out = x->second;
    out.shape[out.shape.rank() - 1] = total;
    if (out.nbytes() > max_binding_bytes) continue;
    // Only where the backend claims the result: a fused linear it would leave to the CPU gains nothing.
    TensorType bias{DType::kF32, {total}}, scale{DType::kF32, {total}};
    const TensorType* fused_types[] = {&x->second, &weight, key.bias ? &bias : nullptr, key.scale ? &scale : nullptr};
    NodeDef fused{"linear", {key.x, "", "", ""}, {}, {}};
    if (!vulkan_supports(fused, fused_types)) continue;

    for (size_t p = 0; p < kParts; ++p) {
      if (p > 0 && !(p == 1 ? key.bias : key.scale)) continue;
      HFS_ASSIGN_OR_RETURN(fused.inputs[kWeight + p], add_fused(group, m, p, store));
    }
    while (!fused.inputs.empty() && fused.inputs.back().empty()) fused.inputs.pop_back();
    std::string out_name;
    for (const Member& g : group) out_name += (out_name.empty() ? "" : "+") + m.nodes[g.node].outputs[0];
    fused.outputs = {out_name};
    std::vector<NodeDef> rewritten{fused};
    int64_t start = 0;
    for (const Member& g : group) {
      Attrs a;
      a["axis"] = Value(int64_t{-1});
      a["start"] = Value(start);
      a["end"] = Value(start + g.n);
      rewritten.push_back(NodeDef{"slice", {out_name}, {m.nodes[g.node].outputs[0]}, std::move(a)});
      start += g.n;
      for (size_t p = 0; p < kParts; ++p)
        if (g.src[p]) released.emplace_back(m.nodes[g.node].inputs[kWeight + p], g.src[p]->nbytes());
      if (g.node != group.front().node) drop.insert(g.node);
    }
    replace.emplace(group.front().node, std::move(rewritten));
  }
  if (replace.empty()) return Ok{};

  std::vector<NodeDef> nodes;
  nodes.reserve(m.nodes.size() + replace.size() * 3);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (auto r = replace.find(i); r != replace.end()) {
      for (NodeDef& n : r->second) nodes.push_back(std::move(n));
    } else if (!drop.count(i)) {
      nodes.push_back(std::move(m.nodes[i]));
    }
  }
  m.nodes = std::move(nodes);

  // The sources no longer read by this method (the backend uploads the fused copy): a file-mapped store
  // may drop their pages. Another method reading one of them faults it back in.
  if (store.releases_pages()) {
    std::set<std::string, std::less<>> still_read;
    for (const NodeDef& n : m.nodes) still_read.insert(n.inputs.begin(), n.inputs.end());
    for (const auto& [name, bytes] : released)
      if (!still_read.count(name)) store.release_pages(name, 0, bytes);
  }
  return Ok{};
}

}  // namespace

Pass fuse_linear_pass(uint64_t max_binding_bytes) {
  return Pass{kFuseLinearsPass,
              [max_binding_bytes](MethodDef& m, ConstantStore& c) { return fuse(m, c, max_binding_bytes); }};
}

}  // namespace hfs::vulkan
