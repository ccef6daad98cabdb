// rms_norm (x [..., D] f32, weight [D] f32; eps: float, unit_offset: bool = false) -> [..., D] f32
//   y = (x * (1 / sqrt(mean(x²) + eps))) * (unit_offset ? 1 + w : w)
// in f32 in that order, matching HF LlamaRMSNorm (weight * (x * rsqrt(var + eps))) and, with unit_offset,
// GemmaRMSNorm (x * rsqrt(...) * (1 + w)). Normalizes each length-D row, so it also serves per-head norms.
#include <cmath>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("rms_norm", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_ASSIGN_OR_RETURN(auto w, ops::required(in, 1, "weight"));
  HFS_TRY(ops::expect_dtype(*x, 0, "x", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*x, 0, "x", {{"..."}, {"D"}}));
  const int64_t d = x->shape[x->shape.rank() - 1];
  HFS_TRY(ops::expect_dtype(*w, 1, "weight", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*w, 1, "weight", {{"D", d}}));
  const double eps = attr_float(attrs, "eps");
  if (!(eps >= 0.0) || !std::isfinite(eps))
    return ops::attr_error("eps", "expected a finite number >= 0, got " + std::to_string(eps));
  return std::vector<TensorType>{*x};
}

Status kernel(const KernelArgs& a) {
  const TensorView& xv = a.inputs[0];
  const int64_t d = xv.shape[xv.shape.rank() - 1];
  const int64_t rows = ops::leading_rows(xv.shape);
  const float eps = static_cast<float>(attr_float(a.attrs, "eps"));
  const bool unit_offset = attr_bool(a.attrs, "unit_offset");
  const float* x = xv.data<const float>();
  const float* w = a.inputs[1].data<const float>();
  float* y = a.outputs[0].data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    float sum_sq = 0.0f;
    for (int64_t i = 0; i < d; ++i) sum_sq += xr[i] * xr[i];
    const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(d) + eps);
    for (int64_t i = 0; i < d; ++i) {
      const float gain = unit_offset ? 1.0f + w[i] : w[i];
      y[r * d + i] = (xr[i] * inv_rms) * gain;
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "rms_norm", .min_inputs = 2, .max_inputs = 2, .num_outputs = 1,
    .attrs = {{"eps", Value::Kind::kFloat, true}, {"unit_offset", Value::Kind::kBool, false}},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
