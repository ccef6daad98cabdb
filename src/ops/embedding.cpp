// embedding (table [V, H] f32|f16|bf16, ids [1, T] i32) -> [1, T, H] f32: row ids[t] of the table.
// An id outside [0, V) is a run-time error (ids are data), never a silent clamp.
#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("embedding", attrs));
  auto table = ops::required(in, 0, "table");
  if (!table) return table.error();
  auto ids = ops::required(in, 1, "ids");
  if (!ids) return ids.error();
  HFS_TRY(ops::expect_dtype(**table, 0, "table", ops::kWeightFloat));
  HFS_TRY(ops::expect_layout(**table, 0, "table", {{"V"}, {"H"}}));
  HFS_TRY(ops::expect_dtype(**ids, 1, "ids", ops::kI32Only));
  HFS_TRY(ops::expect_layout(**ids, 1, "ids", {{"1"}, {"T"}}));
  return std::vector<TensorType>{{DType::kF32, Shape{1, (*ids)->shape[1], (*table)->shape[1]}}};
}

Status kernel(const KernelArgs& a) {
  const TensorView& table = a.inputs[0];  // [V, H]
  const TensorView& ids = a.inputs[1];    // [1, T]
  const int64_t v = table.shape[0], h = table.shape[1], t_len = ids.shape[1];
  const int32_t* id = ids.data<const int32_t>();
  float* out = a.outputs[0].data<float>();  // [1, T, H]
  for (int64_t t = 0; t < t_len; ++t) {
    if (id[t] < 0 || id[t] >= v)
      return make_error(ErrorCode::kOutOfRange, "embedding: ids[0, " + std::to_string(t) + "] = " +
                                                    std::to_string(id[t]) + " is outside the table's [0, V) with V = " +
                                                    std::to_string(v));
    for (int64_t j = 0; j < h; ++j) out[t * h + j] = ops::load_float(table.ptr, table.dtype, id[t] * h + j);
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "embedding", .min_inputs = 2, .max_inputs = 2, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
