// Method: lowering (passes → partitioning → compilation), memory planning of the values that cross
// partition boundaries, and the allocation-free execute loop.
//
// Storage is decided per alias root (a view or in-place result lives in its root's buffer):
//   root is a method input      → the caller's input buffer
//   root is a constant          → the constant's bytes (views only; in-place updates are rejected)
//   root crosses partitions     → the caller's buffer of the first plain output in its alias group, else
//                                 an arena slot live from its producing partition to its last user
//   root stays in one partition → the delegate's business
// Plain outputs that cannot be bound directly (an input, a constant, a second output of one buffer) are
// copied once after the last partition. State outputs are the input's own buffer.
//
// A plain output bound with a null pointer is not wanted: execute skips every partition whose results
// reach only unwanted outputs — no state update, no wanted output, no needed partition downstream (a
// prompt chunk whose logits nobody reads skips a separately partitioned LM head).
#include "hfstatic/ext/method.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "runtime/graph_analysis.h"

namespace hfs {
namespace {

size_t align_up(size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

struct Storage {
  enum class Kind : uint8_t { kNone, kInput, kConstant, kArena, kCallerOutput };
  Kind kind = Kind::kNone;
  size_t index = 0;  // input/output index, or arena offset
  const void* cptr = nullptr;
};

struct Bound {
  Storage storage;
  TensorType type;
};

struct PartitionRun {
  std::unique_ptr<Delegate> delegate;
  std::string backend;
  // What keeps it from being skipped: it updates state, it produces these plain outputs (in their
  // caller buffers or copied out), or one of these later partitions reads what it produces.
  bool updates_state = false;
  std::vector<size_t> feeds_outputs, feeds_partitions;
  std::vector<Bound> inputs;   // subgraph input order
  std::vector<Bound> outputs;  // the delegate's output order
  std::vector<TensorView> in_views, out_views;  // sized at load; refilled by execute
};

struct CopyOut {
  size_t output = 0;
  Storage src;
  size_t nbytes = 0;
};

bool same_signature(const std::vector<IOSpec>& a, const std::vector<IOSpec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || !(a[i].type == b[i].type) || a[i].role != b[i].role || a[i].alias_of != b[i].alias_of)
      return false;
  return true;
}

// The constants a method references, as a table for verify_method (offsets are synthetic: the store's
// tensors are not in one file).
std::vector<ConstantInfo> referenced_constants(const MethodDef& def, const ConstantStore& store) {
  std::set<std::string, std::less<>> defined;
  for (const IOSpec& in : def.inputs) defined.insert(in.name);
  for (const NodeDef& n : def.nodes)
    for (const std::string& o : n.outputs) defined.insert(o);
  std::vector<ConstantInfo> out;
  std::set<std::string, std::less<>> seen;
  uint64_t offset = 0;
  auto consider = [&](const std::string& name) {
    if (name.empty() || defined.count(name) || !seen.insert(name).second) return;
    const TensorView* c = store.find(name);
    if (!c) return;
    ConstantInfo info{name, c->type(), offset, c->nbytes()};
    offset += align_up(static_cast<size_t>(info.nbytes));
    out.push_back(std::move(info));
  };
  for (const NodeDef& n : def.nodes)
    for (const std::string& in : n.inputs) consider(in);
  for (const IOSpec& o : def.outputs) consider(o.name);
  return out;
}

}  // namespace

struct Method::Impl {
  std::shared_ptr<const Program> program;  // keeps constant views alive for loaded methods
  std::shared_ptr<ConstantStore> constants;
  MethodDef def;
  MethodPlan plan;
  std::vector<std::shared_ptr<Backend>> backends;
  std::vector<PartitionRun> runs;
  std::vector<CopyOut> copies;
  std::vector<std::pair<size_t, size_t>> state_outputs;  // (output index, input index)
  Buffer arena;
  std::vector<uint8_t> needed;     // per partition, refilled by execute when an output is unwanted
  std::vector<uint8_t> skippable;  // per output: can_skip_output

  void* resolve(const Storage& s, std::span<const TensorView> inputs, std::span<TensorView> outputs) const {
    switch (s.kind) {
      case Storage::Kind::kNone: return nullptr;
      case Storage::Kind::kInput: return inputs[s.index].ptr;
      case Storage::Kind::kConstant: return const_cast<void*>(s.cptr);
      case Storage::Kind::kArena: return static_cast<std::byte*>(arena.data()) + s.index;
      case Storage::Kind::kCallerOutput: return outputs[s.index].ptr;
    }
    return nullptr;
  }

