// Partitioning: each node goes to the highest-priority backend that supports it; nodes of one backend
// joined by data edges are merged into one partition unless the merge would make partitions depend on
// each other in a cycle (A → other backend → A), in which case the partition is split there.
//
// Nodes are visited in method order (a topological order). Each partition tracks the set of partitions
// it transitively depends on; a node may join the partitions of its same-backend producers only if no
// other partition it depends on itself depends on one of them.
#include <algorithm>
#include <queue>
#include <set>

#include "hfstatic/ext/backend.h"
#include "runtime/graph_analysis.h"

namespace hfs {
namespace detail {
BackendFactory find_backend_factory(std::string_view name);
}  // namespace detail

namespace {

// A small dynamic bitset over partition ids.
class Bits {
 public:
  explicit Bits(size_t n = 0) : w_((n + 63) / 64, 0) {}
  void set(size_t i) { w_[i / 64] |= uint64_t{1} << (i % 64); }
  void clear(size_t i) { w_[i / 64] &= ~(uint64_t{1} << (i % 64)); }
  bool test(size_t i) const { return (w_[i / 64] >> (i % 64)) & 1; }
  void merge(const Bits& o) {
    for (size_t k = 0; k < w_.size(); ++k) w_[k] |= o.w_[k];
  }
  bool intersects(const Bits& o) const {
    for (size_t k = 0; k < w_.size(); ++k)
      if (w_[k] & o.w_[k]) return true;
    return false;
  }
  template <typename F>
  void for_each(F f) const {
    for (size_t k = 0; k < w_.size(); ++k)
      for (uint64_t x = w_[k]; x; x &= x - 1) f(k * 64 + static_cast<size_t>(__builtin_ctzll(x)));
  }

 private:
  std::vector<uint64_t> w_;
};

struct Group {
  size_t backend = 0;
  std::vector<size_t> nodes;
  Bits anc;  // partitions this one transitively depends on
  bool alive = true;
};

}  // namespace

Partitioner::Partitioner(std::vector<std::shared_ptr<Backend>> backends) : backends_(std::move(backends)) {}

Result<Partitioner> Partitioner::from_options(const BackendOptions& options) {
  std::vector<std::string> names;
  for (const std::string& n : options.backends)
    if (n != kReferenceBackend && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  names.emplace_back(kReferenceBackend);

  auto registered_list = [] {
    std::string s;
    for (const std::string& r : registered_backends()) s += (s.empty() ? "" : ", ") + r;
    return s.empty() ? std::string("none") : s;
  };
  for (const auto& [name, settings] : options.settings)
    if (!detail::find_backend_factory(name))
      return make_error(ErrorCode::kNotFound, "backend options: settings given for backend '" + name +
                                                  "', which is not registered (registered: " + registered_list() + ")");

  std::vector<std::shared_ptr<Backend>> backends;
  for (const std::string& name : names) {
    BackendFactory factory = detail::find_backend_factory(name);
    if (!factory)
      return make_error(ErrorCode::kNotFound,
                        "backend '" + name + "' is not registered (registered: " + registered_list() + ")");
    auto it = options.settings.find(name);
    HFS_ASSIGN_OR_RETURN_CTX(std::unique_ptr<Backend> b, factory(it == options.settings.end() ? Value() : it->second),
                             "backend '" + name + "'");
    if (!b) return make_error(ErrorCode::kInternal, "backend '" + name + "': factory returned no backend");
    backends.push_back(std::shared_ptr<Backend>(std::move(b)));
  }
  return Partitioner(std::move(backends));
}

Result<std::vector<Partition>> Partitioner::partition(const MethodDef& method, const ConstantStore& constants) const {
  const std::string where = "method '" + method.name + "'";
  if (backends_.empty()) return make_error(ErrorCode::kInvalidArgument, where + ": partitioner has no backends");
  HFS_ASSIGN_OR_RETURN(detail::TypeMap types, detail::infer_value_types(method.inputs, method.nodes, constants, where));
  const size_t n = method.nodes.size();

  // Claims, in priority order.
  std::vector<size_t> owner(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<const TensorType*> ops = detail::operand_types(method.nodes[i], types);
    size_t b = 0;
    while (b < backends_.size() && !backends_[b]->supports(method.nodes[i], ops)) ++b;
    if (b == backends_.size()) {
      std::string names;
      for (const auto& be : backends_) names += (names.empty() ? "" : ", ") + std::string(be->name());
      return make_error(ErrorCode::kUnsupported, where + ": " + detail::node_label(i, method.nodes[i]) +
                                                     ": no selected backend supports it (selected: " + names + ")");
    }
    owner[i] = b;
  }

  // Dependencies: data edges, plus write-after-read edges so that an in-place update runs after every
  // earlier reader of the buffer it overwrites (those readers have no data edge to it).
  std::map<std::string, size_t, std::less<>> producer;
  std::map<std::string, std::vector<size_t>, std::less<>> readers_by_root;
  auto aliases = detail::alias_info(method.nodes);
  auto root_of = [&](const std::string& v) {
    auto it = aliases.find(v);
    return it == aliases.end() ? v : it->second.root;
  };
  std::vector<std::vector<size_t>> data_preds(n), preds(n);
  for (size_t i = 0; i < n; ++i) {
    const NodeDef& node = method.nodes[i];
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it != producer.end()) data_preds[i].push_back(it->second);
    }
    preds[i] = data_preds[i];
    const OpSchema* s = find_op(node.op);
    if (s && s->in_place && s->alias_input >= 0 && static_cast<size_t>(s->alias_input) < node.inputs.size()) {
      auto& readers = readers_by_root[root_of(node.inputs[static_cast<size_t>(s->alias_input)])];
      for (size_t r : readers)
        if (r != i) preds[i].push_back(r);
      readers.clear();
    }
    for (const std::string& in : node.inputs)
      if (!in.empty()) readers_by_root[root_of(in)].push_back(i);
    for (const std::string& out : node.outputs) producer[out] = i;
  }

