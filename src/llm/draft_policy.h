// How many drafts to verify next, from what recent steps measured. Each choice weighs the tokens a step of
// k drafts is expected to yield against what it costs:
//
//   gain(k) = E(k) / cost(k),  E(k) = 1 + a + a² + … + a^k  (a: the recent per-draft acceptance rate)
//
// with cost(k) a verification step of k drafts in decode steps, measured per k (the step method's padding
// included; a method's first, cold run is not a measurement), between measured counts on the line through
// them, beyond them on the line through a decode step. The program's step sizes (rows per step method) make
// counts that run the same method one: a measurement of k drafts is the cost of every count whose k + 1
// rows that method holds, an unmeasured count sits on those lines at the drafts its method holds, and the
// cap fills the method (2 drafts are 3 rows, padded to a 4-row step, so 3 drafts cost the same and yield
// more; 8 drafts run a 16-row step and are priced as 15). The k
// with the best gain is drafted, up to a cap that doubles while every draft is accepted (so a count is tried
// only after the smaller ones paid) and drops to what was accepted otherwise. When no count
// is expected to beat a plain decode step (gain < 1) drafting pauses: plain decode steps, then one probe of
// a single draft. A probe whose drafts are all accepted goes on for kJudgeRounds rounds whatever the
// estimate says: the estimate restarts from even odds, and on a tiny model one accepted draft never looks
// worth a step of 2 rows (2 tokens for 1.7 decode steps at best), while the larger steps that do pay are
// reached only through accepted rounds. A pause that follows a probe which did not pay lasts twice as long
// as the one before, so text that never repeats its context costs a probe every few hundred tokens.
//
// The cost per k is what makes this hold on every model: on a 260K-parameter model a step of k + 1 rows
// costs about k + 1 decode steps (nothing is shared between rows but the launch), and only drafts accepted
// almost surely pay; on a 0.5B model the rows share one pass over the weights and several drafts at half
// acceptance do.
//
//   DraftPolicy p(8, info.step_sizes);
//   int32_t k = p.want();            // 0: decode plainly this step
//   ... p.on_verify(drafted, accepted, ms)  or  p.on_decode(ms)
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace hfs {

class DraftPolicy {
 public:
  // The first pause, in decode steps; each pause after a probe that did not pay doubles, up to kMaxPause.
  static constexpr int kPauseSteps = 8;
  static constexpr int kMaxPause = 512;
  // Verification rounds after a pause before their tokens per unit of time are judged (the backoff
  // resets when they paid).
  static constexpr int kJudgeRounds = 3;

  // step_rows: the rows each step method holds, ascending (empty: every count its own cost).
  explicit DraftPolicy(int32_t max_k, std::vector<int64_t> step_rows = {})
      : max_k_(std::max(1, max_k)),
        cost_(static_cast<size_t>(max_k_) + 1, 0.0),
        ran_(static_cast<size_t>(max_k_) + 1, false),
        step_rows_(std::move(step_rows)) {}

  int32_t want() const {
    // Costs are measured in decode steps: nothing is drafted before a decode step was timed, and a plain
    // one now and then keeps that time current (it grows with the context, as the steps' does).
    if (pause_ > 0 || decode_ms_ <= 0 || refresh_ >= kRefreshRounds) return 0;
    return choice_;
  }

  void on_decode(double ms) {
    // The first decode step after the prompt runs cold (caches, pages): the estimate starts at the second.
    if (ms > 0 && ++decodes_ > 1) decode_ms_ = decode_ms_ == 0 ? ms : update(decode_ms_, ms, 0.2);
    refresh_ = 0;
    if (pause_ > 0 && --pause_ == 0) resume();
  }

  // A verification step: `drafted` drafts (≥ 1) of which `accepted` were, in `ms`.
  void on_verify(int32_t drafted, int32_t accepted, double ms) {
    drafted = std::clamp(drafted, 1, max_k_);
    accepted = std::clamp(accepted, 0, drafted);
    probe_clean_ = probe_clean_ && accepted == drafted;
    // A step method's first run is cold (its scratch pages and code are touched for the first time: 2-3x
    // its cost on a tiny model), as decode's first step is: taken as the method's cost it would never be
    // chosen, so never measured again. The estimate that chose it stands until a warm run is measured.
    const bool cold = !ran_[static_cast<size_t>(drafted)];
    for (int32_t k = 1; k <= max_k_; ++k)
      if (step_of(k) == step_of(drafted)) ran_[static_cast<size_t>(k)] = true;
    // Per-draft acceptance, recent rounds weighing most: `accepted` successes, and a failure where a
    // draft was rejected.
    hits_ = kDecay * hits_ + accepted;
    misses_ = kDecay * misses_ + (accepted < drafted ? 1 : 0);
    cap_ = fill(accepted == drafted ? std::min(max_k_, 2 * drafted) : std::max(1, accepted + 1));
    if (decode_ms_ > 0 && ms > 0) {
      const double steps = cold ? cost(drafted) : ms / decode_ms_;
      if (!cold) {
        double& c = cost_[static_cast<size_t>(drafted)];
        c = c == 0 ? steps : update(c, steps, 0.3);
        for (int32_t k = 1; k <= max_k_; ++k)
          if (k != drafted && step_of(k) == step_of(drafted)) cost_[static_cast<size_t>(k)] = c;
      }
      probe_tokens_ += accepted + 1;
      probe_steps_ += steps;
    }
    ++refresh_;
    if (++probe_rounds_ == kJudgeRounds && probe_tokens_ >= probe_steps_) backoff_ = kPauseSteps;
    choose();
  }

  bool paused() const { return pause_ > 0; }
  // Diagnostics (tests): the per-draft acceptance estimate and a verification step's estimated cost.
  double acceptance() const { return hits_ / (hits_ + misses_); }
  double cost(int32_t k) const {
    k = std::clamp(k, 1, max_k_);
    if (cost_[static_cast<size_t>(k)] > 0) return cost_[static_cast<size_t>(k)];
    // A count costs what its step method's rows do, so the line runs through the drafts each method
    // holds: 8 drafts padded to a 16-row method cost what 15 would.
    int32_t lo = k - 1, hi = k + 1;
    while (lo > 0 && cost_[static_cast<size_t>(lo)] == 0) --lo;
    while (hi <= max_k_ && cost_[static_cast<size_t>(hi)] == 0) ++hi;
    const double x = static_cast<double>(held(k)), x_lo = lo > 0 ? static_cast<double>(held(lo)) : 0.0;
    const double c_lo = lo > 0 ? cost_[static_cast<size_t>(lo)] : 1.0;  // 0 drafts: a decode step
    if (hi <= max_k_) return c_lo + (cost_[static_cast<size_t>(hi)] - c_lo) * (x - x_lo) / (static_cast<double>(held(hi)) - x_lo);
    if (lo == 0) return 1.0 + x / kPriorRows;  // nothing measured yet
    return 1.0 + (c_lo - 1.0) * x / x_lo;
  }
  // Tokens a step of k drafts is expected to commit per decode step's worth of time.
  double gain(int32_t k) const {
    const double a = acceptance();
    double e = 1, p = 1;
    for (int32_t i = 0; i < k; ++i) e += (p *= a);
    return e / cost(k);
  }

 private:
  static constexpr double kDecay = 0.7;
  // Before any measurement: half of the drafts accepted (a weight that decays as rounds come in), and
  // rows that cost a decode step per 16 rows.
  static constexpr double kPriorHits = 1, kPriorMisses = 1;
  static constexpr double kPriorRows = 16;
  // Verification rounds between two plain decode steps that re-time decode.
  static constexpr int kRefreshRounds = 16;

  // A moving average of step times. Noise on a busy machine only ever adds time (a step that waited for a
  // core: 10-50x a decode step, seen on shared 2-core machines), so a sample above the average moves it a
  // third as much as one below, and by at most a factor of 2 per sample; times growing with the context
  // still come through within tens of steps.
  static double update(double avg, double sample, double weight) {
    return sample > avg ? avg + weight / 3 * (std::min(sample, 2 * avg) - avg)
                        : avg + weight * (std::max(sample, avg / 2) - avg);
  }

  // The rows of the step method that runs k drafts (k + 1 rows), or k + 1 without step sizes or beyond them.
  int64_t step_of(int32_t k) const {
    for (int64_t rows : step_rows_)
      if (rows >= k + 1) return rows;
    return k + 1;
  }
  // The drafts the step method running k drafts holds (its rows but one), max_k or not.
  int64_t held(int32_t k) const { return step_of(k) - 1; }
  // The most drafts (up to max_k) the step method running k drafts holds.
  int32_t fill(int32_t k) const { return static_cast<int32_t>(std::clamp<int64_t>(held(k), k, max_k_)); }

  // The count with the best expected gain up to the cap, or a pause when none beats decode.
  void choose() {
    int32_t best = 1;
    double best_gain = gain(1);
    for (int32_t k = 2; k <= cap_; ++k)
      if (const double g = gain(k); g > best_gain) best = k, best_gain = g;
    if (best_gain >= 1.0 || decode_ms_ <= 0 || (probe_clean_ && probe_rounds_ < kJudgeRounds)) {
      choice_ = best;
      return;
    }
    choice_ = 0;
    pause_ = backoff_;
    backoff_ = std::min(kMaxPause, 2 * backoff_);
  }

  // After a pause: one single-draft probe, judged on fresh acceptance (the text may have changed).
  void resume() {
    hits_ = kPriorHits;
    misses_ = kPriorMisses;
    cap_ = 1;
    choice_ = 1;
    probe_rounds_ = 0;
    probe_clean_ = true;
    probe_tokens_ = 0;
    probe_steps_ = 0;
  }

  int32_t max_k_;
  std::vector<double> cost_;  // [k]: a verification step of k drafts in decode steps (0: not measured)
  std::vector<bool> ran_;     // [k]: the step method running k drafts ran before (its next run is warm)
  std::vector<int64_t> step_rows_;
  double decode_ms_ = 0;      // moving average of plain decode steps
  double hits_ = kPriorHits, misses_ = kPriorMisses;  // decayed counts of accepted and rejected drafts
  int decodes_ = 0;
  int refresh_ = 0;           // verification rounds since the last plain decode step
  int32_t cap_ = 1;           // the most drafts the next step may have
  int32_t choice_ = 1;        // drafts for the next step (0 while paused)
  int pause_ = 0;
  int backoff_ = kPauseSteps;
  // Since the last pause: rounds, tokens committed and their cost in decode steps.
  int probe_rounds_ = 0;
  bool probe_clean_ = true;  // every draft since the last pause was accepted
  double probe_tokens_ = 0, probe_steps_ = 0;
};

}  // namespace hfs
