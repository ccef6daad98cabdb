// Resolve: a subgraph's nodes into the delegate's steps and values, and its outputs onto those values
// (compile_steps.h). Everything later works on value ids and steps, never on names.
#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu_fast/compile_steps.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/ext/ops.h"

namespace hfs::cpu_fast {
namespace {

std::string label(size_t i, const NodeDef& n) {
  return "node " + std::to_string(i) + " (" + n.op + (n.outputs.empty() ? "" : " '" + n.outputs[0] + "'") + ")";
}

// Output types for the ops this backend runs (the verifier already checked the program; these only
// need to be right for valid graphs, and reject what the kernels cannot do).
Result<TensorType> out_type(Op op, const NodeDef& node, const std::vector<const TensorType*>& in) {
  auto need = [&](size_t i) -> Status {
    if (i >= in.size() || in[i] == nullptr)
      return make_error(ErrorCode::kInvalidArgument, "operand " + std::to_string(i) + " missing");
    return Ok{};
  };
  HFS_TRY(need(0));
  switch (op) {
    case Op::kLinear: {
      HFS_TRY(need(1));
      TensorType t{DType::kF32, in[0]->shape};
      t.shape[t.shape.rank() - 1] = in[1]->shape[0];
      return t;
    }
    case Op::kEmbedding: {
      HFS_TRY(need(1));
      std::vector<int64_t> dims = in[1]->shape.to_vector();
      dims.push_back(in[0]->shape[1]);
      return TensorType{DType::kF32, Shape(std::span<const int64_t>(dims))};
    }
    case Op::kReshape: {
      std::vector<int64_t> dims = attr_ints(node.attrs, "shape");
      int64_t known = 1, neg = -1;
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == -1)
          neg = static_cast<int64_t>(i);
        else
          known *= dims[i];
      }
      if (neg >= 0 && known > 0) dims[static_cast<size_t>(neg)] = in[0]->shape.numel() / known;
      if (dims.size() > static_cast<size_t>(kMaxRank))
        return make_error(ErrorCode::kShapeMismatch, "reshape to rank " + std::to_string(dims.size()));
      TensorType t{in[0]->dtype, Shape(std::span<const int64_t>(dims))};
      if (t.shape.numel() != in[0]->shape.numel())
        return make_error(ErrorCode::kShapeMismatch, "reshape " + in[0]->to_string() + " to " + t.shape.to_string());
      return t;
    }
    default:
      return *in[0];
  }
}

int add_val(CompileState& c, Val v) {
  c.ids[v.name] = static_cast<int>(c.d.vals.size());
  c.d.vals.push_back(std::move(v));
  return static_cast<int>(c.d.vals.size()) - 1;
}

// The value `name` names: a subgraph input, a value defined earlier, or a constant (added on first use).
Result<int> lookup(CompileState& c, const std::string& name, const std::string& where) {
  if (auto it = c.ids.find(name); it != c.ids.end()) return it->second;
  const TensorView* cv = c.sg.constants ? c.sg.constants->find(name) : nullptr;
  if (cv == nullptr)
    return make_error(ErrorCode::kUndefinedValue, "cpu_fast: " + where + ": value '" + name +
                                                      "' is neither a subgraph input, a constant nor defined earlier");
  Val v;
  v.name = name;
  v.type = cv->type();
  v.kind = Val::kConst;
  v.ptr = cv->ptr;
  return add_val(c, std::move(v));
}

