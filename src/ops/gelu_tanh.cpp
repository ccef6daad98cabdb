// gelu_tanh (x f32) -> 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x³)))
// torch.nn.functional.gelu(approximate="tanh"), HF "gelu_pytorch_tanh" (Gemma's hidden_act).
#include <cmath>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("gelu_tanh", attrs));
  return ops::infer_unary_f32(in);
}

Status kernel(const KernelArgs& a) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
  constexpr float kCoeff = 0.044715f;
  return ops::unary_f32(a, [](float x) {
    const float inner = kSqrt2OverPi * (x + kCoeff * (x * x * x));
    return 0.5f * x * (1.0f + std::tanh(inner));
  });
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "gelu_tanh", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
