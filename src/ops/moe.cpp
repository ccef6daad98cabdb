// moe (x [..., H] f32, router_logits [..., E] f32, gate [E, I, H], up [E, I, H], down [E, H, I],
//      gate_scale? [E, I] f32, up_scale? [E, I] f32, down_scale? [E, H] f32;
//      top_k: int, norm_topk_prob: bool = false) -> [..., H] f32
//
// A sparse mixture-of-experts MLP with SiLU-gated experts, row by row, as HF's Mixtral / Qwen2-MoE /
// Qwen3-MoE / OLMoE sparse blocks compute it:
//   p        = softmax(router_logits[r]) over all E experts, in f32 (max subtracted, then exp / sum)
//   S        = the top_k experts by p; ties go to the lower expert index (torch.topk leaves tie order
//              unspecified: a fixed rule keeps every backend and run bit-identical)
//   w_e      = p_e, or p_e / Σ_{s∈S} p_s (summed in rank order) when norm_topk_prob
//   out[r]   = Σ_{e∈S, ascending e} (down_e(silu(gate_e x) * up_e x) * w_e), accumulated from 0 in f32 in
//              ascending expert order — the order of HF's loop over experts (index_add_ per expert).
// Expert weights are stacked along dim 0 and stored as linear weights are (ops/weight_decode.h): f32 | f16 |
// bf16; i8 with its per-output-channel scale operand ([E, rows], required for i8, refused otherwise); q4_0
// (the inner dim a multiple of 32). The three projections may use different storage dtypes.
// The Qwen2-MoE shared expert is not part of this op: it is an ordinary gated MLP plus sigmoid_gate.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/op_util.h"
#include "ops/weight_decode.h"

