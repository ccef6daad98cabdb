// attention (q [1, T, Hq, D] f32, k_cache [1, Hkv, S, D] f32|f16|i8, v_cache [1, Hkv, S, D] (k's dtype),
//            mask [1, 1, T, S] f32, k_scale [1, Hkv, S] f32, v_scale [1, Hkv, S] f32 (both for i8 caches
//            only); scale: float, softcap: float = 0) -> [1, T, Hq, D] f32
// An i8 cache row stands for k_scale[h, j] · q (kv_cache_write): dot(q, k_j) = k_scale[h, j] · Σ q_i · q_ji
// and Σ_j p_j v_j = Σ_j (p_j · v_scale[h, j]) · q_j — read as int8 and widened, never dequantized whole.
// HF eager attention with grouped-query heads (query head h reads kv head h / (Hq / Hkv)):
//   s_j = dot(q, k_j) * scale;  if softcap > 0: s_j = tanh(s_j / softcap) * softcap;  s_j += mask[t, j]
//   p = softmax(s) over all S slots (max-subtracted, f32);  out = sum_j p_j * v_j
// The mask is additive and hides entries with a finite large negative (-1e30), so a fully hidden row
// is a uniform average over the slots, finite. (A -inf mask on a fully hidden row gives NaN, as in PyTorch.)
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/op_util.h"

namespace hfs {
namespace {

constexpr DType kCacheTypes[] = {DType::kF32, DType::kF16, DType::kI8};

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("attention", attrs));
  HFS_TRY(ops::expect_finite_attr(attrs, "scale", 1.0));
  const double softcap = attr_float(attrs, "softcap", 0.0);
  if (!(softcap >= 0.0) || !std::isfinite(softcap))
    return ops::attr_error("softcap", "expected a finite number >= 0 (0 = off), got " + std::to_string(softcap));
  HFS_ASSIGN_OR_RETURN(auto q, ops::required(in, 0, "q"));
  HFS_ASSIGN_OR_RETURN(auto k, ops::required(in, 1, "k_cache"));
  HFS_ASSIGN_OR_RETURN(auto v, ops::required(in, 2, "v_cache"));
  HFS_ASSIGN_OR_RETURN(auto mask, ops::required(in, 3, "mask"));
  HFS_TRY(ops::expect_dtype(*q, 0, "q", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*q, 0, "q", {{"1"}, {"T"}, {"Hq"}, {"D"}}));
  const int64_t t = q->shape[1], hq = q->shape[2], d = q->shape[3];
  HFS_TRY(ops::expect_dtype(*k, 1, "k_cache", kCacheTypes));
  HFS_TRY(ops::expect_layout(*k, 1, "k_cache", {{"1"}, {"Hkv"}, {"S"}, {"D", d}}));
  const int64_t hkv = k->shape[1], s = k->shape[2];
  if (hkv == 0 || hq % hkv != 0)
    return ops::shape_error(1, "k_cache", "[1, Hkv, S, D] with Hkv dividing Hq = " + std::to_string(hq), *k);
  const DType kv_types[] = {k->dtype};
  HFS_TRY(ops::expect_dtype(*v, 2, "v_cache", kv_types));
  HFS_TRY(ops::expect_layout(*v, 2, "v_cache", {{"1"}, {"Hkv", hkv}, {"S", s}, {"D", d}}));
  HFS_TRY(ops::expect_dtype(*mask, 3, "mask", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*mask, 3, "mask", {{"1"}, {"1"}, {"T", t}, {"S", s}}));
  const char* names[] = {"k_scale", "v_scale"};
  for (int i = 4; i < 6; ++i) {
    const TensorType* sc = ops::operand(in, i);
    if ((sc != nullptr) != (k->dtype == DType::kI8))
      return make_error(ErrorCode::kDTypeMismatch, ops::operand_label(i, names[i - 4]) +
                                                      (sc ? ": only i8 caches take scales" : ": i8 caches need their scale [1, Hkv, S] f32"));
    if (sc == nullptr) continue;
    HFS_TRY(ops::expect_dtype(*sc, i, names[i - 4], ops::kF32Only));
    HFS_TRY(ops::expect_layout(*sc, i, names[i - 4], {{"1"}, {"Hkv", hkv}, {"S", s}}));
  }
  return std::vector<TensorType>{*q};
}

Status kernel(const KernelArgs& a) {
  const TensorView& qv = a.inputs[0];  // [1, T, Hq, D]
  const TensorView& kc = a.inputs[1];  // [1, Hkv, S, D]
  const TensorView& vc = a.inputs[2];  // [1, Hkv, S, D]
  const float* mask = a.inputs[3].data<const float>();  // [1, 1, T, S]
  const int64_t t_len = qv.shape[1], hq = qv.shape[2], d = qv.shape[3];
  const int64_t hkv = kc.shape[1], s_len = kc.shape[2];
  const int64_t group = hq / hkv;
  const float scale = static_cast<float>(attr_float(a.attrs, "scale"));
  const float softcap = static_cast<float>(attr_float(a.attrs, "softcap", 0.0));
  const float* q = qv.data<const float>();
  const bool i8 = kc.dtype == DType::kI8;
  const float* ks = i8 ? a.inputs[4].data<const float>() : nullptr;  // [1, Hkv, S]
  const float* vs = i8 ? a.inputs[5].data<const float>() : nullptr;
  auto kv_at = [&](const TensorView& c, int64_t i) {  // a raw element; an i8 row's scale is applied per row
    return i8 ? static_cast<float>(static_cast<const int8_t*>(c.ptr)[i]) : ops::load_float(c.ptr, c.dtype, i);
  };
  float* out = a.outputs[0].data<float>();  // [1, T, Hq, D]
  std::vector<float> p(static_cast<size_t>(s_len)), acc(static_cast<size_t>(d));
  for (int64_t t = 0; t < t_len; ++t) {
    for (int64_t h = 0; h < hq; ++h) {
      const float* qr = q + (t * hq + h) * d;
      const int64_t kv_base = (h / group) * s_len * d;  // start of this kv head's [S, D] block
      float max_s = -INFINITY;
      for (int64_t j = 0; j < s_len; ++j) {
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += qr[i] * kv_at(kc, kv_base + j * d + i);
        if (i8) dot *= ks[(h / group) * s_len + j];
        float sj = dot * scale;
        if (softcap > 0.0f) sj = std::tanh(sj / softcap) * softcap;
        sj += mask[t * s_len + j];
        p[static_cast<size_t>(j)] = sj;
        max_s = std::max(max_s, sj);
      }
      float sum = 0.0f;
      for (float& e : p) {
        e = std::exp(e - max_s);
        sum += e;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < s_len; ++j) {
        float pj = p[static_cast<size_t>(j)] / sum;
        if (i8) pj *= vs[(h / group) * s_len + j];
        for (int64_t i = 0; i < d; ++i) acc[static_cast<size_t>(i)] += pj * kv_at(vc, kv_base + j * d + i);
      }
      std::copy(acc.begin(), acc.end(), out + (t * hq + h) * d);
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "attention", .min_inputs = 4, .max_inputs = 6, .num_outputs = 1,
    .attrs = {{"scale", Value::Kind::kFloat, true}, {"softcap", Value::Kind::kFloat, false}},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
