// Test-only ops ("test_rt.*") and a configurable test backend for the runtime tests.
//
// Ops (all f32, same shape in and out unless said):
//   test_rt.add(a, b) = a + b          test_rt.scale2(x) = 2x          test_rt.neg(x) = -x
//   test_rt.inplace_add(s, d): s += d, result is s's buffer (alias_input 0, in_place)
//   test_rt.view(x; shape) = x viewed with another shape (alias_input 0, not in place)
//   test_rt.noref(x) = x, registered without a reference kernel
// The aliasing kernels fail unless they were handed the input's own buffer: a runtime that copies
// instead of aliasing is caught by the kernel itself.
//
// Backends "test_rt_a" and "test_rt_b": settings {"claim": ["test_rt.scale2", ...]}. Their delegates own
// a buffer per value, run nodes with run_reference and return outputs in REVERSED order
// (output_order() = [n-1, ..., 0]). Each contributes one pass and records passes, partitioning and
// compilation in test_log(), and counts its delegates' executions in executions().
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "hfstatic/ext/backend.h"
#include "hfstatic/ext/ops.h"

namespace hfs::testing_rt {

inline Result<std::vector<TensorType>> same_as_first(std::span<const TensorType* const> in, const Attrs&) {
  if (in.empty() || !in[0]) return make_error(ErrorCode::kShapeMismatch, "missing operand 0");
  for (const TensorType* t : in)
    if (t && !(*t == *in[0]))
      return make_error(ErrorCode::kShapeMismatch, "expected " + in[0]->to_string() + ", got " + t->to_string());
  return std::vector<TensorType>{*in[0]};
}

inline Result<std::vector<TensorType>> view_rule(std::span<const TensorType* const> in, const Attrs& attrs) {
  std::vector<int64_t> dims = attr_ints(attrs, "shape");
  TensorType t{in[0]->dtype, Shape(std::span<const int64_t>(dims))};
  if (t.shape.numel() != in[0]->shape.numel())
    return make_error(ErrorCode::kShapeMismatch, "view: numel " + std::to_string(in[0]->shape.numel()) + " vs " +
                                                     t.shape.to_string());
  return std::vector<TensorType>{t};
}

inline Status add_kernel(const KernelArgs& a) {
  const float* x = a.inputs[0].data<float>();
  const float* y = a.inputs[1].data<float>();
  float* o = a.outputs[0].data<float>();
  for (int64_t i = 0; i < a.outputs[0].numel(); ++i) o[i] = x[i] + y[i];
  return Ok{};
}
inline Status scale2_kernel(const KernelArgs& a) {
  const float* x = a.inputs[0].data<float>();
  float* o = a.outputs[0].data<float>();
  for (int64_t i = 0; i < a.outputs[0].numel(); ++i) o[i] = 2.0f * x[i];
  return Ok{};
}
inline Status neg_kernel(const KernelArgs& a) {
  const float* x = a.inputs[0].data<float>();
  float* o = a.outputs[0].data<float>();
  for (int64_t i = 0; i < a.outputs[0].numel(); ++i) o[i] = -x[i];
  return Ok{};
}
inline Status inplace_add_kernel(const KernelArgs& a) {
  if (a.outputs[0].ptr != a.inputs[0].ptr)
    return make_error(ErrorCode::kExecution, "test_rt.inplace_add: output is not the state's buffer");
  float* s = a.outputs[0].data<float>();
  const float* d = a.inputs[1].data<float>();
  for (int64_t i = 0; i < a.outputs[0].numel(); ++i) s[i] += d[i];
  return Ok{};
}
inline Status view_kernel(const KernelArgs& a) {
  if (a.outputs[0].ptr != a.inputs[0].ptr)
    return make_error(ErrorCode::kExecution, "test_rt.view: output is not the input's buffer");
  return Ok{};
}

inline bool register_test_ops() {
  register_op({.name = "test_rt.add", .min_inputs = 2, .max_inputs = 2, .attrs = {}, .infer = &same_as_first, .reference = &add_kernel});
  register_op({.name = "test_rt.scale2", .attrs = {}, .infer = &same_as_first, .reference = &scale2_kernel});
  register_op({.name = "test_rt.neg", .attrs = {}, .infer = &same_as_first, .reference = &neg_kernel});
  register_op({.name = "test_rt.inplace_add", .min_inputs = 2, .max_inputs = 2, .attrs = {}, .infer = &same_as_first,
               .reference = &inplace_add_kernel, .alias_input = 0, .in_place = true});
  register_op({.name = "test_rt.view", .attrs = {{"shape", Value::Kind::kArray, true}}, .infer = &view_rule,
               .reference = &view_kernel, .alias_input = 0});
  register_op({.name = "test_rt.noref", .attrs = {}, .infer = &same_as_first, .reference = nullptr});
  return true;
}

inline std::vector<std::string>& test_log() {
  static std::vector<std::string> log;
  return log;
}

// How many times each test backend's delegates have executed (checks which partitions a method skips).
// Entries are made at compile and never erased (delegates keep pointers to them): reset them to 0.
inline std::map<std::string, int>& executions() {
  static std::map<std::string, int> n;
  return n;
}

// Settings each test backend factory last received (checks that options reach factories).
inline std::map<std::string, Value>& received_settings() {
  static std::map<std::string, Value> s;
  return s;
}

class ReversedDelegate final : public Delegate {
 public:
  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) override {
    if (inputs.size() != input_slots_.size() || outputs.size() != output_slots_.size())
      return make_error(ErrorCode::kBadBinding, "test delegate: wrong binding count");
    ++*executions_;
    for (size_t i = 0; i < inputs.size(); ++i) slot_views_[input_slots_[i]] = inputs[i];
    for (size_t k = 0; k < nodes_.size(); ++k) {
      for (size_t j = 0; j < node_in_[k].size(); ++j) args_in_[k][j] = slot_views_[node_in_[k][j]];
      for (size_t j = 0; j < node_out_[k].size(); ++j) args_out_[k][j] = slot_views_[node_out_[k][j]];
      HFS_TRY(run_reference(nodes_[k], args_in_[k], args_out_[k]));
    }
    // outputs[i] is subgraph output n-1-i.
    const size_t n = outputs.size();
    for (size_t i = 0; i < n; ++i) {
      const TensorView& src = slot_views_[output_slots_[n - 1 - i]];
      std::memcpy(outputs[i].ptr, src.ptr, src.nbytes());
    }
    return Ok{};
  }
  std::vector<int> output_order() const override {
    std::vector<int> o;
    for (size_t i = output_slots_.size(); i-- > 0;) o.push_back(static_cast<int>(i));
    return o;
  }

