#include "hfstatic/sampler.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "core/vector_clones.h"

namespace hfs {

std::optional<InvalidSamplingField> find_invalid_field(const SamplingConfig& c) {
  // Written so that NaN fails every test (every comparison with NaN is false).
  if (!(std::isfinite(c.temperature) && c.temperature >= 0.0f))
    return InvalidSamplingField{"temperature", "a finite number >= 0 (0 = greedy)", c.temperature};
  if (!(c.top_k >= 0)) return InvalidSamplingField{"top_k", "an integer >= 0 (0 = off)", static_cast<double>(c.top_k)};
  if (!(c.top_p > 0.0f && c.top_p <= 1.0f))
    return InvalidSamplingField{"top_p", "a number in (0, 1] (1 = off)", c.top_p};
  if (!(c.min_p >= 0.0f && c.min_p <= 1.0f))
    return InvalidSamplingField{"min_p", "a number in [0, 1] (0 = off)", c.min_p};
  if (!(std::isfinite(c.repetition_penalty) && c.repetition_penalty > 0.0f))
    return InvalidSamplingField{"repetition_penalty", "a finite number > 0 (1 = off)", c.repetition_penalty};
  if (!(c.presence_penalty >= -2.0f && c.presence_penalty <= 2.0f))
    return InvalidSamplingField{"presence_penalty", "a number in [-2, 2] (0 = off)", c.presence_penalty};
  if (!(c.frequency_penalty >= -2.0f && c.frequency_penalty <= 2.0f))
    return InvalidSamplingField{"frequency_penalty", "a number in [-2, 2] (0 = off)", c.frequency_penalty};
  for (const auto& [id, bias] : c.logit_bias) {
    if (id < 0) return InvalidSamplingField{"logit_bias", "token ids >= 0", static_cast<double>(id)};
    if (!std::isfinite(bias)) return InvalidSamplingField{"logit_bias", "finite biases", bias};
  }
  return std::nullopt;
}

Status validate(const SamplingConfig& c) {
  const auto bad = find_invalid_field(c);
  if (!bad) return Ok{};
  // The shortest text that reads back as the value: "0.95" rather than float's "0.949999988".
  char got[64];
  const double v = bad->value;
  const bool integral = std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 1e15;
  const auto end = integral ? std::to_chars(got, got + sizeof got, static_cast<int64_t>(v)).ptr
                            : std::to_chars(got, got + sizeof got, static_cast<float>(v)).ptr;
  return make_error(ErrorCode::kInvalidArgument, "sampling: " + std::string(bad->field) + ": expected " +
                                                     std::string(bad->expected) + ", got " + std::string(got, end));
}

namespace {
// Elements per block of argmax's first pass, and independent maxima per block: each lane's maximum is its own
// dependency chain, so the compiler keeps the lanes in vector registers and never needs to reassociate one
// scalar reduction (which it may not do for floats). A vocabulary of 151936 is then one read at memory
// speed instead of a compare-and-branch per element against a value it re-reads.
constexpr size_t kArgmaxBlock = 256;
constexpr size_t kArgmaxLanes = 16;

// Pass 1 of argmax over the whole blocks of x[0, n): the first block holding the largest value (strictly
// greater keeps the earliest block on ties) against *best, which starts at x[0]. Compares only, so every
// clone (core/vector_clones.h) finds the same block.
HFS_VECTOR_CLONES void first_max_block(const float* x, size_t n, float* best, size_t* best_at, size_t* best_len) {
  // One GCC vector of the 16 lanes: the compiler does not vectorize the lanes written as an array, and the
  // vector type is one register in the AVX-512 clone, two in the AVX2 one.
  using Lanes = float __attribute__((vector_size(kArgmaxLanes * sizeof(float))));
  for (size_t i = 0; i + kArgmaxBlock <= n; i += kArgmaxBlock) {
    // −inf start: a NaN never enters a lane (it never compares greater), so the lane keeps comparing.
    Lanes lane;
    for (size_t j = 0; j < kArgmaxLanes; ++j) lane[j] = -std::numeric_limits<float>::infinity();
    for (size_t k = 0; k < kArgmaxBlock; k += kArgmaxLanes) {
      Lanes v;
      std::memcpy(&v, x + i + k, sizeof v);
      lane = v > lane ? v : lane;
    }
    float m = lane[0];
    for (size_t j = 1; j < kArgmaxLanes; ++j) m = lane[j] > m ? lane[j] : m;
    if (m > *best) *best = m, *best_at = i, *best_len = kArgmaxBlock;
  }
}
}  // namespace

int32_t argmax(std::span<const float> logits) {
  const size_t n = logits.size();
  if (n == 0) return 0;
  const float* x = logits.data();
  // Pass 1: the first block holding the largest value (strictly greater keeps the earliest block on ties),
  // then the tail; pass 2: its first index within that block. NaN never compares greater, as before.
  size_t best_at = 0, best_len = std::min(n, kArgmaxBlock);
  float best = x[0];
  first_max_block(x, n, &best, &best_at, &best_len);
  for (size_t t = n - n % kArgmaxBlock; t < n; ++t)
    if (x[t] > best) best = x[t], best_at = t, best_len = 1;
  for (size_t t = best_at; t < best_at + best_len; ++t)
    if (x[t] == best) return static_cast<int32_t>(t);
  return static_cast<int32_t>(best_at);  // best is x[0] and x[0] is NaN: id 0, as the old loop gave
}

Sampler::Sampler(const SamplingConfig& config, int64_t vocab_size)
    : cfg_(config), rng_(config.seed), work_(static_cast<size_t>(vocab_size)), order_(static_cast<size_t>(vocab_size)),
      seen_(static_cast<size_t>(vocab_size)),
      counts_(config.presence_penalty != 0.0f || config.frequency_penalty != 0.0f ? static_cast<size_t>(vocab_size) : 0) {}

void Sampler::reseed(uint64_t seed) { rng_.seed(seed); }

namespace {
// Greedy with logit_bias and nothing else: the argmax of logits + bias without the biased copy of the whole
// vocabulary (600 KB per row at Qwen's 151936: a copy, a pass and a second read, where the argmax alone is
// one read). The unbiased ids between biased ones go through argmax as runs; each biased id is its logit
// plus its biases added in the list's order (as apply_bias_and_penalties adds them); the candidates are
// compared in id order, strictly, so ties go to the lowest id as in argmax over the biased copy. Exact for
// the logits a sampler gets (no NaN: unusable_logits rejects them). Ids at or past `V` are ignored.
// No allocation: each next biased id is found by a scan of the list (it holds a few ids).
int32_t greedy_with_bias(std::span<const float> logits, std::span<const std::pair<int32_t, float>> bias) {
  const int64_t V = static_cast<int64_t>(logits.size());
  int32_t best = -1;
  float best_v = 0;
  auto offer = [&](int32_t id, float v) {
    if (best < 0 || v > best_v) best = id, best_v = v;
  };
  int64_t from = 0;  // first id of the next unbiased run
  for (;;) {
    int64_t next = V;  // the smallest biased id ≥ from
    for (const auto& [id, b] : bias)
      if (id >= from && id < next) next = id;
    if (next > from) {
      const auto run = logits.subspan(static_cast<size_t>(from), static_cast<size_t>(next - from));
      const int32_t at = static_cast<int32_t>(from) + argmax(run);
      offer(at, logits[static_cast<size_t>(at)]);
    }
    if (next >= V) break;
    float v = logits[static_cast<size_t>(next)];
    for (const auto& [id, b] : bias)
      if (id == next) v += b;
    offer(static_cast<int32_t>(next), v);
    from = next + 1;
  }
  return best < 0 ? 0 : best;
}
}  // namespace

size_t Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history) {
  const size_t V = std::min(logits.size(), work_.size());
  if (cfg_.temperature <= 0.0f && cfg_.repetition_penalty == 1.0f && counts_.empty()) {
    // Greedy, plain or with a logit_bias, needs no adjusted copy of the logits: draw() is never called for it
    // (with no bias greedy_with_bias is one argmax over them all).
    order_[0] = greedy_with_bias(logits.first(V), cfg_.logit_bias);
    return 1;
  }
  std::copy_n(logits.begin(), V, work_.begin());
  std::span<float> w(work_.data(), V);
  if (!cfg_.logit_bias.empty() || !counts_.empty()) apply_bias_and_penalties(w, history, cfg_, counts_);

  if (cfg_.repetition_penalty != 1.0f) {
    // HF RepetitionPenaltyLogitsProcessor: each distinct previous token once.
    for (int32_t t : history) {
      if (t < 0 || static_cast<size_t>(t) >= V || seen_[static_cast<size_t>(t)]) continue;
      seen_[static_cast<size_t>(t)] = 1;
      float& l = w[static_cast<size_t>(t)];
      l = l > 0 ? l / cfg_.repetition_penalty : l * cfg_.repetition_penalty;
    }
    for (int32_t t : history)
      if (t >= 0 && static_cast<size_t>(t) < V) seen_[static_cast<size_t>(t)] = 0;
  }
  if (cfg_.temperature <= 0.0f) {
    order_[0] = argmax(w);
    w[static_cast<size_t>(order_[0])] = 1.0f;
    return 1;
  }

  for (float& l : w) l /= cfg_.temperature;
  // Candidates sorted by logit, descending (ties: lower id first, so results are deterministic).
  size_t n = V;
  std::iota(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(V), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    float la = w[static_cast<size_t>(a)], lb = w[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  if (cfg_.top_k > 0 && static_cast<size_t>(cfg_.top_k) < V) {
    n = static_cast<size_t>(cfg_.top_k);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n),
                      order_.begin() + static_cast<std::ptrdiff_t>(V), by_logit);
  } else {
    std::sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(V), by_logit);
  }
  // Softmax over the candidates; probabilities stored back into w for the candidate ids.
  const float maxl = w[static_cast<size_t>(order_[0])];
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(w[static_cast<size_t>(order_[i])] - maxl));
  for (size_t i = 0; i < n; ++i) {
    float& l = w[static_cast<size_t>(order_[i])];
    l = static_cast<float>(std::exp(static_cast<double>(l - maxl)) / sum);
  }
  if (cfg_.top_p < 1.0f) {
    // Smallest prefix whose mass reaches top_p (at least one token), as HF's TopPLogitsWarper keeps.
    double cum = 0;
    size_t keep = 0;
    while (keep < n) {
      cum += w[static_cast<size_t>(order_[keep])];
      ++keep;
      if (cum >= cfg_.top_p) break;
    }
    n = std::max<size_t>(keep, 1);
  }
  if (cfg_.min_p > 0.0f) {
    const float floor = cfg_.min_p * w[static_cast<size_t>(order_[0])];
    size_t keep = 1;
    while (keep < n && w[static_cast<size_t>(order_[keep])] >= floor) ++keep;
    n = keep;
  }
  return n;
}

