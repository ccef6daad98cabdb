// add (a, b f32, same shape) -> a + b. No broadcasting: the exporter emits exact shapes.
#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("add", attrs));
  return ops::infer_binary_f32(in);
}

Status kernel(const KernelArgs& a) {
  return ops::binary_f32(a, [](float x, float y) { return x + y; });
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "add", .min_inputs = 2, .max_inputs = 2, .num_outputs = 1, .attrs = {},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
