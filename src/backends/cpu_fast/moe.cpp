// The moe op on cpu_fast (moe.h says how a step runs and why a row's bits do not depend on its company).
#include "backends/cpu_fast/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <span>

#include "backends/cpu_fast/elementwise.h"

namespace hfs::cpu_fast {
namespace {

// gate and up read one quantization of x (linear_glu) when they quantize it the same way.
bool glu_fusable(const PackedWeight& g, const PackedWeight& u) {
  if (g.is_integer() != u.is_integer()) return false;
  return !g.is_integer() || (act_offset(g.format) == act_offset(u.format) && g.k_padded == u.k_padded);
}

// Rows `rows[0..n)` of `src` (quantized) into rows 0..n of `dst`: quantization is per row, so a gathered
// row holds exactly the bytes quantizing it alone gives.
void gather_acts(const QuantizedActs& src, const int32_t* rows, int64_t n, QuantizedActs& dst) {
  const int64_t kp = src.k_padded, nb = kp / 32;
  dst.k_padded = kp;
  dst.offset = src.offset;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t r = rows[j];
    std::memcpy(dst.xq.data() + j * kp, src.xq.data() + r * kp, static_cast<size_t>(kp));
    std::memcpy(dst.block_scale.data() + j * nb, src.block_scale.data() + r * nb, static_cast<size_t>(nb) * 4);
    std::memcpy(dst.block_bias.data() + j * nb, src.block_bias.data() + r * nb, static_cast<size_t>(nb) * 4);
  }
}

}  // namespace

Status MoeLayer::allocate() {
  try {
    const PackedWeight& g0 = *gate[0];
    const PackedWeight& d0 = *down[0];
    if (g0.is_integer()) {
      x_acts = LinearScratch(g0.k_padded, rows);
      sel_acts = LinearScratch(g0.k_padded, rows);
    }
    if (d0.is_integer()) down_acts = LinearScratch(d0.k_padded, rows);
    // Gate and up of different integer formats each quantize their own input (linear()).
    if (!glu_fusable(g0, *up[0]) && (g0.is_integer() || up[0]->is_integer()))
      down_acts = LinearScratch(std::max(d0.k_padded, std::max(g0.k_padded, up[0]->k_padded)), rows);
    // g / u / h hold all k experts' rows at decode (run_decode), the rows of one expert otherwise.
    if (d0.is_integer() && rows == 1)
      for (int64_t k = 0; k < top_k; ++k) decode_down_acts.emplace_back(d0.k_padded, 1);
    const auto rh = static_cast<size_t>(std::max(rows, top_k) * hidden), ri = static_cast<size_t>(std::max(rows, top_k) * inter);
    x_rows.assign(rh, 0.0f);
    y.assign(rh, 0.0f);
    g.assign(ri, 0.0f);
    u.assign(ri, 0.0f);
    h.assign(ri, 0.0f);
    probs.assign(static_cast<size_t>(experts), 0.0f);
    order.assign(static_cast<size_t>(experts), 0);
    chosen.assign(static_cast<size_t>(experts), 0);
    sel_expert.assign(static_cast<size_t>(rows * top_k), 0);
    sel_weight.assign(static_cast<size_t>(rows * top_k), 0.0f);
    first.assign(static_cast<size_t>(experts + 1), 0);
    routed_row.assign(static_cast<size_t>(rows * top_k), 0);
    routed_weight.assign(static_cast<size_t>(rows * top_k), 0.0f);
    routed_expert.assign(static_cast<size_t>(rows * top_k), 0);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted, "cpu_fast: cannot allocate the moe scratch");
  }
  return Ok{};
}

size_t MoeLayer::bytes() const {
  size_t b = x_acts.bytes() + sel_acts.bytes() + down_acts.bytes() +
             (x_rows.size() + y.size() + g.size() + u.size() + h.size() + probs.size() + sel_weight.size() +
              routed_weight.size() + routed_expert.size() + sel_expert.size() + first.size() + routed_row.size()) * 4 + order.size() * 8 + chosen.size();
  for (const LinearScratch& a : decode_down_acts) b += a.bytes();
  for (const auto* ws : {&gate, &up, &down})
    for (const auto& w : *ws) b += w->is_integer() || w->copy.size() > 0 ? w->weight_bytes() : 0;
  return b;
}

