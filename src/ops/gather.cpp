// gather (x, index [n] i32; axis: int) -> x with dim `axis` replaced by n: out[..., i, ...] = x[..., index[i], ...]
// (torch.index_select). axis may be negative. Indices are data: one outside [0, x.shape[axis]) is a
// run-time kOutOfRange error (no negative wrap-around). Any plain (non-block) dtype for x.
#include <cstring>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("gather", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_ASSIGN_OR_RETURN(auto index, ops::required(in, 1, "index"));
  HFS_TRY(ops::expect_plain_dtype(*x, 0, "x"));
  HFS_TRY(ops::expect_dtype(*index, 1, "index", ops::kI32Only));
  HFS_TRY(ops::expect_layout(*index, 1, "index", {{"n"}}));
  HFS_ASSIGN_OR_RETURN(auto axis, ops::normalize_axis(attr_int(attrs, "axis"), x->shape.rank()));
  TensorType out = *x;
  out.shape[axis] = index->shape[0];
  return std::vector<TensorType>{out};
}

Status kernel(const KernelArgs& a) {
  const TensorView& x = a.inputs[0];
  const int rank = x.shape.rank();
  const int64_t raw_axis = attr_int(a.attrs, "axis");
  const int axis = static_cast<int>(raw_axis < 0 ? raw_axis + rank : raw_axis);
  const int32_t* index = a.inputs[1].data<const int32_t>();
  const int64_t n = a.inputs[1].shape[0], dim = x.shape[axis];
  for (int64_t i = 0; i < n; ++i)
    if (index[i] < 0 || index[i] >= dim)
      return make_error(ErrorCode::kOutOfRange, "gather: index[" + std::to_string(i) + "] = " + std::to_string(index[i]) +
                                                    " is outside [0, " + std::to_string(dim) + ") (dim " +
                                                    std::to_string(axis) + " of " + x.type().to_string() + ")");
  // View x as [outer, dim, inner] and copy one inner row per (outer, i).
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape[i];
  for (int i = axis + 1; i < rank; ++i) inner *= x.shape[i];
  const size_t row = static_cast<size_t>(inner) * ops::elem_bytes(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.ptr);
  auto* dst = static_cast<uint8_t*>(a.outputs[0].ptr);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + static_cast<size_t>(o * n + i) * row, src + static_cast<size_t>(o * dim + index[i]) * row, row);
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "gather", .min_inputs = 2, .max_inputs = 2, .num_outputs = 1,
    .attrs = {{"axis", Value::Kind::kInt, true}}, .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