namespace hfs {
namespace {

constexpr DType kWeightTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kQ4_0};

// One stacked expert projection [E, N, K] and its optional scale [E, N] (operand `scale_index`).
Status check_projection(ops::Operands in, int index, std::string_view name, int scale_index, std::string_view scale_name,
                        int64_t e, int64_t n, int64_t k) {
  HFS_ASSIGN_OR_RETURN(auto w, ops::required(in, index, name));
  HFS_TRY(ops::expect_dtype(*w, index, name, kWeightTypes));
  HFS_TRY(ops::expect_layout(*w, index, name, {{"E", e}, {"N", n}, {"K", k}}));
  if (w->dtype == DType::kQ4_0 && k % quant::kQBlock != 0)
    return ops::shape_error(index, name, "[E, N, K] with K a multiple of 32 (q4_0 blocks)", *w);
  const TensorType* s = ops::operand(in, scale_index);
  const bool i8 = w->dtype == DType::kI8;
  if (i8 && !s)
    return make_error(ErrorCode::kInvalidArgument, ops::operand_label(scale_index, scale_name) +
                                                       ": required for an i8 weight (per-output-channel scale [E, N] f32)");
  if (!i8 && s)
    return make_error(ErrorCode::kInvalidArgument, ops::operand_label(scale_index, scale_name) +
                                                       ": only allowed with an i8 weight, got weight " + w->to_string());
  if (s) {
    HFS_TRY(ops::expect_dtype(*s, scale_index, scale_name, ops::kF32Only));
    HFS_TRY(ops::expect_layout(*s, scale_index, scale_name, {{"E", e}, {"N", n}}));
  }
  return Ok{};
}

ops::Inferred infer(ops::Operands in, const Attrs& attrs) {
  HFS_TRY(ops::check_op_attrs("moe", attrs));
  HFS_ASSIGN_OR_RETURN(auto x, ops::required(in, 0, "x"));
  HFS_ASSIGN_OR_RETURN(auto logits, ops::required(in, 1, "router_logits"));
  HFS_ASSIGN_OR_RETURN(auto gate, ops::required(in, 2, "gate"));
  HFS_TRY(ops::expect_dtype(*x, 0, "x", ops::kF32Only));
  HFS_TRY(ops::expect_layout(*x, 0, "x", {{"..."}, {"H"}}));
  const int rank = x->shape.rank();
  const int64_t h = x->shape[rank - 1];
  HFS_TRY(ops::expect_layout(*gate, 2, "gate", {{"E"}, {"I"}, {"H", h}}));
  const int64_t e = gate->shape[0], i = gate->shape[1];
  HFS_TRY(ops::expect_dtype(*logits, 1, "router_logits", ops::kF32Only));
  bool same_rows = logits->shape.rank() == rank && logits->shape[rank - 1] == e;
  for (int d = 0; same_rows && d + 1 < rank; ++d) same_rows = logits->shape[d] == x->shape[d];
  if (!same_rows)
    return ops::shape_error(1, "router_logits", "[..., E] with the leading dims of operand 0 (x) " + x->shape.to_string() +
                                                    " and E = " + std::to_string(e),
                            *logits);
  HFS_TRY(check_projection(in, 2, "gate", 5, "gate_scale", e, i, h));
  HFS_TRY(check_projection(in, 3, "up", 6, "up_scale", e, i, h));
  HFS_TRY(check_projection(in, 4, "down", 7, "down_scale", e, h, i));
  const int64_t k = attr_int(attrs, "top_k");
  if (k < 1 || k > e)
    return ops::attr_error("top_k", "expected a value in [1, E = " + std::to_string(e) + "], got " + std::to_string(k));
  return std::vector<TensorType>{*x};
}

// Expert `e`'s [N, K] matrix of a stacked [E, N, K] weight, and its scale rows.
TensorView expert_matrix(const TensorView& w, int64_t e) {
  const int64_t n = w.shape[1], k = w.shape[2];
  const uint64_t bytes = TensorType{w.dtype, {n, k}}.nbytes();
  return TensorView(static_cast<const std::byte*>(w.ptr) + static_cast<uint64_t>(e) * bytes, w.dtype, Shape{n, k});
}

const float* expert_scale(const TensorView* s, int64_t e, int64_t n) { return s ? s->data<const float>() + e * n : nullptr; }

// y[N] = W x for one expert matrix ([N, K]), decoding one weight row at a time into `row`.
void matvec(const TensorView& w, const float* scale, const float* x, float* y, std::vector<float>& row) {
  const int64_t n_out = w.shape[0], k = w.shape[1];
  for (int64_t n = 0; n < n_out; ++n) {
    ops::decode_weight_row(w, n, scale, row.data());
    float acc = 0.0f;
    for (int64_t i = 0; i < k; ++i) acc += x[i] * row[static_cast<size_t>(i)];
    y[n] = acc;
  }
}

Status kernel(const KernelArgs& a) {
  const TensorView& xv = a.inputs[0];     // [..., H]
  const TensorView& lv = a.inputs[1];     // [..., E]
  const TensorView& gate = a.inputs[2];   // [E, I, H]
  const TensorView& up = a.inputs[3];     // [E, I, H]
  const TensorView& down = a.inputs[4];   // [E, H, I]
  const TensorView* gate_s = ops::input(a, 5);
  const TensorView* up_s = ops::input(a, 6);
  const TensorView* down_s = ops::input(a, 7);
  const int64_t e_count = gate.shape[0], inter = gate.shape[1], h = gate.shape[2];
  const int64_t top_k = attr_int(a.attrs, "top_k");
  const bool renorm = attr_bool(a.attrs, "norm_topk_prob");
  const int64_t rows = ops::leading_rows(xv.shape);
  const float* x = xv.data<const float>();
  const float* logits = lv.data<const float>();
  float* out = a.outputs[0].data<float>();  // [..., H]

  std::vector<float> p(static_cast<size_t>(e_count)), g(static_cast<size_t>(inter)), u(static_cast<size_t>(inter)),
      y(static_cast<size_t>(h)), row(static_cast<size_t>(std::max(inter, h)));
  std::vector<int64_t> order(static_cast<size_t>(e_count));
  std::vector<float> weight_of(static_cast<size_t>(e_count));
  std::vector<char> chosen(static_cast<size_t>(e_count));
  for (int64_t r = 0; r < rows; ++r) {
    const float* lr = logits + r * e_count;
    const float* xr = x + r * h;
    float* o = out + r * h;
    // softmax in f32, as F.softmax(router_logits, dtype=torch.float)
    float mx = lr[0];
    for (int64_t e = 1; e < e_count; ++e) mx = std::max(mx, lr[e]);
    float sum = 0.0f;
    for (int64_t e = 0; e < e_count; ++e) sum += (p[static_cast<size_t>(e)] = std::exp(lr[e] - mx));
    for (int64_t e = 0; e < e_count; ++e) p[static_cast<size_t>(e)] /= sum;
    // top-k: descending probability, lower index first on ties (the first maximum wins each pass). A NaN
    // probability (from a NaN logit) ranks below every number, so bad input still picks k distinct experts.
    std::fill(chosen.begin(), chosen.end(), 0);
    for (int64_t k = 0; k < top_k; ++k) {
      int64_t best = -1;
      for (int64_t e = 0; e < e_count; ++e) {
        if (chosen[static_cast<size_t>(e)]) continue;
        const float pe = p[static_cast<size_t>(e)];
        if (best < 0 || (!std::isnan(pe) && (std::isnan(p[static_cast<size_t>(best)]) || pe > p[static_cast<size_t>(best)])))
          best = e;
      }
      chosen[static_cast<size_t>(best)] = 1;
      order[static_cast<size_t>(k)] = best;
    }
    float top_sum = 0.0f;
    for (int64_t k = 0; k < top_k; ++k) top_sum += p[static_cast<size_t>(order[static_cast<size_t>(k)])];
    for (int64_t k = 0; k < top_k; ++k) {
      const auto e = static_cast<size_t>(order[static_cast<size_t>(k)]);
      weight_of[e] = renorm ? p[e] / top_sum : p[e];
    }
    for (int64_t i = 0; i < h; ++i) o[i] = 0.0f;
    for (int64_t e = 0; e < e_count; ++e) {
      if (!chosen[static_cast<size_t>(e)]) continue;
      matvec(expert_matrix(gate, e), expert_scale(gate_s, e, inter), xr, g.data(), row);
      matvec(expert_matrix(up, e), expert_scale(up_s, e, inter), xr, u.data(), row);
      for (int64_t i = 0; i < inter; ++i) {
        const float gi = g[static_cast<size_t>(i)];
        g[static_cast<size_t>(i)] = (gi / (1.0f + std::exp(-gi))) * u[static_cast<size_t>(i)];
      }
      matvec(expert_matrix(down, e), expert_scale(down_s, e, h), g.data(), y.data(), row);
      const float w = weight_of[static_cast<size_t>(e)];
      for (int64_t i = 0; i < h; ++i) o[i] += y[static_cast<size_t>(i)] * w;
    }
  }
  return Ok{};
}

[[maybe_unused]] const bool kRegistered = register_op({
    .name = "moe", .min_inputs = 5, .max_inputs = 8, .num_outputs = 1,
    .attrs = {{"top_k", Value::Kind::kInt, true}, {"norm_topk_prob", Value::Kind::kBool, false}},
    .infer = &infer, .reference = &kernel});

}  // namespace
}  // namespace hfs
