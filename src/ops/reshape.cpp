// reshape (x; shape: [int]) -> view of x with the given dims (numel equal, any dtype).
// A pure view: output 0 aliases input 0, so the kernel only copies when a backend gave it separate storage.
// Dims are explicit (no -1 inference): programs have static shapes and the exporter knows them.
#include <cstring>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("reshape", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  const std::vector<int64_t> dims = attr_ints(attrs, "shape");
  if (dims.size() > static_cast<size_t>(kMaxRank))
    return ops::attr_error("shape", "rank " + std::to_string(dims.size()) + " exceeds the maximum " +
                                        std::to_string(kMaxRank));
  for (int64_t d : dims)
    if (d < 0) return ops::attr_error("shape", "dims must be >= 0 (no -1 inference), got " + Shape(dims).to_string());
  const Shape shape(dims);
  if (shape.numel() != x->shape.numel())
    return ops::shape_error(0, "x", std::to_string(shape.numel()) + " elements to match attribute shape " +
                                        shape.to_string(), *x);
  // Block-quantized data stays whole blocks only if the new last dim is a multiple of the block.
  const uint32_t block = dtype_info(x->dtype).block_elems;
  if (block > 1 && (shape.rank() == 0 || shape[shape.rank() - 1] % block != 0))
    return ops::attr_error("shape", "last dim of " + shape.to_string() + " must be a multiple of " +
                                        std::to_string(block) + " for " + x->to_string());
  return std::vector<TensorType>{{x->dtype, shape}};
}

Status kernel(const KernelArgs& a) {
  if (a.outputs[0].ptr != a.inputs[0].ptr) std::memcpy(a.outputs[0].ptr, a.inputs[0].ptr, a.inputs[0].nbytes());
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "reshape", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
    .attrs = {{"shape", Value::Kind::kArray, true}}, .infer = &infer, .reference = &kernel,
    .alias_input = 0, .in_place = false});

}  // namespace
}  // namespace hfs
