#include "server/metrics.h"

#include <cstdio>

namespace hfs::server {

void Histogram::observe(double s) {
  size_t i = 0;
  while (i < kBounds.size() && s > kBounds[i]) ++i;
  ++counts[i];
  sum += s;
  ++count;
}

void Metrics::count_request(int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[status];
}

void Metrics::count_tokens(int64_t prompt, int64_t cached, int64_t generated) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_ += prompt;
  cached_ += cached;
  generated_ += generated;
}

void Metrics::count_cancelled() {
  std::lock_guard<std::mutex> l(mu_);
  ++cancelled_;
}

void Metrics::observe_ttft(double s) {
  std::lock_guard<std::mutex> l(mu_);
  ttft_.observe(s);
}

void Metrics::observe_token_gap(double s) {
  std::lock_guard<std::mutex> l(mu_);
  gap_.observe(s);
}

void Metrics::set_gauges(int64_t queue, int64_t busy, int64_t kept, int64_t slots) {
  std::lock_guard<std::mutex> l(mu_);
  queue_ = queue, busy_ = busy, kept_ = kept, slots_ = slots;
}

void Metrics::set_drafts(int64_t proposed, int64_t accepted) {
  std::lock_guard<std::mutex> l(mu_);
  draft_tokens_ = proposed, draft_accepted_ = accepted;
}

void Metrics::count_grammar(bool hit) {
  std::lock_guard<std::mutex> l(mu_);
  ++(hit ? grammar_hits_ : grammar_misses_);
}

int64_t Metrics::busy() const {
  std::lock_guard<std::mutex> l(mu_);
  return busy_;
}

namespace {

void scalar(std::string& out, const char* name, const char* type, const char* help, int64_t v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name,
                static_cast<long long>(v));
  out += buf;
}

void histogram(std::string& out, const char* name, const char* help, const Histogram& h) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  out += buf;
  int64_t cum = 0;
  for (size_t i = 0; i < Histogram::kBounds.size(); ++i) {
    cum += h.counts[i];
    std::snprintf(buf, sizeof buf, "%s_bucket{le=\"%g\"} %lld\n", name, Histogram::kBounds[i], static_cast<long long>(cum));
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%s_bucket{le=\"+Inf\"} %lld\n%s_sum %.9g\n%s_count %lld\n", name,
                static_cast<long long>(h.count), name, h.sum, name, static_cast<long long>(h.count));
  out += buf;
}

}  // namespace

std::string Metrics::render() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string out;
  out += "# HELP hfstatic_requests_total HTTP requests answered, by status code\n# TYPE hfstatic_requests_total counter\n";
  for (const auto& [status, n] : requests_)
    out += "hfstatic_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  scalar(out, "hfstatic_prompt_tokens_total", "counter", "Prompt tokens of completed generation requests", prompt_);
  scalar(out, "hfstatic_cached_prompt_tokens_total", "counter", "Prompt tokens reused from the prompt cache", cached_);
  scalar(out, "hfstatic_generated_tokens_total", "counter", "Tokens generated", generated_);
  scalar(out, "hfstatic_cancelled_requests_total", "counter",
         "Generation requests cancelled (client gone, timeout, shutdown)", cancelled_);
  scalar(out, "hfstatic_queue_length", "gauge", "Requests waiting for a sequence", queue_);
  scalar(out, "hfstatic_busy_sequences", "gauge", "Sequences generating for a request", busy_);
  scalar(out, "hfstatic_kept_sequences", "gauge", "Finished sequences kept for the prompt cache", kept_);
  scalar(out, "hfstatic_sequence_slots", "gauge", "Sequences that can generate at once (--parallel)", slots_);
  scalar(out, "hfstatic_draft_tokens_total", "counter", "Speculative draft tokens verified", draft_tokens_);
  scalar(out, "hfstatic_draft_accepted_total", "counter", "Speculative draft tokens accepted", draft_accepted_);
  scalar(out, "hfstatic_grammar_cache_hits_total", "counter",
         "response_format grammars taken from the grammar cache (no compilation)", grammar_hits_);
  scalar(out, "hfstatic_grammar_cache_misses_total", "counter", "response_format grammars compiled", grammar_misses_);
  histogram(out, "hfstatic_time_to_first_token_seconds", "Request arrival to its first generated token", ttft_);
  histogram(out, "hfstatic_time_per_output_token_seconds", "Time between a request's consecutive generated tokens", gap_);
  return out;
}

}  // namespace hfs::server