// The attributes (and for attention its live-slot list, for linear its packed weight) a step runs with.
Status set_operands(CompileState& c, const NodeDef& node, Step& s) {
  FastDelegate& d = c.d;
  switch (s.op) {
    case Op::kRmsNorm:
      s.f0 = static_cast<float>(attr_float(node.attrs, "eps", 1e-6));
      s.flag = attr_bool(node.attrs, "unit_offset", false);
      break;
    case Op::kScale: s.f0 = static_cast<float>(attr_float(node.attrs, "value", 1.0)); break;
    case Op::kSoftcap: s.f0 = static_cast<float>(attr_float(node.attrs, "cap", 1.0)); break;
    case Op::kRope: s.f0 = static_cast<float>(attr_float(node.attrs, "attention_scaling", 1.0)); break;
    case Op::kAttention: {
      s.f0 = static_cast<float>(attr_float(node.attrs, "scale", 1.0));
      s.f1 = static_cast<float>(attr_float(node.attrs, "softcap", 0.0));
      // Attention steps that share a mask share its live-slot lists (scanned once per execute).
      const int mask = s.in[3];
      auto lm = std::find(d.live_mask_value.begin(), d.live_mask_value.end(), mask);
      if (lm == d.live_mask_value.end()) {
        const int64_t t = d.vals[static_cast<size_t>(s.in[0])].type.shape[1];
        const int64_t slots = d.vals[static_cast<size_t>(s.in[1])].type.shape[2];
        try {
          d.live_lists.emplace_back(t, slots);
        } catch (const std::bad_alloc&) {
          return make_error(ErrorCode::kResourceExhausted, "cpu_fast: " + s.label + ": cannot allocate the live-slot lists of a [" +
                                                               std::to_string(t) + ", " + std::to_string(slots) + "] mask");
        }
        d.live_mask_value.push_back(mask);
        lm = d.live_mask_value.end() - 1;
      }
      s.live = static_cast<int>(lm - d.live_mask_value.begin());
      break;
    }
    case Op::kLinear: return pack_linear_weight(c, s);
    case Op::kMoe: return pack_moe_experts(c, node, s);
    default: break;
  }
  return Ok{};
}

// Node ni as a step: its operands resolved, its output a new value (a view of its root for reshape and
// the cache a kv_cache_write updates in place).
Status resolve_node(CompileState& c, size_t ni) {
  FastDelegate& d = c.d;
  const NodeDef& node = c.sg.nodes[ni];
  const std::string where = label(ni, node);
  auto it = op_table().find(node.op);
  if (it == op_table().end() || node.outputs.size() != 1)
    return make_error(ErrorCode::kUnsupported, "cpu_fast: " + where + ": op not supported by this backend");
  Step s;
  s.op = it->second;
  s.label = where;
  std::vector<const TensorType*> types;
  for (const std::string& name : node.inputs) {
    if (name.empty()) {
      s.in.push_back(-1);
      types.push_back(nullptr);
      continue;
    }
    HFS_ASSIGN_OR_RETURN(int id, lookup(c, name, where));
    s.in.push_back(id);
    types.push_back(&d.vals[static_cast<size_t>(id)].type);
  }
  if (!supports_node(node, types))
    return make_error(ErrorCode::kUnsupported, "cpu_fast: " + where + ": operand types not supported");
  HFS_ASSIGN_OR_RETURN_CTX(TensorType ot, out_type(s.op, node, types), "cpu_fast: " + where);
  Val out;
  out.name = node.outputs[0];
  out.type = std::move(ot);
  out.def = static_cast<int>(d.steps.size());
  if (s.op == Op::kReshape || s.op == Op::kKvWrite || s.op == Op::kKvScale) {
    out.kind = Val::kAlias;
    int root = s.in[0];
    while (d.vals[static_cast<size_t>(root)].kind == Val::kAlias) root = d.vals[static_cast<size_t>(root)].root;
    out.root = root;
  }
  if (c.ids.count(out.name))
    return make_error(ErrorCode::kValueRedefined, "cpu_fast: " + where + ": value '" + out.name + "' defined twice");
  s.out = add_val(c, std::move(out));
  HFS_TRY(set_operands(c, node, s));
  d.steps.push_back(std::move(s));
  return Ok{};
}

}  // namespace

