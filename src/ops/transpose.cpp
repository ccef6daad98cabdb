// transpose (x; perm: [int]) -> permuted copy: out.shape[i] = x.shape[perm[i]], out[idx] = x[idx mapped back].
// Any rank <= 6, any plain (non-block) dtype; elements are moved as bytes.
#include <array>
#include <cstring>

#include "ops/op_util.h"

namespace hfs {
namespace {

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("transpose", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_TRY(ops::expect_plain_dtype(*x, 0, "x"));
  const std::vector<int64_t> perm = attr_ints(attrs, "perm");
  const int rank = x->shape.rank();
  std::array<bool, kMaxRank> seen{};
  bool ok = static_cast<int>(perm.size()) == rank;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < rank && !seen[static_cast<size_t>(perm[i])];
    if (ok) seen[static_cast<size_t>(perm[i])] = true;
  }
  if (!ok)
    return ops::attr_error("perm", "expected a permutation of 0.." + std::to_string(rank - 1) + " for operand 0 (x) " +
                                       x->to_string() + ", got " + Value::int_array(perm).to_json());
  TensorType out = *x;
  for (int i = 0; i < rank; ++i) out.shape[i] = x->shape[static_cast<int>(perm[static_cast<size_t>(i)])];
  return std::vector<TensorType>{out};
}

Status kernel(const KernelArgs& a) {
  const TensorView& x = a.inputs[0];
  const std::vector<int64_t> perm = attr_ints(a.attrs, "perm");
  const int rank = x.shape.rank();
  const size_t esize = ops::elem_bytes(x.dtype);
  // Row-major strides of x, then the stride in x of each output dim.
  std::array<int64_t, kMaxRank> x_stride{}, src_stride{}, out_dims{}, idx{};
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    x_stride[static_cast<size_t>(i)] = s;
    s *= x.shape[i];
  }
  for (int i = 0; i < rank; ++i) {
    src_stride[static_cast<size_t>(i)] = x_stride[static_cast<size_t>(perm[static_cast<size_t>(i)])];
    out_dims[static_cast<size_t>(i)] = x.shape[static_cast<int>(perm[static_cast<size_t>(i)])];
  }
  const auto* src = static_cast<const uint8_t*>(x.ptr);
  auto* dst = static_cast<uint8_t*>(a.outputs[0].ptr);
  const int64_t n = x.numel();
  int64_t src_off = 0;  // element offset in x of the output element at multi-index idx
  for (int64_t o = 0; o < n; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * esize, src + static_cast<size_t>(src_off) * esize, esize);
    // Odometer increment of idx over out_dims, keeping src_off in sync.
    for (int i = rank - 1; i >= 0; --i) {
      const auto u = static_cast<size_t>(i);
      src_off += src_stride[u];
      if (++idx[u] < out_dims[u]) break;
      src_off -= src_stride[u] * out_dims[u];
      idx[u] = 0;
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "transpose", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
    .attrs = {{"perm", Value::Kind::kArray, true}}, .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
