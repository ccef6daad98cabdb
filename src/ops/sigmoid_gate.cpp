// sigmoid_gate (x [..., D] f32, gate [..., 1] f32) -> [..., D] f32
//   y[r, d] = sigmoid(gate[r]) * x[r, d],  sigmoid(g) = 1 / (1 + exp(-g)) in f32
// The Qwen2-MoE shared expert's gate: F.sigmoid(shared_expert_gate(h)) * shared_expert(h), one scalar per row
// broadcast over the row (mul needs equal shapes).
#include <cmath>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("sigmoid_gate", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_ASSIGN_OR_RETURN(auto g, ops::required(in, 1, "gate"));
  HFS_TRY(ops::expect_dtype(*x, 0, "x", ops::kF32Only));
  HFS_TRY(ops::expect_dtype(*g, 1, "gate", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*x, 0, "x", {{"..."}, {"D"}}));
  Shape want = x->shape;
  want[want.rank() - 1] = 1;
  if (g->shape != want) return ops::shape_error(1, "gate", "[..., 1] with the leading dims of operand 0 (x) " + x->shape.to_string(), *g);
  return std::vector<TensorType>{*x};
}

Status kernel(const KernelArgs& a) {
  const TensorView& xv = a.inputs[0];
  const int64_t d = xv.shape[xv.shape.rank() - 1];
  const int64_t rows = ops::leading_rows(xv.shape);
  const float* x = xv.data<const float>();
  const float* g = a.inputs[1].data<const float>();
  float* y = a.outputs[0].data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float s = 1.0f / (1.0f + std::exp(-g[r]));
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = s * x[r * d + i];
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "sigmoid_gate", .min_inputs = 2, .max_inputs = 2, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
