// embedding (table [V, H] f32|f16|bf16|i8, ids [1, T] i32, scale? [V] f32) -> [1, T, H] f32: row ids[t]
// of the table. An i8 table needs its per-row `scale` (row v is scale[v] · table[v]), the same layout as
// an i8 linear weight, so a tied embedding / LM head is one constant in int8 programs.
// An id outside [0, V) is a run-time error (ids are data), never a silent clamp.
#include "ops/op_util.h"
#include "ops/weight_decode.h"

namespace hfs {
namespace {

constexpr DType kTableTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8};

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("embedding", attrs));
  HFS_ASSIGN_OR_RETURN(auto table, ops::required(in, 0, "table"));
  HFS_ASSIGN_OR_RETURN(auto ids, ops::required(in, 1, "ids"));
  HFS_TRY(ops::expect_dtype(*table, 0, "table", kTableTypes));
  HFS_TRY(ops::expect_layout(*table, 0, "table", {{"V"}, {"H"}}));
  HFS_TRY(ops::expect_dtype(*ids, 1, "ids", ops::kI32Only));
  HFS_TRY(ops::expect_layout(*ids, 1, "ids", {{"1"}, {"T"}}));
  const bool quant_i8 = table->dtype == DType::kI8;
  const TensorType* s = ops::operand(in, 2);
  if (quant_i8 && !s)
    return make_error(ErrorCode::kInvalidArgument,
                      ops::operand_label(2, "scale") + ": required for an i8 table (per-row scale [V] f32)");
  if (!quant_i8 && s)
    return make_error(
        ErrorCode::kInvalidArgument,
        ops::operand_label(2, "scale") + ": only allowed with an i8 table, got table " + table->to_string());
  if (s) {
    HFS_TRY(ops::expect_dtype(*s, 2, "scale", ops::kF32Only));
    HFS_TRY(ops::expect_layout(*s, 2, "scale", {{"V", table->shape[0]}}));
  }
  return std::vector<TensorType>{{DType::kF32, Shape{1, ids->shape[1], table->shape[1]}}};
}

Status kernel(const KernelArgs& a) {
  const TensorView& table = a.inputs[0];  // [V, H]
  const TensorView& ids = a.inputs[1];    // [1, T]
  const TensorView* scale = ops::input(a, 2);  // [V] (i8 tables)
  const int64_t v = table.shape[0], h = table.shape[1], t_len = ids.shape[1];
  const int32_t* id = ids.data<const int32_t>();
  float* out = a.outputs[0].data<float>();  // [1, T, H]
  for (int64_t t = 0; t < t_len; ++t) {
    if (id[t] < 0 || id[t] >= v)
      return make_error(ErrorCode::kOutOfRange, "embedding: ids[0, " + std::to_string(t) + "] = " +
                                                    std::to_string(id[t]) + " is outside the table's [0, V) with V = " +
                                                    std::to_string(v));
    ops::decode_weight_row(table, id[t], scale ? scale->data<const float>() : nullptr, out + t * h);
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "embedding", .min_inputs = 2, .max_inputs = 3, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