  int* executions_ = nullptr;  // this backend's entry of executions(), found at compile (execute never allocates)
  std::vector<NodeDef> nodes_;
  std::vector<std::vector<size_t>> node_in_, node_out_;
  std::vector<std::vector<TensorView>> args_in_, args_out_;
  std::vector<size_t> input_slots_, output_slots_;
  std::vector<TensorView> slot_views_;
  std::vector<std::vector<float>> storage_;
};

class TestBackend final : public Backend {
 public:
  TestBackend(std::string name, std::vector<std::string> claim) : name_(std::move(name)), claim_(std::move(claim)) {}
  std::string_view name() const override { return name_; }
  bool supports(const NodeDef& node, std::span<const TensorType* const>) const override {
    std::string entry = "supports:" + name_;
    if (test_log().empty() || test_log().back() != entry) test_log().push_back(entry);
    return std::find(claim_.begin(), claim_.end(), node.op) != claim_.end();
  }
  Result<std::unique_ptr<Delegate>> compile(const Subgraph& sg) override {
    test_log().push_back("compile:" + name_);
    auto d = std::make_unique<ReversedDelegate>();
    d->executions_ = &executions()[name_];
    std::map<std::string, size_t> slot;
    auto slot_of = [&](const std::string& v, const TensorType& t) {
      auto it = slot.find(v);
      if (it != slot.end()) return it->second;
      d->storage_.emplace_back(static_cast<size_t>(t.shape.numel()));
      d->slot_views_.emplace_back(static_cast<void*>(nullptr), t.dtype, t.shape);
      slot[v] = d->slot_views_.size() - 1;
      return d->slot_views_.size() - 1;
    };
    for (const IOSpec& in : sg.inputs) d->input_slots_.push_back(slot_of(in.name, in.type));
    for (const NodeDef& n : sg.nodes) {
      std::vector<size_t> ins, outs;
      for (const std::string& in : n.inputs) {
        auto it = slot.find(in);
        if (it == slot.end()) {
          const TensorView* c = sg.constants->find(in);
          if (!c) return make_error(ErrorCode::kUndefinedValue, "test backend: '" + in + "'");
          size_t s = slot_of(in, c->type());
          d->slot_views_[s].ptr = c->ptr;
          it = slot.find(in);
        }
        ins.push_back(it->second);
      }
      std::vector<TensorType> in_types;
      for (size_t s : ins) in_types.push_back(d->slot_views_[s].type());
      std::vector<const TensorType*> in_ptrs;
      for (const TensorType& t : in_types) in_ptrs.push_back(&t);
      HFS_ASSIGN_OR_RETURN(std::vector<TensorType> out_types, find_op(n.op)->infer(in_ptrs, n.attrs));
      for (size_t k = 0; k < n.outputs.size(); ++k) outs.push_back(slot_of(n.outputs[k], out_types[k]));
      d->nodes_.push_back(n);
      d->node_in_.push_back(ins);
      d->node_out_.push_back(outs);
      d->args_in_.emplace_back(ins.size());
      d->args_out_.emplace_back(outs.size());
    }
    for (size_t s = 0; s < d->storage_.size(); ++s)
      if (!d->slot_views_[s].ptr) d->slot_views_[s].ptr = d->storage_[s].data();
    for (const IOSpec& out : sg.outputs) d->output_slots_.push_back(slot.at(out.name));
    return std::unique_ptr<Delegate>(std::move(d));
  }
  std::vector<Pass> passes() const override {
    std::string n = name_;
    return {Pass{"record_" + n, [n](MethodDef&, ConstantStore&) -> Status {
                   test_log().push_back("pass:" + n);
                   return Ok{};
                 }}};
  }