void apply_bias_and_penalties(std::span<float> w, std::span<const int32_t> history, const SamplingConfig& c,
                              std::span<int32_t> counts) {
  const size_t V = w.size();
  for (const auto& [id, bias] : c.logit_bias)
    if (static_cast<size_t>(id) < V) w[static_cast<size_t>(id)] += bias;
  if (counts.size() < V) return;
  for (int32_t t : history)
    if (t >= 0 && static_cast<size_t>(t) < V) ++counts[static_cast<size_t>(t)];
  // Each distinct token once, clearing its count behind it so the scratch is zero again.
  for (int32_t t : history) {
    if (t < 0 || static_cast<size_t>(t) >= V || counts[static_cast<size_t>(t)] == 0) continue;
    int32_t& n = counts[static_cast<size_t>(t)];
    w[static_cast<size_t>(t)] -= c.presence_penalty + c.frequency_penalty * static_cast<float>(n);
    n = 0;
  }
}

int32_t Sampler::draw(size_t n, int32_t skip) {
  const std::span<float> w(work_);
  double total = 0;
  for (size_t i = 0; i < n; ++i)
    if (order_[i] != skip) total += w[static_cast<size_t>(order_[i])];
  std::uniform_real_distribution<double> u(0.0, total);
  double r = u(rng_);
  int32_t last = order_[0];
  for (size_t i = 0; i < n; ++i) {
    if (order_[i] == skip) continue;
    last = order_[i];
    r -= w[static_cast<size_t>(order_[i])];
    if (r < 0) return order_[i];
  }
  return last;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  const size_t n = distribution(logits, history);
  if (cfg_.temperature <= 0.0f) return order_[0];
  return draw(n, -1);
}

Sampler::Verdict Sampler::verify(std::span<const float> logits, std::span<const int32_t> history, int32_t draft) {
  const size_t n = distribution(logits, history);
  if (cfg_.temperature <= 0.0f) return {order_[0] == draft, order_[0]};
  // p(draft) among the candidates (0 outside them), from the same numbers draw() uses.
  double total = 0, p = 0;
  for (size_t i = 0; i < n; ++i) {
    total += work_[static_cast<size_t>(order_[i])];
    if (order_[i] == draft) p = work_[static_cast<size_t>(order_[i])];
  }
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (p > 0 && u(rng_) < p / total) return {true, draft};
  // Rejected: the residual max(0, p − q) with q the point mass on the draft is p without the draft,
  // renormalized. When the draft was the only candidate (p = total) acceptance was certain above.
  return {false, draw(n, draft)};
}

}  // namespace hfs
