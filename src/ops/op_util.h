// ops/op_util.h — the pieces every op rule and reference kernel shares: operand lookup, shape/dtype
// checks with uniform messages, attribute validation, and element load/store for float storage types.
//
// A rule reads like its op's signature:
//
//   HFS_TRY(ops::expect_layout(*w, 1, "weight", {{"N"}, {"K", k}}));   // [N, K] with K = k
//   HFS_TRY(ops::expect_dtype(*w, 1, "weight", ops::kWeightFloat));
//
// and failures read "operand 1 (weight): expected [N, K] with K = 64, got f32[32, 48]"; the verifier
// prefixes the method and node.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/half.h"
#include "hfstatic/ext/ops.h"

namespace hfs::ops {

using Operands = std::span<const TensorType* const>;
using TypeList = std::span<const DType>;

inline constexpr DType kF32Only[] = {DType::kF32};
inline constexpr DType kI32Only[] = {DType::kI32};
inline constexpr DType kWeightFloat[] = {DType::kF32, DType::kF16, DType::kBF16};  // "w" in ops.h

// ---- messages ----

inline std::string operand_label(int index, std::string_view name) {
  return "operand " + std::to_string(index) + " (" + std::string(name) + ")";
}

inline std::string dtype_list(TypeList types) {
  std::string s;
  for (DType t : types) {
    if (!s.empty()) s += '|';
    s += dtype_name(t);
  }
  return s;
}

inline Error shape_error(int index, std::string_view name, std::string_view expected, const TensorType& got) {
  return make_error(ErrorCode::kShapeMismatch,
                    operand_label(index, name) + ": expected " + std::string(expected) + ", got " + got.to_string());
}

inline Error attr_error(std::string_view attr, std::string_view problem) {
  return make_error(ErrorCode::kBadAttribute, "attribute '" + std::string(attr) + "': " + std::string(problem));
}

// ---- rule checks ----

// Operand `index` if present (absent optional operands are nullptr, as is anything past the end).
inline const TensorType* operand(Operands in, int index) {
  return index < static_cast<int>(in.size()) ? in[static_cast<size_t>(index)] : nullptr;
}

[[nodiscard]] inline Result<const TensorType*> required(Operands in, int index, std::string_view name) {
  const TensorType* t = operand(in, index);
  if (!t)
    return make_error(ErrorCode::kInvalidArgument, operand_label(index, name) + ": required operand is absent");
  return t;
}

[[nodiscard]] inline Status expect_dtype(const TensorType& t, int index, std::string_view name, TypeList allowed) {
  for (DType d : allowed)
    if (t.dtype == d) return Ok{};
  return make_error(ErrorCode::kDTypeMismatch,
                    operand_label(index, name) + ": expected dtype " + dtype_list(allowed) + ", got " + t.to_string());
}

// One dimension of an expected layout. `size` < 0 means any size. A name starting with a digit is a
// literal ("1") and is constrained to that value; the name "..." (first entry only) matches any number of
// leading dimensions.
struct Dim {
  std::string_view name;
  int64_t size = -1;
};

// Checks rank and the constrained dims; the message spells the layout, e.g. "[..., D] with D = 64".
[[nodiscard]] inline Status expect_layout(const TensorType& t, int index, std::string_view name,
                                          std::initializer_list<Dim> dims) {
  std::vector<Dim> d(dims);
  const bool leading_any = !d.empty() && d.front().name == "...";
  for (Dim& x : d)
    if (!x.name.empty() && x.name[0] >= '0' && x.name[0] <= '9') x.size = std::stoll(std::string(x.name));
  std::string layout = "[", with;
  for (size_t i = 0; i < d.size(); ++i) {
    layout += (i ? ", " : "") + std::string(d[i].name);
    const bool literal = !d[i].name.empty() && d[i].name[0] >= '0' && d[i].name[0] <= '9';
    if (d[i].size >= 0 && !literal)
      with += (with.empty() ? " with " : ", ") + std::string(d[i].name) + " = " + std::to_string(d[i].size);
  }
  layout += "]" + with;

  const int fixed = static_cast<int>(d.size()) - (leading_any ? 1 : 0);
  const int rank = t.shape.rank();
  if (leading_any ? rank < fixed : rank != fixed) return shape_error(index, name, layout, t);
  const int offset = rank - fixed;  // first shape index matched by the first fixed dim
  for (int i = 0; i < fixed; ++i) {
    const Dim& want = d[static_cast<size_t>(i + (leading_any ? 1 : 0))];
    if (want.size >= 0 && t.shape[offset + i] != want.size) return shape_error(index, name, layout, t);
  }
  return Ok{};
}

// Runs check_attrs for `op` so each rule is safe to call on its own (the verifier checks attrs too).
[[nodiscard]] inline Status check_op_attrs(std::string_view op, const Attrs& attrs) {
  const OpSchema* s = find_op(op);
  if (!s) return make_error(ErrorCode::kUnknownOp, "op '" + std::string(op) + "' is not registered");
  return check_attrs(*s, attrs);
}

[[nodiscard]] inline Status expect_finite_attr(const Attrs& attrs, std::string_view name, double def) {
  const double v = attr_float(attrs, name, def);
  if (!std::isfinite(v)) return attr_error(name, "expected a finite number, got " + std::to_string(v));
  return Ok{};
}

// Normalizes a possibly negative axis against `rank`.
[[nodiscard]] inline Result<int> normalize_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    return attr_error("axis", "expected an axis in [" + std::to_string(-rank) + ", " + std::to_string(rank) +
                                  ") for a rank-" + std::to_string(rank) + " operand, got " + std::to_string(axis));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Ops that move elements by bytes (transpose, slice, gather) need one whole element per value.
[[nodiscard]] inline Status expect_plain_dtype(const TensorType& t, int index, std::string_view name) {
  if (dtype_info(t.dtype).block_elems == 1) return Ok{};
  return make_error(ErrorCode::kDTypeMismatch, operand_label(index, name) +
                                                   ": expected a non-block-quantized dtype, got " + t.to_string());
}

using Inferred = Result<std::vector<TensorType>>;

// ---- kernels ----

// Input `index` of a kernel call, or nullptr when absent (ptr == nullptr or past the end).
inline const TensorView* input(const KernelArgs& a, int index) {
  if (index >= static_cast<int>(a.inputs.size())) return nullptr;
  const TensorView& v = a.inputs[static_cast<size_t>(index)];
  return v.ptr ? &v : nullptr;
}

// Number of rows of a [..., D] tensor: the product of all dims but the last.
inline int64_t leading_rows(const Shape& s) {
  int64_t n = 1;
  for (int i = 0; i + 1 < s.rank(); ++i) n *= s[i];
  return n;
}

inline size_t elem_bytes(DType t) { return dtype_info(t).block_bytes; }  // plain dtypes only

// Element i of float storage (f32|f16|bf16) as f32.
inline float load_float(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

// Stores v into element i of float storage (f32|f16|bf16), rounding to nearest even.
inline void store_float(void* base, DType t, int64_t i, float v) {
  switch (t) {
    case DType::kF16: static_cast<uint16_t*>(base)[i] = f32_to_f16(v); break;
    case DType::kBF16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(v); break;
    default: static_cast<float*>(base)[i] = v; break;
  }
}

// Elementwise f32 kernel body shared by the unary ops: out[i] = fn(x[i]).
template <typename Fn>
Status unary_f32(const KernelArgs& a, Fn fn) {
  const float* x = a.inputs[0].data<const float>();
  float* y = a.outputs[0].data<float>();
  const int64_t n = a.inputs[0].numel();
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
  return Ok{};
}

template <typename Fn>
Status binary_f32(const KernelArgs& a, Fn fn) {
  const float* x = a.inputs[0].data<const float>();
  const float* z = a.inputs[1].data<const float>();
  float* y = a.outputs[0].data<float>();
  const int64_t n = a.inputs[0].numel();
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i], z[i]);
  return Ok{};
}

// Rule of the elementwise unary ops: x f32 of any shape -> same.
inline Inferred infer_unary_f32(Operands in) {
  HFS_ASSIGN_OR_RETURN(auto x, required(in, 0, "x"));
  HFS_TRY(expect_dtype(*x, 0, "x", kF32Only));
  return std::vector<TensorType>{*x};
}

// Rule of the elementwise binary ops: a, b f32 of the same shape -> same.
inline Inferred infer_binary_f32(Operands in) {
  HFS_ASSIGN_OR_RETURN(auto a, required(in, 0, "a"));
  HFS_ASSIGN_OR_RETURN(auto b, required(in, 1, "b"));
  HFS_TRY(expect_dtype(*a, 0, "a", kF32Only));
  HFS_TRY(expect_dtype(*b, 1, "b", kF32Only));
  if (b->shape != a->shape)
    return shape_error(1, "b", "the shape of operand 0 (a) " + a->shape.to_string(), *b);
  return std::vector<TensorType>{*a};
}

}  // namespace hfs::ops
