// server/metrics.h — the counters, gauges and histograms GET /metrics reports, in Prometheus' text format
// (version 0.0.4). Thread-safe: request threads and the scheduler update it, /metrics renders it.
//
//   Metrics m;
//   m.count_request(200);
//   m.observe_ttft(0.012);
//   std::string text = m.render();   // "# TYPE hfstatic_requests_total counter\n..."
//
// Names (docs/server.md lists them): hfstatic_requests_total{status}, hfstatic_prompt_tokens_total,
// hfstatic_cached_prompt_tokens_total, hfstatic_generated_tokens_total, hfstatic_queue_length,
// hfstatic_busy_sequences, hfstatic_kept_sequences, hfstatic_sequence_slots,
// hfstatic_time_to_first_token_seconds, hfstatic_time_per_output_token_seconds,
// hfstatic_draft_tokens_total, hfstatic_draft_accepted_total, hfstatic_cancelled_requests_total,
// hfstatic_grammar_cache_hits_total, hfstatic_grammar_cache_misses_total.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace hfs::server {

// A cumulative histogram over fixed bucket bounds (seconds).
struct Histogram {
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  5,     10,  30};
  std::array<int64_t, kBounds.size() + 1> counts{};  // the last one: above every bound
  double sum = 0;
  int64_t count = 0;
  void observe(double seconds);
};

class Metrics {
 public:
  void count_request(int status);
  void count_tokens(int64_t prompt, int64_t cached, int64_t generated);
  void count_cancelled();
  void observe_ttft(double seconds);
  void observe_token_gap(double seconds);
  // The scheduler's gauges, set after every change.
  void set_gauges(int64_t queue, int64_t busy, int64_t kept, int64_t slots);
  void set_drafts(int64_t proposed, int64_t accepted);
  // A response_format grammar taken from the cache (hit) or compiled (miss).
  void count_grammar(bool hit);

  int64_t busy() const;
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<int, int64_t> requests_;
  int64_t prompt_ = 0, cached_ = 0, generated_ = 0, cancelled_ = 0;
  int64_t queue_ = 0, busy_ = 0, kept_ = 0, slots_ = 0;
  int64_t draft_tokens_ = 0, draft_accepted_ = 0;
  int64_t grammar_hits_ = 0, grammar_misses_ = 0;
  Histogram ttft_, gap_;
};

}  // namespace hfs::server
