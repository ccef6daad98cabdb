// silu (x f32) -> x * sigmoid(x) = x / (1 + exp(-x)), as torch.nn.functional.silu computes it in f32.
#include <cmath>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("silu", attrs));
  return ops::infer_unary_f32(in);
}

Status kernel(const KernelArgs& a) {
  return ops::unary_f32(a, [](float x) { return x / (1.0f + std::exp(-x)); });
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "silu", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
