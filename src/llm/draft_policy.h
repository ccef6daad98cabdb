// How many drafts to verify next, from what recent steps measured: the count grows while every draft is
// accepted and shrinks to what was accepted otherwise; drafting pauses (plain decode steps) while
// verification yields fewer tokens per unit of time than decode — text that does not repeat its context
// then costs at most the probing rounds.
//
//   DraftPolicy p(8);
//   int32_t k = p.want();            // 0: decode plainly this step
//   ... p.on_verify(drafted, accepted, ms)  or  p.on_decode(ms)
#pragma once

#include <algorithm>
#include <cstdint>

namespace hfs {

class DraftPolicy {
 public:
  // A pause lasts this many decode steps; then drafting is probed again.
  static constexpr int kPauseSteps = 16;
  // Verification rounds averaged before a pause can start.
  static constexpr int kMinRounds = 3;

  explicit DraftPolicy(int32_t max_k) : max_k_(std::max(1, max_k)), k_(std::min(4, std::max(1, max_k))) {}

  int32_t want() const {
    if (pause_ > 0) return 0;
    // Without a decode step measured there is nothing to compare against: measure one now and then.
    if (decode_ms_ == 0 && rounds_ >= 4 * kMinRounds) return 0;
    return k_;
  }

  void on_decode(double ms) {
    decode_ms_ = decode_ms_ == 0 ? ms : 0.8 * decode_ms_ + 0.2 * ms;
    if (pause_ > 0) --pause_;
  }

  // A verification step: `drafted` drafts (≥ 1) of which `accepted` were, in `ms`.
  void on_verify(int32_t drafted, int32_t accepted, double ms) {
    k_ = accepted == drafted ? std::min(max_k_, 2 * k_) : std::max(1, accepted + 1);
    ++rounds_;
    if (decode_ms_ <= 0 || ms <= 0) return;
    // Tokens this step produced per decode step's worth of time: above 1, drafting pays.
    const double gain = (accepted + 1) / (ms / decode_ms_);
    gain_ = rounds_ == 1 ? gain : 0.7 * gain_ + 0.3 * gain;
    if (rounds_ >= kMinRounds && gain_ < 1.0) {
      pause_ = kPauseSteps;
      rounds_ = 0;
      k_ = std::max(1, k_ / 2);
    }
  }

  bool paused() const { return pause_ > 0; }

 private:
  int32_t max_k_, k_;
  double decode_ms_ = 0;  // moving average of plain decode steps
  double gain_ = 1;       // moving average of tokens per decode-step time in verification steps
  int rounds_ = 0;
  int pause_ = 0;
};

}  // namespace hfs
