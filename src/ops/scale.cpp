// scale (x f32; value: float) -> x * value (value rounded to f32 first, as a PyTorch f32 tensor * scalar).
#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("scale", attrs));
  HFS_TRY(ops::expect_finite_attr(attrs, "value", 1.0));
  return ops::infer_unary_f32(in);
}

Status kernel(const KernelArgs& a) {
  const float value = static_cast<float>(attr_float(a.attrs, "value"));
  return ops::unary_f32(a, [value](float x) { return x * value; });
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "scale", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
    .attrs = {{"value", Value::Kind::kFloat, true}}, .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
