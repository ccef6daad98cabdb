// linear (x [..., K] f32, weight [N, K], bias? [N] f32, scale? [N] f32) -> [..., N] f32
//   y[m, n] = sum_k x[m, k] * w_real[n, k] (+ bias[n])   — PyTorch's x @ W^T + b, accumulated in f32.
// Weight storage (see ops/weight_decode.h): f32 | f16 | bf16 (converted on the fly); i8 with a required
// per-output-channel `scale` (w_real = scale[n] * w[n, k]); q4_0 (K % 32 == 0, scales inside the blocks,
// no `scale` operand). q8_0 is not accepted here.
#include <vector>

#include "ops/op_util.h"
#include "ops/weight_decode.h"

namespace hfs {
namespace {

constexpr DType kWeightTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kQ4_0};

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("linear", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_ASSIGN_OR_RETURN(auto w, ops::required(in, 1, "weight"));
  HFS_TRY(ops::expect_dtype(*x, 0, "x", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*x, 0, "x", {{"..."}, {"K"}}));
  const int rank = x->shape.rank();
  const int64_t k = x->shape[rank - 1];
  HFS_TRY(ops::expect_dtype(*w, 1, "weight", kWeightTypes));
  HFS_TRY(ops::expect_layout(*w, 1, "weight", {{"N"}, {"K", k}}));
  const int64_t n = w->shape[0];
  const bool quant_i8 = w->dtype == DType::kI8;
  if (w->dtype == DType::kQ4_0 && k % quant::kQBlock != 0)
    return ops::shape_error(1, "weight", "[N, K] with K a multiple of 32 (q4_0 blocks)", *w);
  if (const TensorType* b = ops::operand(in, 2)) {
    HFS_TRY(ops::expect_dtype(*b, 2, "bias", ops::kF32Only));
    HFS_TRY(ops::expect_layout(*b, 2, "bias", {{"N", n}}));
  }
  const TensorType* s = ops::operand(in, 3);
  if (quant_i8 && !s)
    return make_error(ErrorCode::kInvalidArgument,
                      ops::operand_label(3, "scale") + ": required for an i8 weight (per-output-channel scale [N] f32)");
  if (!quant_i8 && s)
    return make_error(ErrorCode::kInvalidArgument, ops::operand_label(3, "scale") + ": only allowed with an i8 weight, got weight " +
                                                       w->to_string());
  if (s) {
    HFS_TRY(ops::expect_dtype(*s, 3, "scale", ops::kF32Only));
    HFS_TRY(ops::expect_layout(*s, 3, "scale", {{"N", n}}));
  }
  TensorType out = *x;
  out.shape[rank - 1] = n;
  return std::vector<TensorType>{out};
}

Status kernel(const KernelArgs& a) {
  const TensorView& xv = a.inputs[0];  // [..., K]
  const TensorView& w = a.inputs[1];   // [N, K]
  const TensorView* bias = ops::input(a, 2);
  const TensorView* scale = ops::input(a, 3);
  const int64_t k = w.shape[1], n_out = w.shape[0];
  const int64_t rows = ops::leading_rows(xv.shape);
  const float* x = xv.data<const float>();
  float* y = a.outputs[0].data<float>();  // [..., N]
  std::vector<float> wrow(static_cast<size_t>(k));
  for (int64_t n = 0; n < n_out; ++n) {
    ops::decode_weight_row(w, n, scale ? scale->data<const float>() : nullptr, wrow.data());
    const float b = bias ? bias->data<const float>()[n] : 0.0f;
    for (int64_t m = 0; m < rows; ++m) {
      const float* xr = x + m * k;
      float acc = 0.0f;
      for (int64_t i = 0; i < k; ++i) acc += xr[i] * wrow[static_cast<size_t>(i)];
      y[m * n_out + n] = bias ? acc + b : acc;
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "linear", .min_inputs = 2, .max_inputs = 4, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