  std::vector<Group> groups;
  std::vector<size_t> group_of(n);
  for (size_t i = 0; i < n; ++i) {
    Bits deps(n);  // D: every partition node i depends on
    std::set<size_t> direct;
    for (size_t p : preds[i]) direct.insert(group_of[p]);
    for (size_t g : direct) {
      deps.set(g);
      deps.merge(groups[g].anc);
    }
    std::set<size_t> candidates;
    for (size_t p : data_preds[i])
      if (owner[p] == owner[i]) candidates.insert(group_of[p]);

    Bits chosen(n);
    std::vector<size_t> chosen_list;
    for (size_t c : candidates) {
      Bits trial = chosen;
      trial.set(c);
      bool ok = true;
      deps.for_each([&](size_t x) {
        if (ok && !trial.test(x) && groups[x].anc.intersects(trial)) ok = false;
      });
      if (ok) {
        chosen = trial;
        chosen_list.push_back(c);
      }
    }

    if (chosen_list.empty()) {
      group_of[i] = groups.size();
      groups.push_back(Group{owner[i], {i}, deps, true});
      continue;
    }
    size_t target = chosen_list.front();  // the lowest id: candidates iterate in ascending order
    Bits anc = deps;
    for (size_t m : chosen_list) anc.clear(m);
    for (size_t m : chosen_list) {
      if (m == target) continue;
      for (size_t node : groups[m].nodes) group_of[node] = target;
      groups[target].nodes.insert(groups[target].nodes.end(), groups[m].nodes.begin(), groups[m].nodes.end());
      groups[m].nodes.clear();
      groups[m].alive = false;
    }
    groups[target].anc = anc;
    groups[target].nodes.push_back(i);
    group_of[i] = target;
    for (size_t y = 0; y < groups.size(); ++y) {
      if (y == target || !groups[y].alive || !groups[y].anc.intersects(chosen)) continue;
      for (size_t m : chosen_list) groups[y].anc.clear(m);
      groups[y].anc.set(target);
      groups[y].anc.merge(anc);
    }
  }

  // Execution order: Kahn's algorithm over direct partition dependencies, earliest first node first,
  // so the result stays close to the method's own order.
  std::vector<std::set<size_t>> succ(groups.size());
  std::vector<size_t> indegree(groups.size(), 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t p : preds[i]) {
      size_t a = group_of[p], b = group_of[i];
      if (a != b && succ[a].insert(b).second) ++indegree[b];
    }
  using Entry = std::pair<size_t, size_t>;  // (first node, group)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!groups[g].alive) continue;
    std::sort(groups[g].nodes.begin(), groups[g].nodes.end());
    if (indegree[g] == 0) ready.emplace(groups[g].nodes.front(), g);
  }
  std::vector<Partition> out;
  while (!ready.empty()) {
    size_t g = ready.top().second;
    ready.pop();
    out.push_back(Partition{groups[g].backend, groups[g].nodes});
    for (size_t s : succ[g])
      if (--indegree[s] == 0) ready.emplace(groups[s].nodes.front(), s);
  }
  size_t alive = static_cast<size_t>(std::count_if(groups.begin(), groups.end(), [](const Group& g) { return g.alive; }));
  if (out.size() != alive)
    return make_error(ErrorCode::kInternal, where + ": partitions depend on each other in a cycle (" +
                                                std::to_string(alive - out.size()) + " partitions left unordered)");
  return out;
}

}  // namespace hfs