bool supports_node(const NodeDef& node, std::span<const TensorType* const> types) {
  auto it = op_table().find(node.op);
  if (it == op_table().end()) return false;
  auto in = [&](size_t i) -> const TensorType* { return i < types.size() ? types[i] : nullptr; };
  auto is = [&](size_t i, DType d) { return in(i) != nullptr && in(i)->dtype == d; };
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] != nullptr && types[i]->shape.rank() == 0 && node.op != "reshape") return false;
  switch (it->second) {
    case Op::kLinear: {
      if (!is(0, DType::kF32) || in(1) == nullptr || in(1)->shape.rank() != 2) return false;
      if (in(2) != nullptr && !is(2, DType::kF32)) return false;
      const DType w = in(1)->dtype;
      if (w == DType::kI8) return is(3, DType::kF32);
      if (types.size() > 3 && in(3) != nullptr) return false;
      if (w == DType::kQ8_0 || w == DType::kQ4_0) return in(1)->shape[1] % 32 == 0;
      return is_float_weight(w);
    }
    case Op::kAttention:
      if (!(is(0, DType::kF32) && in(1) && is(2, in(1)->dtype) && is(3, DType::kF32) && in(0)->shape.rank() == 4 &&
            in(1)->shape.rank() == 4))
        return false;
      // int8 caches (contract minor 1) with their row scales; f32/f16 without.
      if (in(1)->dtype == DType::kI8) return is(4, DType::kF32) && is(5, DType::kF32);
      return is_kv(in(1)->dtype) && in(4) == nullptr && in(5) == nullptr;
    case Op::kRope: return is(0, DType::kF32) && is(1, DType::kI32) && is(2, DType::kF32) && in(0)->shape.rank() == 4;
    case Op::kEmbedding:
      return in(0) && in(0)->shape.rank() == 2 && is(1, DType::kI32) &&
             (is_float_weight(in(0)->dtype) ? in(2) == nullptr : in(0)->dtype == DType::kI8 && is(2, DType::kF32));
    case Op::kKvWrite:
      if (!(in(0) && in(0)->shape.rank() == 4 && is(1, DType::kF32) && is(2, DType::kI32))) return false;
      if (in(0)->dtype == DType::kI8) return is(3, DType::kF32);  // int8 rows quantized with their scales
      return is_kv(in(0)->dtype) && in(3) == nullptr;
    case Op::kKvScale:
      return is(0, DType::kF32) && in(0)->shape.rank() == 3 && is(1, DType::kF32) && in(1)->shape.rank() == 4 &&
             is(2, DType::kI32);
    case Op::kReshape: return in(0) != nullptr;
    case Op::kMoe: {
      if (!is(0, DType::kF32) || !is(1, DType::kF32)) return false;
      for (size_t w = 2; w <= 4; ++w) {
        const TensorType* t = in(w);
        if (t == nullptr || t->shape.rank() != 3) return false;
        const TensorType* scale = in(w + 3);
        if (t->dtype == DType::kI8) {
          if (!is(w + 3, DType::kF32)) return false;
        } else if (scale != nullptr || !(is_float_weight(t->dtype) || (t->dtype == DType::kQ4_0 && t->shape[2] % 32 == 0))) {
          return false;
        }
      }
      return true;
    }
    default:
      for (size_t i = 0; i < types.size(); ++i)
        if (types[i] != nullptr && types[i]->dtype != DType::kF32) return false;
      return in(0) != nullptr;
  }
}

Status resolve_steps(CompileState& c) {
  FastDelegate& d = c.d;
  d.n_inputs = c.sg.inputs.size();
  d.n_outputs = c.sg.outputs.size();
  // Steps hold pointers to value types while later values are added: reserve so vals never moves.
  size_t max_vals = c.sg.inputs.size();
  for (const NodeDef& n : c.sg.nodes) max_vals += n.inputs.size() + n.outputs.size();
  d.vals.reserve(max_vals);
  for (size_t i = 0; i < c.sg.inputs.size(); ++i) {
    Val v;
    v.name = c.sg.inputs[i].name;
    v.type = c.sg.inputs[i].type;
    v.kind = Val::kInput;
    v.input = static_cast<int>(i);
    add_val(c, std::move(v));
  }
  for (size_t ni = 0; ni < c.sg.nodes.size(); ++ni) HFS_TRY(resolve_node(c, ni));
  return Ok{};
}

// An output that is an arena value is written straight into the caller's buffer; one that is an input,
// a constant, a view or already another output is copied there after the steps.
Status bind_outputs(CompileState& c) {
  FastDelegate& d = c.d;
  for (size_t o = 0; o < c.sg.outputs.size(); ++o) {
    auto it = c.ids.find(c.sg.outputs[o].name);
    if (it == c.ids.end())
      return make_error(ErrorCode::kOutputNotProduced, "cpu_fast: subgraph output '" + c.sg.outputs[o].name +
                                                           "' is not produced by the subgraph");
    Val& v = d.vals[static_cast<size_t>(it->second)];
    if (v.kind == Val::kArena && v.output < 0)
      v.output = static_cast<int>(o);
    else
      d.output_copies.emplace_back(it->second, static_cast<int>(o));
  }
  return Ok{};
}

}  // namespace hfs::cpu_fast
