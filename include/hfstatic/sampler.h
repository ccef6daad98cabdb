// hfstatic/sampler.h — turning logits into the next token.
//
// Order of operations (as HF's logits processors apply them): repetition penalty → temperature →
// top-k → top-p → min-p → draw. temperature == 0 means greedy (argmax, ties → lowest id). Same seed,
// same logits → same tokens. The sampler owns its scratch (sized once for the vocab): sampling never
// allocates in the step loop.
//
//   hfs::SamplingConfig sc; sc.temperature = 0.8f; sc.top_p = 0.95f; sc.seed = 42;
//   hfs::Sampler s(sc, vocab_size);
//   int32_t next = s.sample(logits, recent_tokens);
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"

namespace hfs {

// The temperature the front ends default to (the CLI's run and chat, the server, Python's generate and chat):
// llama.cpp's default. A SamplingConfig itself starts at 0, greedy.
inline constexpr float kDefaultTemperature = 0.8f;

struct HFS_API SamplingConfig {
  float temperature = 0.0f;        // 0 → greedy
  int32_t top_k = 0;               // 0 → off
  float top_p = 1.0f;              // 1 → off
  float min_p = 0.0f;              // 0 → off
  float repetition_penalty = 1.0f; // 1 → off; HF semantics: logit > 0 ? logit / p : logit * p
  uint64_t seed = 0;
  // OpenAI-style penalties, applied before everything above (after logit_bias): each token's logit loses
  // presence_penalty once if it occurs in the history and frequency_penalty per occurrence. 0 → off.
  float presence_penalty = 0.0f;   // in [-2, 2]
  float frequency_penalty = 0.0f;  // in [-2, 2]
  // Added to a token's logit before any other processing (OpenAI's logit_bias; -100 all but bans a token).
  std::vector<std::pair<int32_t, float>> logit_bias{};  // token id ≥ 0, bias finite
};

// A field of a SamplingConfig outside its accepted values, and those values in words.
struct HFS_API InvalidSamplingField {
  std::string_view field;     // "top_p"
  std::string_view expected;  // "a number in (0, 1] (1 = off)"
  double value;               // the field's value
};
// Accepted: temperature finite ≥ 0; top_k ≥ 0; top_p in (0, 1]; min_p in [0, 1]; repetition_penalty finite > 0;
// presence_penalty, frequency_penalty in [-2, 2]; logit_bias ids ≥ 0 with finite biases (NaN is outside every range). The first field outside, in declaration order, or nullopt. Front ends that name
// fields their own way (the CLI's flags) word their errors from this; everyone else calls validate().
HFS_API std::optional<InvalidSamplingField> find_invalid_field(const SamplingConfig& config);
// kInvalidArgument naming the field, its accepted values and the value given, e.g.
// "sampling: top_p: expected a number in (0, 1] (1 = off), got 2". Runner::start/generate call it before
// running anything; a Sampler assumes a config that passes it.
[[nodiscard]] HFS_API Status validate(const SamplingConfig& config);

class HFS_API Sampler {
 public:
  Sampler(const SamplingConfig& config, int64_t vocab_size);
  // `history`: tokens the repetition penalty applies to (prompt + generated, as HF does).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);
  void reseed(uint64_t seed);

  // Speculative decoding with a proposed token `draft` (a point-mass proposal: an n-gram lookup, a greedy
  // draft model): accepted with probability p(draft) under this config's distribution (greedy: iff it is
  // the argmax); when rejected, `token` is drawn from p without the draft, renormalized. The accepted or
  // drawn token is then distributed exactly as sample()'s (Leviathan et al.'s rule with q = δ_draft).
  struct Verdict {
    bool accepted = false;
    int32_t token = 0;  // the draft when accepted, else the replacement
  };
  Verdict verify(std::span<const float> logits, std::span<const int32_t> history, int32_t draft);

 private:
  // The processed distribution: candidates order_[0, n) with probabilities in work_[id] (greedy: the
  // argmax alone). Returns n.
  size_t distribution(std::span<const float> logits, std::span<const int32_t> history);
  // A candidate of order_[0, n) by probability, never `skip`.
  int32_t draw(size_t n, int32_t skip);
  SamplingConfig cfg_;
  std::mt19937_64 rng_;
  std::vector<float> work_;       // [vocab] adjusted logits
  std::vector<int32_t> order_;    // [vocab] candidate ids
  std::vector<uint8_t> seen_;     // [vocab] repetition-penalty marks
  std::vector<int32_t> counts_;   // [vocab] occurrences for the OpenAI penalties; empty when both are 0
};

// logit_bias, then presence/frequency penalties over `history`, on the logits `w` in place. `counts` is
// zero on entry and on return (scratch sized to the vocabulary, or empty when no penalty is set).
HFS_API void apply_bias_and_penalties(std::span<float> w, std::span<const int32_t> history,
                                      const SamplingConfig& config, std::span<int32_t> counts);

// Index of the largest value, lowest index on ties.
HFS_API int32_t argmax(std::span<const float> logits);

}  // namespace hfs
