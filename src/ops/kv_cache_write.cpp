// kv_cache_write (cache [1, Hkv, S, D] f32|f16|i8, rows [1, T, Hkv, D] f32, slots [T] i32,
//                 scale [1, Hkv, S] f32: i8 caches only) -> cache, IN PLACE
// For each t with slots[t] >= 0: cache[0, h, slots[t], :] = rows[0, t, h, :] (rounded to the cache dtype).
// An i8 cache stores q = clamp(round_half_even(x / scale[0, h, slots[t]]), -127, 127) (q = 0 where the
// scale is 0), with the scale kv_scale_write just wrote for that row (the scale operand is its output).
// slots[t] < 0 means "do not write" (padding tokens of a partly filled prefill chunk); every other byte of
// the cache is left untouched. If two rows name the same slot, the later row (larger t) wins.
// A slot >= S is an error reported before anything is written, so a failed call leaves the cache as it was.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/op_util.h"

namespace hfs {
namespace {

constexpr DType kCacheTypes[] = {DType::kF32, DType::kF16, DType::kI8};

// round_half_even(x / scale) in [-127, 127]; the division (not x · (1/scale)) so every backend rounds alike.
int8_t quantize(float x, float scale) {
  if (scale == 0.0f) return 0;
  return static_cast<int8_t>(std::clamp(std::nearbyint(x / scale), -127.0f, 127.0f));
}

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("kv_cache_write", attrs));
  HFS_ASSIGN_OR_RETURN(auto cache, ops::required(in, 0, "cache"));
  HFS_ASSIGN_OR_RETURN(auto rows, ops::required(in, 1, "rows"));
  HFS_ASSIGN_OR_RETURN(auto slots, ops::required(in, 2, "slots"));
  HFS_TRY(ops::expect_dtype(*cache, 0, "cache", kCacheTypes));
  HFS_TRY(ops::expect_layout(*cache, 0, "cache", {{"1"}, {"Hkv"}, {"S"}, {"D"}}));
  const int64_t hkv = cache->shape[1], d = cache->shape[3];
  HFS_TRY(ops::expect_dtype(*rows, 1, "rows", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*rows, 1, "rows", {{"1"}, {"T"}, {"Hkv", hkv}, {"D", d}}));
  const int64_t t = rows->shape[1];
  HFS_TRY(ops::expect_dtype(*slots, 2, "slots", ops::kI32Only));
  HFS_TRY(ops::expect_layout(*slots, 2, "slots", {{"T", t}}));
  const TensorType* scale = ops::operand(in, 3);
  if ((scale != nullptr) != (cache->dtype == DType::kI8))
    return make_error(ErrorCode::kDTypeMismatch, ops::operand_label(3, "scale") +
                                                    (scale ? ": only an i8 cache takes a scale" : ": an i8 cache needs its scale [1, Hkv, S] f32"));
  if (scale != nullptr) {
    HFS_TRY(ops::expect_dtype(*scale, 3, "scale", ops::kF32Only));
    HFS_TRY(ops::expect_layout(*scale, 3, "scale", {{"1"}, {"Hkv", hkv}, {"S", cache->shape[2]}}));
  }
  return std::vector<TensorType>{*cache};
}

Status kernel(const KernelArgs& a) {
  const TensorView& cache_in = a.inputs[0];  // [1, Hkv, S, D]
  const TensorView& out = a.outputs[0];      // normally the same buffer as cache_in
  const int64_t hkv = cache_in.shape[1], s_len = cache_in.shape[2], d = cache_in.shape[3];
  const float* rows = a.inputs[1].data<const float>();  // [1, T, Hkv, D]
  const int64_t t_len = a.inputs[1].shape[1];
  const int32_t* slots = a.inputs[2].data<const int32_t>();  // [T]
  for (int64_t t = 0; t < t_len; ++t)
    if (slots[t] >= s_len)
      return make_error(ErrorCode::kOutOfRange, "kv_cache_write: slots[" + std::to_string(t) + "] = " +
                                                    std::to_string(slots[t]) + " is outside the cache's S = " +
                                                    std::to_string(s_len) + " slots");
  // A backend that did not alias the buffers still gets "cache with rows written".
  if (out.ptr != cache_in.ptr) std::memcpy(out.ptr, cache_in.ptr, cache_in.nbytes());
  if (out.dtype == DType::kI8) {
    const float* scale = a.inputs[3].data<const float>();  // [1, Hkv, S]
    int8_t* q = out.data<int8_t>();
    for (int64_t t = 0; t < t_len; ++t) {
      if (slots[t] < 0) continue;
      for (int64_t h = 0; h < hkv; ++h) {
        const float* src = rows + (t * hkv + h) * d;
        const float sc = scale[h * s_len + slots[t]];
        for (int64_t i = 0; i < d; ++i) q[(h * s_len + slots[t]) * d + i] = quantize(src[i], sc);
      }
    }
    return Ok{};
  }
  for (int64_t t = 0; t < t_len; ++t) {
    if (slots[t] < 0) continue;
    for (int64_t h = 0; h < hkv; ++h) {
      const float* src = rows + (t * hkv + h) * d;
      const int64_t dst = (h * s_len + slots[t]) * d;
      for (int64_t i = 0; i < d; ++i) ops::store_float(out.ptr, out.dtype, dst + i, src[i]);
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "kv_cache_write", .min_inputs = 3, .max_inputs = 4, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel, .alias_input = 0, .in_place = true});

}  // namespace
}  // namespace hfs