  Status check_bindings(std::span<const TensorView> inputs, std::span<TensorView> outputs) const;
  template <typename Wanted>
  Status mark_needed(const Wanted& wanted);
};

Method::Method(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Method::~Method() = default;

const MethodDef& Method::def() const { return impl_->def; }
const MethodPlan& Method::plan() const { return impl_->plan; }
std::shared_ptr<Allocator> Method::io_allocator() const { return impl_->backends.front()->allocator(); }

Result<std::unique_ptr<Method>> Method::load(std::shared_ptr<const Program> program, const std::string& name,
                                             const MethodOptions& options) {
  if (!program) return make_error(ErrorCode::kInvalidArgument, "method '" + name + "': no program");
  const MethodDef* def = program->method(name);
  if (!def) {
    std::string names;
    for (const MethodDef& m : program->methods()) names += (names.empty() ? "" : ", ") + m.name;
    return make_error(ErrorCode::kMissingMethod, program->path() + ": no method '" + name +
                                                     "' (available: " + (names.empty() ? "none" : names) + ")");
  }
  HFS_ASSIGN_OR_RETURN_CTX(std::unique_ptr<Method> m, create(*def, program_constants(program), options),
                           program->path());
  m->impl_->program = std::move(program);
  return m;
}

Result<std::unique_ptr<Method>> Method::create(MethodDef def, std::shared_ptr<ConstantStore> constants,
                                               const MethodOptions& options) {
  const std::string where = "method '" + def.name + "'";
  if (!constants) return make_error(ErrorCode::kInvalidArgument, where + ": no constant store");
  HFS_ASSIGN_OR_RETURN_CTX(Partitioner partitioner, Partitioner::from_options(options.backends), where);
  HFS_TRY(verify_method(def, referenced_constants(def, *constants)));

  // Lowering: caller passes, then each backend's passes in priority order.
  const std::vector<IOSpec> in_sig = def.inputs, out_sig = def.outputs;
  auto run_pass = [&](const Pass& p, std::string_view owner) -> Status {
    if (!p.run) return Ok{};
    HFS_TRY_CTX(p.run(def, *constants), where + ": " + std::string(owner) + " pass '" + p.name + "'");
    if (!same_signature(def.inputs, in_sig) || !same_signature(def.outputs, out_sig))
      return make_error(ErrorCode::kInvalidArgument,
                        where + ": " + std::string(owner) + " pass '" + p.name + "' changed the method's I/O signature");
    return Ok{};
  };
  bool rewritten = false;
  for (const Pass& p : options.passes) {
    HFS_TRY(run_pass(p, "caller"));
    rewritten = true;
  }
  for (const auto& b : partitioner.backends())
    for (const Pass& p : b->passes()) {
      HFS_TRY(run_pass(p, "backend '" + std::string(b->name()) + "'"));
      rewritten = true;
    }
  if (rewritten) HFS_TRY_CTX(verify_method(def, referenced_constants(def, *constants)), where + ": after lowering passes");

  HFS_ASSIGN_OR_RETURN(std::vector<Partition> parts, partitioner.partition(def, *constants));
  HFS_ASSIGN_OR_RETURN(detail::TypeMap types, detail::infer_value_types(def.inputs, def.nodes, *constants, where));
  auto aliases = detail::alias_info(def.nodes);
  auto alias = [&](const std::string& v) {
    auto it = aliases.find(v);
    return it == aliases.end() ? detail::AliasInfo{v, 0} : it->second;
  };
  std::map<std::string, int, std::less<>> final_version;
  for (const auto& [v, a] : aliases) final_version[a.root] = std::max(final_version[a.root], a.version);
  std::map<std::string, size_t, std::less<>> input_index;
  for (size_t i = 0; i < def.inputs.size(); ++i) input_index.emplace(def.inputs[i].name, i);

  // Node → partition, value → producing partition / last consuming partition.
  const size_t num_parts = parts.size();
  std::vector<size_t> part_of(def.nodes.size());
  for (size_t p = 0; p < num_parts; ++p)
    for (size_t i : parts[p].nodes) part_of[i] = p;
  std::map<std::string, size_t, std::less<>> produced_in;
  for (size_t i = 0; i < def.nodes.size(); ++i)
    for (const std::string& o : def.nodes[i].outputs) produced_in[o] = part_of[i];

  // Aliasing rules the storage plan relies on. Nodes that write a (state) method input in place are
  // remembered: their partitions can never be skipped.
  std::vector<uint8_t> writes_state(def.nodes.size(), 0);
  for (size_t i = 0; i < def.nodes.size(); ++i) {
    const NodeDef& n = def.nodes[i];
    const OpSchema* s = find_op(n.op);
    if (!s || !s->in_place || s->alias_input < 0 || n.outputs.empty()) continue;
    std::string root = alias(n.outputs[0]).root;
    auto in = input_index.find(root);
    if (in != input_index.end() && def.inputs[in->second].role != IORole::kState)
      return make_error(ErrorCode::kBadAlias, where + ": " + detail::node_label(i, n) + ": updates input '" + root +
                                                  "' in place, but it is not a state input");
    writes_state[i] = in != input_index.end() ? 1 : 0;
    if (in == input_index.end() && !produced_in.count(root))
      return make_error(ErrorCode::kBadAlias,
                        where + ": " + detail::node_label(i, n) + ": updates constant '" + root + "' in place");
  }
  auto impl = std::make_unique<Impl>();
  for (size_t o = 0; o < def.outputs.size(); ++o) {
    const IOSpec& out = def.outputs[o];
    detail::AliasInfo a = alias(out.name);
    if (a.version != final_version[a.root])
      return make_error(ErrorCode::kUseAfterInPlace, where + ": output '" + out.name + "' is overwritten in place later (buffer '" +
                                                         a.root + "')");
    if (out.role != IORole::kState) continue;
    auto in = input_index.find(out.alias_of);
    if (in == input_index.end() || def.inputs[in->second].role != IORole::kState)
      return make_error(ErrorCode::kBadAlias,
                        where + ": state output '" + out.name + "': alias_of '" + out.alias_of + "' is not a state input");
    if (a.root != out.alias_of)
      return make_error(ErrorCode::kBadAlias, where + ": state output '" + out.name + "' must live in input '" +
                                                  out.alias_of + "', but it is computed in buffer '" + a.root + "'");
    if (!(def.inputs[in->second].type == out.type))
      return make_error(ErrorCode::kBadAlias, where + ": state output '" + out.name + "': type " + out.type.to_string() +
                                                  " differs from input '" + out.alias_of + "' " +
                                                  def.inputs[in->second].type.to_string());
    impl->state_outputs.emplace_back(o, in->second);
  }

  // Subgraphs.
  std::set<std::string, std::less<>> method_outputs;
  for (const IOSpec& o : def.outputs) method_outputs.insert(o.name);
  std::map<std::string, size_t, std::less<>> last_use;  // value → last partition reading it
  std::vector<Subgraph> subgraphs(num_parts);
  for (size_t p = 0; p < num_parts; ++p) {
    Subgraph& sg = subgraphs[p];
    sg.constants = constants.get();
    std::set<std::string, std::less<>> seen;
    for (size_t i : parts[p].nodes) {
      sg.nodes.push_back(def.nodes[i]);
      for (const std::string& in : def.nodes[i].inputs) {
        if (in.empty()) continue;
        auto pi = produced_in.find(in);
        bool is_input = input_index.count(in) != 0;
        if (!is_input && pi == produced_in.end()) continue;  // a constant: reached through sg.constants
        if (pi != produced_in.end() && pi->second == p) continue;
        last_use[in] = std::max(last_use[in], p);
        if (seen.insert(in).second) sg.inputs.push_back(IOSpec{in, types[in], IORole::kInput, {}});
      }
    }
  }
  for (size_t p = 0; p < num_parts; ++p) {
    Subgraph& sg = subgraphs[p];
    for (size_t i : parts[p].nodes)
      for (const std::string& o : def.nodes[i].outputs) {
        auto lu = last_use.find(o);
        if ((lu == last_use.end() || lu->second == p) && !method_outputs.count(o)) continue;
        IOSpec spec{o, types[o], IORole::kOutput, {}};
        std::string root = alias(o).root;
        for (const IOSpec& in : sg.inputs)
          if (alias(in.name).root == root) {
            spec.role = IORole::kState;
            spec.alias_of = in.name;
            break;
          }
        sg.outputs.push_back(std::move(spec));
      }
  }

  // Storage per alias root.
  std::map<std::string, Storage, std::less<>> storage;
  std::map<std::string, std::pair<size_t, size_t>, std::less<>> arena_life;  // root → [first, last] step
  auto touch = [&](const std::string& v, size_t step) {
    std::string root = alias(v).root;
    if (!produced_in.count(root)) return;  // an input or constant: not in the arena
    auto [it, fresh] = arena_life.emplace(root, std::make_pair(produced_in[root], step));
    it->second.second = std::max(it->second.second, step);
  };
  for (size_t i = 0; i < def.inputs.size(); ++i) storage[def.inputs[i].name] = Storage{Storage::Kind::kInput, i, nullptr};
  for (size_t o = 0; o < def.outputs.size(); ++o) {
    if (def.outputs[o].role == IORole::kState) continue;
    std::string root = alias(def.outputs[o].name).root;
    if (produced_in.count(root) && !storage.count(root)) storage[root] = Storage{Storage::Kind::kCallerOutput, o, nullptr};
  }
  for (size_t p = 0; p < num_parts; ++p) {
    for (const IOSpec& in : subgraphs[p].inputs)
      touch(in.name, p);
    for (const IOSpec& out : subgraphs[p].outputs) touch(out.name, p);
  }
  auto storage_of = [&](const std::string& v) -> Storage {
    std::string root = alias(v).root;
    auto it = storage.find(root);
    if (it != storage.end()) return it->second;
    const TensorView* c = constants->find(root);
    return c ? Storage{Storage::Kind::kConstant, 0, c->ptr} : Storage{};
  };
  for (size_t o = 0; o < def.outputs.size(); ++o) {
    const IOSpec& out = def.outputs[o];
    if (out.role == IORole::kState) continue;
    Storage s = storage_of(out.name);
    if (s.kind == Storage::Kind::kCallerOutput && s.index == o) continue;
    if (s.kind == Storage::Kind::kNone)
      return make_error(ErrorCode::kOutputNotProduced, where + ": output '" + out.name + "' is never produced");
    impl->copies.push_back(CopyOut{o, s, static_cast<size_t>(out.type.nbytes())});
    touch(out.name, num_parts);  // read by the copy step
  }
  std::vector<PlanItem> items;
  std::vector<std::string> item_roots;
  for (const auto& [root, life] : arena_life) {
    if (storage.count(root)) continue;  // caller buffers
    items.push_back(PlanItem{static_cast<size_t>(types[root].nbytes()), life.first, life.second, 0});
    item_roots.push_back(root);
  }
  impl->plan.arena_bytes = plan_arena(items);
  for (size_t k = 0; k < items.size(); ++k) {
    storage[item_roots[k]] = Storage{Storage::Kind::kArena, items[k].offset, nullptr};
    impl->plan.unshared_bytes += align_up(items[k].size);
  }
  for (CopyOut& c : impl->copies) c.src = storage_of(def.outputs[c.output].name);

  // Compilation.
  const auto& backends = partitioner.backends();
  for (size_t p = 0; p < num_parts; ++p) {
    const std::shared_ptr<Backend>& be = backends[parts[p].backend];
    const std::string label = where + ": partition " + std::to_string(p) + " (backend '" + std::string(be->name()) + "')";
    HFS_ASSIGN_OR_RETURN_CTX(std::unique_ptr<Delegate> d, be->compile(subgraphs[p]), label);
    if (!d) return make_error(ErrorCode::kInternal, label + ": compile returned no delegate");
    PartitionRun run;
    run.delegate = std::move(d);
    run.backend = std::string(be->name());
    for (const IOSpec& in : subgraphs[p].inputs) run.inputs.push_back(Bound{storage_of(in.name), in.type});
    std::vector<int> order = run.delegate->output_order();
    const size_t n_out = subgraphs[p].outputs.size();
    if (order.empty())
      for (size_t k = 0; k < n_out; ++k) order.push_back(static_cast<int>(k));
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = sorted.size() == n_out;
    for (size_t k = 0; permutation && k < sorted.size(); ++k) permutation = sorted[k] == static_cast<int>(k);
    if (!permutation) {
      std::string got;
      for (int k : order) got += (got.empty() ? "" : ", ") + std::to_string(k);
      return make_error(ErrorCode::kInternal, label + ": output_order(): expected a permutation of 0.." +
                                                  std::to_string(static_cast<int64_t>(n_out) - 1) + " (" +
                                                  std::to_string(n_out) + " outputs), got [" + got + "]");
    }
    for (int k : order) {
      const IOSpec& out = subgraphs[p].outputs[static_cast<size_t>(k)];
      run.outputs.push_back(Bound{storage_of(out.name), out.type});
    }
    for (size_t i : parts[p].nodes) run.updates_state = run.updates_state || writes_state[i] != 0;
    // A value depends on the partition that produced it and, for a view, on the one that produced its bytes.
    auto from_p = [&](const std::string& v) {
      for (const std::string& name : {v, alias(v).root}) {
        auto pi = produced_in.find(name);
        if (pi != produced_in.end() && pi->second == p) return true;
      }
      return false;
    };
    for (size_t o = 0; o < def.outputs.size(); ++o)
      if (def.outputs[o].role != IORole::kState && from_p(def.outputs[o].name)) run.feeds_outputs.push_back(o);
    for (size_t q = p + 1; q < num_parts; ++q)
      if (std::any_of(subgraphs[q].inputs.begin(), subgraphs[q].inputs.end(), [&](const IOSpec& in) { return from_p(in.name); }))
        run.feeds_partitions.push_back(q);
    run.in_views.resize(run.inputs.size());
    run.out_views.resize(run.outputs.size());
    impl->plan.delegate_scratch += run.delegate->scratch_bytes();
    impl->plan.partition_backends.push_back(run.backend);
    impl->plan.partition_nodes.push_back(parts[p].nodes);
    impl->runs.push_back(std::move(run));
  }

  impl->backends = backends;
  impl->needed.assign(num_parts, 1);
  if (impl->plan.arena_bytes) {
    HFS_ASSIGN_OR_RETURN_CTX(Buffer arena, backends.front()->allocator()->allocate(impl->plan.arena_bytes),
                             where + ": arena");
    impl->arena = std::move(arena);
  }
  impl->constants = std::move(constants);
  impl->def = std::move(def);
  // An output can be left unbound on its own when that is valid and spares at least one partition.
  const std::vector<IOSpec>& outs = impl->def.outputs;
  impl->skippable.assign(outs.size(), 0);
  for (size_t o = 0; o < outs.size(); ++o)
    if (outs[o].role != IORole::kState)
      impl->skippable[o] = impl->mark_needed([o](size_t k) { return k != o; }).ok() &&
                           std::find(impl->needed.begin(), impl->needed.end(), 0) != impl->needed.end();
  return std::unique_ptr<Method>(new Method(std::move(impl)));
}

Status Method::Impl::check_bindings(std::span<const TensorView> inputs, std::span<TensorView> outputs) const {
  const std::string_view m = def.name;
  if (inputs.size() != def.inputs.size())
    return make_error(ErrorCode::kBadBinding, "method '" + std::string(m) + "': expected " +
                                                  std::to_string(def.inputs.size()) + " inputs, got " +
                                                  std::to_string(inputs.size()));
  if (outputs.size() != def.outputs.size())
    return make_error(ErrorCode::kBadBinding, "method '" + std::string(m) + "': expected " +
                                                  std::to_string(def.outputs.size()) + " outputs, got " +
                                                  std::to_string(outputs.size()));
  auto check = [&](const char* what, const IOSpec& spec, const TensorView& v) -> Status {
    // Messages are built only on failure: the success path must not allocate.
    auto head = [&] { return "method '" + std::string(m) + "': " + what + " '" + spec.name + "': "; };
    if (!v.ptr && spec.type.nbytes() != 0) return make_error(ErrorCode::kBadBinding, head() + "null data pointer");
    if (v.dtype != spec.type.dtype)
      return make_error(ErrorCode::kBadBinding, head() + "expected dtype " + std::string(dtype_name(spec.type.dtype)) +
                                                    ", got " + std::string(dtype_name(v.dtype)));
    if (v.shape != spec.type.shape)
      return make_error(ErrorCode::kBadBinding,
                        head() + "expected shape " + spec.type.shape.to_string() + ", got " + v.shape.to_string());
    return Ok{};
  };
  for (size_t i = 0; i < inputs.size(); ++i) HFS_TRY(check("input", def.inputs[i], inputs[i]));
  for (size_t o = 0; o < outputs.size(); ++o)
    if (def.outputs[o].role != IORole::kState && outputs[o].ptr != nullptr) HFS_TRY(check("output", def.outputs[o], outputs[o]));
  return Ok{};
}

// Which partitions run when some plain outputs are unwanted: walking back from the last one, a partition
// is needed if it updates state, produces a wanted output, or feeds a needed partition. An unwanted
// output that lives in its caller buffer must then come only from skipped partitions, and no wanted
// output may be copied from it; otherwise the error names both.
template <typename Wanted>
Status Method::Impl::mark_needed(const Wanted& wanted) {
  for (size_t p = runs.size(); p-- > 0;) {
    const PartitionRun& run = runs[p];
    bool need = run.updates_state;
    for (size_t o : run.feeds_outputs) need = need || wanted(o);
    for (size_t q : run.feeds_partitions) need = need || needed[q] != 0;
    needed[p] = need ? 1 : 0;
  }
  for (size_t p = 0; p < runs.size(); ++p) {
    if (!needed[p]) continue;
    for (const Bound& b : runs[p].outputs)
      if (b.storage.kind == Storage::Kind::kCallerOutput && !wanted(b.storage.index) &&
          def.outputs[b.storage.index].type.nbytes() != 0)
        return make_error(ErrorCode::kBadBinding, "method '" + def.name + "': output '" + def.outputs[b.storage.index].name +
                                                      "': null data pointer, but partition " + std::to_string(p) +
                                                      " (backend '" + runs[p].backend +
                                                      "') must still run and computes it in that buffer");
  }
  for (const CopyOut& c : copies)
    if (c.src.kind == Storage::Kind::kCallerOutput && !wanted(c.src.index) && wanted(c.output) && c.nbytes != 0)
      return make_error(ErrorCode::kBadBinding, "method '" + def.name + "': output '" + def.outputs[c.src.index].name +
                                                    "': null data pointer, but output '" + def.outputs[c.output].name +
                                                    "' is copied from it");
  return Ok{};
}

bool Method::can_skip_output(size_t output) const {
  return output < impl_->skippable.size() && impl_->skippable[output] != 0;
}

Status Method::execute(std::span<const TensorView> inputs, std::span<TensorView> outputs) {
  Impl& im = *impl_;
  HFS_TRY(im.check_bindings(inputs, outputs));
  bool skipping = false;
  for (size_t o = 0; o < outputs.size(); ++o)
    skipping = skipping || (im.def.outputs[o].role != IORole::kState && outputs[o].ptr == nullptr);
  if (skipping) HFS_TRY(im.mark_needed([&](size_t o) { return outputs[o].ptr != nullptr; }));
  for (size_t p = 0; p < im.runs.size(); ++p) {
    if (skipping && !im.needed[p]) continue;
    PartitionRun& run = im.runs[p];
    for (size_t k = 0; k < run.inputs.size(); ++k) {
      const Bound& b = run.inputs[k];
      run.in_views[k] = TensorView(im.resolve(b.storage, inputs, outputs), b.type.dtype, b.type.shape);
    }
    for (size_t k = 0; k < run.outputs.size(); ++k) {
      const Bound& b = run.outputs[k];
      run.out_views[k] = TensorView(im.resolve(b.storage, inputs, outputs), b.type.dtype, b.type.shape);
    }
    Status st = run.delegate->execute(run.in_views, run.out_views);
    if (!st)
      return st.error().with_context("method '" + im.def.name + "': partition " + std::to_string(p) + " (backend '" +
                                     run.backend + "')");
  }
  for (const CopyOut& c : im.copies) {
    if (outputs[c.output].ptr == nullptr) continue;  // unwanted (check_bindings let null through only there)
    const void* src = im.resolve(c.src, inputs, outputs);
    if (src != outputs[c.output].ptr && c.nbytes) std::memmove(outputs[c.output].ptr, src, c.nbytes);
  }
  for (const auto& [o, i] : im.state_outputs)
    outputs[o] = TensorView(inputs[i].ptr, im.def.outputs[o].type.dtype, im.def.outputs[o].type.shape);
  return Ok{};
}

}  // namespace hfs
