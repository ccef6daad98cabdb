#include "server/logprobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace hfs::server {

TokenLogprobs token_logprobs(std::span<const float> logits, std::span<const int32_t> history, const SamplingConfig& config,
                             std::span<const uint8_t> allowed, int32_t token, int32_t k, LogprobScratch& scratch) {
  const size_t V = logits.size();
  std::vector<float>& w = scratch.work;
  w.assign(logits.begin(), logits.end());
  if (!config.logit_bias.empty() || config.presence_penalty != 0 || config.frequency_penalty != 0) {
    scratch.counts.assign(config.presence_penalty != 0 || config.frequency_penalty != 0 ? V : 0, 0);
    apply_bias_and_penalties(w, history, config, scratch.counts);
  }
  if (config.repetition_penalty != 1.0f) {  // HF's processor: each distinct earlier token once
    scratch.seen.assign(V, 0);
    for (int32_t t : history) {
      if (t < 0 || static_cast<size_t>(t) >= V || scratch.seen[static_cast<size_t>(t)]) continue;
      scratch.seen[static_cast<size_t>(t)] = 1;
      float& l = w[static_cast<size_t>(t)];
      l = l > 0 ? l / config.repetition_penalty : l * config.repetition_penalty;
    }
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (!allowed.empty())
    for (size_t i = 0; i < V; ++i)
      if (i >= allowed.size() || !allowed[i]) w[i] = kNegInf;
  float maxl = kNegInf;
  for (float l : w) maxl = std::max(maxl, l);
  double sum = 0;
  for (float l : w)
    if (l != kNegInf) sum += std::exp(static_cast<double>(l) - maxl);
  const double log_z = static_cast<double>(maxl) + std::log(sum);
  auto lp = [&](size_t i) { return w[i] == kNegInf ? kNegInf : static_cast<float>(static_cast<double>(w[i]) - log_z); };
  TokenLogprobs out;
  out.token = token;
  out.logprob = token >= 0 && static_cast<size_t>(token) < V ? lp(static_cast<size_t>(token)) : kNegInf;
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), V);
  if (n == 0) return out;
  scratch.order.resize(V);
  std::iota(scratch.order.begin(), scratch.order.end(), 0);
  std::partial_sort(scratch.order.begin(), scratch.order.begin() + static_cast<std::ptrdiff_t>(n), scratch.order.end(),
                    [&](int32_t a, int32_t b) {
                      const float la = w[static_cast<size_t>(a)], lb = w[static_cast<size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  for (size_t i = 0; i < n; ++i) {
    const size_t id = static_cast<size_t>(scratch.order[i]);
    if (w[id] == kNegInf) break;  // masked: not a possible token
    out.top.emplace_back(static_cast<int32_t>(id), lp(id));
  }
  return out;
}

namespace {

// The length of the valid UTF-8 sequence starting at s[i], or 0.
size_t utf8_length(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t j = 1; j < n; ++j)
    if ((static_cast<unsigned char>(s[i + j]) >> 6) != 0x2) return 0;
  return n;
}

}  // namespace

std::string token_text(const std::string& bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = utf8_length(bytes, i);
    if (n == 0) {
      std::string out = "bytes:";
      for (unsigned char c : bytes) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      }
      return out;
    }
    i += n;
  }
  return bytes;
}

}  // namespace hfs::server
