// slice (x; axis: int, start: int, end: int) -> copy of x[..., start:end, ...] along `axis`.
// axis may be negative (counted from the end); 0 <= start <= end <= x.shape[axis] is checked by the rule
// (no negative or clamped bounds: the exporter writes exact ones). Any plain (non-block) dtype.
#include <cstring>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("slice", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_TRY(ops::expect_plain_dtype(*x, 0, "x"));
  HFS_ASSIGN_OR_RETURN(auto axis, ops::normalize_axis(attr_int(attrs, "axis"), x->shape.rank()));
  const int64_t start = attr_int(attrs, "start"), end = attr_int(attrs, "end");
  const int64_t dim = x->shape[axis];
  if (start < 0 || start > end || end > dim)
    return ops::attr_error("start/end", "expected 0 <= start <= end <= " + std::to_string(dim) + " (dim " +
                                            std::to_string(axis) + " of operand 0 (x) " + x->to_string() +
                                            "), got start = " + std::to_string(start) + ", end = " + std::to_string(end));
  TensorType out = *x;
  out.shape[axis] = end - start;
  return std::vector<TensorType>{out};
}

Status kernel(const KernelArgs& a) {
  const TensorView& x = a.inputs[0];
  const int rank = x.shape.rank();
  const int64_t raw_axis = attr_int(a.attrs, "axis");
  const int axis = static_cast<int>(raw_axis < 0 ? raw_axis + rank : raw_axis);
  const int64_t start = attr_int(a.attrs, "start"), end = attr_int(a.attrs, "end");
  // View x as [outer, dim, inner]: copy rows of (end - start) * inner elements from each outer block.
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape[i];
  for (int i = axis + 1; i < rank; ++i) inner *= x.shape[i];
  const size_t esize = ops::elem_bytes(x.dtype);
  const size_t row = static_cast<size_t>((end - start) * inner) * esize;
  const auto* src = static_cast<const uint8_t*>(x.ptr);
  auto* dst = static_cast<uint8_t*>(a.outputs[0].ptr);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * row,
                src + static_cast<size_t>((o * x.shape[axis] + start) * inner) * esize, row);
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "slice", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
    .attrs = {{"axis", Value::Kind::kInt, true}, {"start", Value::Kind::kInt, true}, {"end", Value::Kind::kInt, true}},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
