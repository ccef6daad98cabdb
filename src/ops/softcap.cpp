// softcap (x f32; cap: float > 0) -> tanh(x / cap) * cap. Gemma-2 style logit capping: smooth, odd, and
// bounded by ±cap. Division (not multiplication by 1/cap) as HF writes it.
#include <cmath>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("softcap", attrs));
  const double cap = attr_float(attrs, "cap");
  if (!(cap > 0.0) || !std::isfinite(cap))
    return ops::attr_error("cap", "expected a finite number > 0, got " + std::to_string(cap));
  return ops::infer_unary_f32(in);
}

Status kernel(const KernelArgs& a) {
  const float cap = static_cast<float>(attr_float(a.attrs, "cap"));
  return ops::unary_f32(a, [cap](float x) { return std::tanh(x / cap) * cap; });
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "softcap", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
    .attrs = {{"cap", Value::Kind::kFloat, true}}, .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