void MoeLayer::run_linear(const PackedWeight& w, const float* x, int64_t m, float* out, ThreadPool* pool, FloatRows mode) {
  down_acts.acts.k_padded = w.k_padded;  // sized for the largest k_padded this layer quantizes
  linear(w, x, m, nullptr, out, down_acts, pool, mode);
}

int64_t MoeLayer::routed_row_expert(int64_t j) const { return routed_expert[static_cast<size_t>(j)]; }

// One row: every selected expert reads the same x, so their gate and up projections run as batched jobs
// (linear_batch, up to 8 weights a pool job) instead of one job per expert; bit-identical to linear_glu per
// expert (linear.h), so a decode row gets the bits the grouped path gives it.
void MoeLayer::run_decode(const float* x, float* out, ThreadPool* pool, FloatRows mode) {
  const int64_t K = top_k, I = inter, H = hidden;
  LinearJob jobs[2 * kMaxTopKBatched];
  for (int64_t k0 = 0; k0 < K; k0 += kMaxTopKBatched) {
    const int64_t n = std::min<int64_t>(kMaxTopKBatched, K - k0);
    for (int64_t j = 0; j < n; ++j) {
      const auto e = static_cast<size_t>(routed_row_expert(k0 + j));
      jobs[2 * j] = LinearJob{gate[e].get(), nullptr, g.data() + (k0 + j) * I};
      jobs[2 * j + 1] = LinearJob{up[e].get(), nullptr, u.data() + (k0 + j) * I};
    }
    linear_batch(std::span<const LinearJob>(jobs, static_cast<size_t>(2 * n)), x,
                 gate[0]->is_integer() ? &x_acts.acts : nullptr, 1, pool, mode);
  }
  silu_mul(g.data(), u.data(), K * I, h.data());
  // The downs, each on its own expert's h, as batched jobs too (a job's own input: LinearJob::x / acts).
  const bool int_down = down[0]->is_integer();
  for (int64_t k0 = 0; k0 < K; k0 += 2 * kMaxTopKBatched) {
    const int64_t n = std::min<int64_t>(2 * kMaxTopKBatched, K - k0);
    for (int64_t j = 0; j < n; ++j) {
      const auto e = static_cast<size_t>(routed_row_expert(k0 + j));
      LinearJob& job = jobs[j];
      job = LinearJob{down[e].get(), nullptr, y.data() + (k0 + j) * H};
      job.x = h.data() + (k0 + j) * I;
      if (int_down) {
        QuantizedActs& a = decode_down_acts[static_cast<size_t>(k0 + j)].acts;
        quantize_acts(job.x, 1, I, act_offset(down[e]->format), a);
        job.acts = &a;
      }
    }
    linear_batch(std::span<const LinearJob>(jobs, static_cast<size_t>(n)), nullptr,
                 int_down ? jobs[0].acts : nullptr, 1, pool, mode);
  }
  for (int64_t j = 0; j < K; ++j) {  // ascending expert order (routed_* is grouped by ascending expert)
    const float w = routed_weight[static_cast<size_t>(j)];
    const float* yj = y.data() + j * H;
    for (int64_t i = 0; i < H; ++i) out[i] += yj[i] * w;
  }
}

