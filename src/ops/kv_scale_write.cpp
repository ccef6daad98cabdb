// kv_scale_write (scale [1, Hkv, S] f32, rows [1, T, Hkv, D] f32, slots [T] i32) -> scale, IN PLACE
// The scales of an int8 cache (io contract minor 1): for each t with slots[t] >= 0,
//   scale[0, h, slots[t]] = max_i |rows[0, t, h, i]| / 127      (0 for an all-zero row)
// the symmetric per-(slot, head) scale kv_cache_write then quantizes row t with. Slots < 0 are not written;
// two rows naming one slot: the later row wins (as in kv_cache_write, so cache and scale stay one row's).
// A slot >= S is an error reported before anything is written.
#include <cmath>
#include <cstring>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("kv_scale_write", attrs));
  HFS_ASSIGN_OR_RETURN(auto scale, ops::required(in, 0, "scale"));
  HFS_ASSIGN_OR_RETURN(auto rows, ops::required(in, 1, "rows"));
  HFS_ASSIGN_OR_RETURN(auto slots, ops::required(in, 2, "slots"));
  HFS_TRY(ops::expect_dtype(*scale, 0, "scale", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*scale, 0, "scale", {{"1"}, {"Hkv"}, {"S"}}));
  const int64_t hkv = scale->shape[1];
  HFS_TRY(ops::expect_dtype(*rows, 1, "rows", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*rows, 1, "rows", {{"1"}, {"T"}, {"Hkv", hkv}, {"D"}}));
  HFS_TRY(ops::expect_dtype(*slots, 2, "slots", ops::kI32Only));
  HFS_TRY(ops::expect_layout(*slots, 2, "slots", {{"T", rows->shape[1]}}));
  return std::vector<TensorType>{*scale};
}

Status kernel(const KernelArgs& a) {
  const TensorView& scale_in = a.inputs[0];  // [1, Hkv, S]
  const TensorView& out = a.outputs[0];      // normally the same buffer
  const int64_t hkv = scale_in.shape[1], s_len = scale_in.shape[2];
  const float* rows = a.inputs[1].data<const float>();  // [1, T, Hkv, D]
  const int64_t t_len = a.inputs[1].shape[1], d = a.inputs[1].shape[3];
  const int32_t* slots = a.inputs[2].data<const int32_t>();
  for (int64_t t = 0; t < t_len; ++t)
    if (slots[t] >= s_len)
      return make_error(ErrorCode::kOutOfRange, "kv_scale_write: slots[" + std::to_string(t) + "] = " +
                                                    std::to_string(slots[t]) + " is outside the scale's S = " +
                                                    std::to_string(s_len) + " slots");
  if (out.ptr != scale_in.ptr) std::memcpy(out.ptr, scale_in.ptr, scale_in.nbytes());
  float* sc = out.data<float>();
  for (int64_t t = 0; t < t_len; ++t) {
    if (slots[t] < 0) continue;
    for (int64_t h = 0; h < hkv; ++h) {
      const float* src = rows + (t * hkv + h) * d;
      float amax = 0.0f;
      for (int64_t i = 0; i < d; ++i) amax = std::max(amax, std::fabs(src[i]));
      sc[h * s_len + slots[t]] = amax / 127.0f;
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "kv_scale_write", .min_inputs = 3, .max_inputs = 3, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel, .alias_input = 0, .in_place = true});

}  // namespace
}  // namespace hfs
