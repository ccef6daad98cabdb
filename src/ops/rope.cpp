// rope (x [1, T, H, D] f32, positions [1, T] i32, inv_freq [R/2] f32; attention_scaling: float = 1)
//   -> [1, T, H, D] f32
// HF rotary embedding in the rotate_half layout, on the first R = 2 * len(inv_freq) dims (R ≤ D; the rest
// pass through — partial rotary). With h = R/2, for each token t:
//   freq[j] = float(positions[t]) * inv_freq[j]           (f32, as HF's f32 matmul with inner dim 1)
//   emb = cat(freq, freq); cos = cos(emb) * attention_scaling; sin = sin(emb) * attention_scaling
//   out[i] = x[i] * cos[i] + rot[i] * sin[i],  rot[i] = -x[i + h] (i < h), x[i - h] (h ≤ i < R)
#include <cmath>
#include <vector>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("rope", attrs));
  HFS_TRY(ops::expect_finite_attr(attrs, "attention_scaling", 1.0));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_ASSIGN_OR_RETURN(auto pos, ops::required(in, 1, "positions"));
  HFS_ASSIGN_OR_RETURN(auto inv, ops::required(in, 2, "inv_freq"));
  HFS_TRY(ops::expect_dtype(*x, 0, "x", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*x, 0, "x", {{"1"}, {"T"}, {"H"}, {"D"}}));
  const int64_t t = x->shape[1], d = x->shape[3];
  HFS_TRY(ops::expect_dtype(*pos, 1, "positions", ops::kI32Only));
  HFS_TRY(ops::expect_layout(*pos, 1, "positions", {{"1"}, {"T", t}}));
  HFS_TRY(ops::expect_dtype(*inv, 2, "inv_freq", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*inv, 2, "inv_freq", {{"R/2"}}));
  if (2 * inv->shape[0] > d)
    return ops::shape_error(2, "inv_freq", "[R/2] with R <= D = " + std::to_string(d) + " (head dim of operand 0)",
                            *inv);
  return std::vector<TensorType>{*x};
}

Status kernel(const KernelArgs& a) {
  const TensorView& xv = a.inputs[0];  // [1, T, H, D]
  const int64_t t_len = xv.shape[1], heads = xv.shape[2], d = xv.shape[3];
  const int64_t half = a.inputs[2].shape[0];  // R / 2
  const int32_t* pos = a.inputs[1].data<const int32_t>();
  const float* inv_freq = a.inputs[2].data<const float>();
  const float scaling = static_cast<float>(attr_float(a.attrs, "attention_scaling", 1.0));
  const float* x = xv.data<const float>();
  float* y = a.outputs[0].data<float>();
  std::vector<float> cos_h(static_cast<size_t>(half)), sin_h(static_cast<size_t>(half));
  for (int64_t t = 0; t < t_len; ++t) {
    // emb = cat(freq, freq), so cos/sin of dims i and i + h are equal: keep one half.
    for (int64_t j = 0; j < half; ++j) {
      const float freq = static_cast<float>(pos[t]) * inv_freq[j];
      cos_h[static_cast<size_t>(j)] = std::cos(freq) * scaling;
      sin_h[static_cast<size_t>(j)] = std::sin(freq) * scaling;
    }
    for (int64_t h = 0; h < heads; ++h) {
      const float* xr = x + (t * heads + h) * d;
      float* yr = y + (t * heads + h) * d;
      for (int64_t j = 0; j < half; ++j) {
        const float c = cos_h[static_cast<size_t>(j)], s = sin_h[static_cast<size_t>(j)];
        const float lo = xr[j], hi = xr[j + half];
        const float lo_cos = lo * c, lo_rot = -hi * s;
        const float hi_cos = hi * c, hi_rot = lo * s;
        yr[j] = lo_cos + lo_rot;
        yr[j + half] = hi_cos + hi_rot;
      }
      for (int64_t i = 2 * half; i < d; ++i) yr[i] = xr[i];
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "rope", .min_inputs = 3, .max_inputs = 3, .num_outputs = 1,
    .attrs = {{"attention_scaling", Value::Kind::kFloat, false}}, .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