 private:
  std::string name_;
  std::vector<std::string> claim_;
};

inline BackendFactory test_backend_factory(std::string name) {
  return [name](const Value& settings) -> Result<std::unique_ptr<Backend>> {
    received_settings()[name] = settings;
    std::vector<std::string> claim;
    if (const Value* c = settings.get("claim"))
      for (const Value& v : c->as_array()) claim.push_back(v.as_string());
    if (settings.get("fail")) return make_error(ErrorCode::kInvalidArgument, "test backend: asked to fail");
    return std::unique_ptr<Backend>(std::make_unique<TestBackend>(name, std::move(claim)));
  };
}

inline const bool kTestRuntimeRegistered = register_test_ops() &&
                                           register_backend("test_rt_a", test_backend_factory("test_rt_a")) &&
                                           register_backend("test_rt_b", test_backend_factory("test_rt_b"));

// I/O spec shorthands (IOSpec has four fields; spelling them all keeps -Wextra quiet).
inline IOSpec in_spec(std::string name, TensorType t, IORole role = IORole::kInput) {
  return IOSpec{std::move(name), t, role, {}};
}
inline IOSpec out_spec(std::string name, TensorType t) { return IOSpec{std::move(name), t, IORole::kOutput, {}}; }
inline IOSpec state_out(std::string name, TensorType t, std::string input) {
  return IOSpec{std::move(name), t, IORole::kState, std::move(input)};
}
inline TensorType f32(std::initializer_list<int64_t> dims) { return {DType::kF32, Shape(dims)}; }

// Settings that make a test backend claim `ops`.
inline Value claim(std::initializer_list<const char*> ops) {
  Value s = Value::object();
  Value a = Value::array();
  for (const char* op : ops) a.push_back(Value(op));
  s.set("claim", a);
  return s;
}

}  // namespace hfs::testing_rt