void MoeLayer::run(const float* x, const float* logits, float* out, ThreadPool* pool, FloatRows mode) {
  const int64_t R = rows, E = experts, H = hidden, K = top_k;
  // Routing, row by row, with the reference's f32 operations in its order (ops/moe.cpp).
  for (int64_t r = 0; r < R; ++r) {
    const float* lr = logits + r * E;
    float mx = lr[0];
    for (int64_t e = 1; e < E; ++e) mx = std::max(mx, lr[e]);
    float sum = 0.0f;
    for (int64_t e = 0; e < E; ++e) sum += (probs[static_cast<size_t>(e)] = std::exp(lr[e] - mx));
    for (int64_t e = 0; e < E; ++e) probs[static_cast<size_t>(e)] /= sum;
    // top-k as the reference picks it: k passes, the first maximum wins each (ties to the lower index);
    // a NaN probability ranks below every number, so a bad row still picks k distinct experts.
    std::fill(chosen.begin(), chosen.end(), char{0});
    for (int64_t k = 0; k < K; ++k) {
      int64_t best = -1;
      for (int64_t e = 0; e < E; ++e) {
        if (chosen[static_cast<size_t>(e)]) continue;
        const float pe = probs[static_cast<size_t>(e)];
        if (best < 0 || (!std::isnan(pe) && (std::isnan(probs[static_cast<size_t>(best)]) || pe > probs[static_cast<size_t>(best)])))
          best = e;
      }
      chosen[static_cast<size_t>(best)] = 1;
      order[static_cast<size_t>(k)] = best;
    }
    float top_sum = 0.0f;
    for (int64_t k = 0; k < K; ++k) top_sum += probs[static_cast<size_t>(order[static_cast<size_t>(k)])];
    for (int64_t k = 0; k < K; ++k) {
      const auto e = static_cast<size_t>(order[static_cast<size_t>(k)]);
      sel_expert[static_cast<size_t>(r * K + k)] = static_cast<int32_t>(e);
      sel_weight[static_cast<size_t>(r * K + k)] = renorm ? probs[e] / top_sum : probs[e];
    }
  }
  // Rows grouped by expert (counting sort: ascending row within an expert).
  std::fill(first.begin(), first.end(), 0);
  for (int64_t i = 0; i < R * K; ++i) ++first[static_cast<size_t>(sel_expert[static_cast<size_t>(i)]) + 1];
  for (int64_t e = 0; e < E; ++e) first[static_cast<size_t>(e + 1)] += first[static_cast<size_t>(e)];
  // first[e] advances as rows are placed; it is restored after.
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < K; ++k) {
      const auto e = static_cast<size_t>(sel_expert[static_cast<size_t>(r * K + k)]);
      const int32_t at = first[e]++;
      routed_row[static_cast<size_t>(at)] = static_cast<int32_t>(r);
      routed_expert[static_cast<size_t>(at)] = static_cast<int32_t>(e);
      routed_weight[static_cast<size_t>(at)] = sel_weight[static_cast<size_t>(r * K + k)];
    }
  for (int64_t e = E; e > 0; --e) first[static_cast<size_t>(e)] = first[static_cast<size_t>(e - 1)];
  first[0] = 0;

  std::fill(out, out + R * H, 0.0f);
  const bool fused = glu_fusable(*gate[0], *up[0]);
  const bool int_x = fused && gate[0]->is_integer();
  if (int_x) quantize_acts(x, R, H, act_offset(gate[0]->format), x_acts.acts, R > 1 ? pool : nullptr);
  if (R == 1 && fused) {
    run_decode(x, out, pool, mode);
    return;
  }
  for (int64_t e = 0; e < E; ++e) {
    const int32_t j0 = first[static_cast<size_t>(e)], j1 = first[static_cast<size_t>(e + 1)];
    const int64_t m = j1 - j0;
    if (m == 0) continue;
    const int32_t* rows_e = routed_row.data() + j0;
    const bool all = m == R;  // every row, in order: read x (or its quantization) in place
    const PackedWeight& gw = *gate[static_cast<size_t>(e)];
    const PackedWeight& uw = *up[static_cast<size_t>(e)];
    const float* xe = x;
    if (!int_x && !all) {
      for (int64_t j = 0; j < m; ++j)
        std::memcpy(x_rows.data() + j * H, x + static_cast<int64_t>(rows_e[j]) * H, static_cast<size_t>(H) * 4);
      xe = x_rows.data();
    }
    if (fused) {
      const QuantizedActs* acts = nullptr;
      if (int_x) {
        if (!all) gather_acts(x_acts.acts, rows_e, m, sel_acts.acts);
        acts = all ? &x_acts.acts : &sel_acts.acts;
      }
      linear_glu(LinearJob{&gw, nullptr, g.data()}, LinearJob{&uw, nullptr, u.data()}, xe, acts, m, h.data(), pool, mode);
    } else {
      run_linear(gw, xe, m, g.data(), pool, mode);
      run_linear(uw, xe, m, u.data(), pool, mode);
      silu_mul(g.data(), u.data(), m * inter, h.data());
    }
    run_linear(*down[static_cast<size_t>(e)], h.data(), m, y.data(), pool, mode);
    for (int64_t j = 0; j < m; ++j) {
      float* o = out + static_cast<int64_t>(rows_e[j]) * H;
      const float* yj = y.data() + j * H;
      const float w = routed_weight[static_cast<size_t>(j0 + j)];
      for (int64_t i = 0; i < H; ++i) o[i] += yj[i] * w;
    }
  }
}

}  // namespace hfs::cpu_fast
