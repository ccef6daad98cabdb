#include "server/metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace hfs::server {
namespace {

TEST(Metrics, PrometheusTextHasCountersGaugesAndCumulativeHistograms) {
  Metrics m;
  m.count_request(200);
  m.count_request(200);
  m.count_request(429);
  m.count_tokens(10, 4, 7);
  m.set_gauges(3, 2, 1, 4);
  m.observe_ttft(0.004);   // bucket le=0.005
  m.observe_ttft(0.2);     // bucket le=0.25
  m.observe_ttft(100);     // above every bound
  m.count_grammar(false);
  m.count_grammar(true);
  m.count_grammar(true);
  const std::string t = m.render();
  auto has = [&](const std::string& line) { return t.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has("hfstatic_requests_total{status=\"200\"} 2"));
  EXPECT_TRUE(has("hfstatic_requests_total{status=\"429\"} 1"));
  EXPECT_TRUE(has("hfstatic_prompt_tokens_total 10"));
  EXPECT_TRUE(has("hfstatic_cached_prompt_tokens_total 4"));
  EXPECT_TRUE(has("hfstatic_generated_tokens_total 7"));
  EXPECT_TRUE(has("hfstatic_queue_length 3"));
  EXPECT_TRUE(has("hfstatic_busy_sequences 2"));
  EXPECT_TRUE(has("# TYPE hfstatic_time_to_first_token_seconds histogram"));
  EXPECT_TRUE(has("hfstatic_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0"));
  EXPECT_TRUE(has("hfstatic_time_to_first_token_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has("hfstatic_time_to_first_token_seconds_bucket{le=\"0.25\"} 2"));
  EXPECT_TRUE(has("hfstatic_time_to_first_token_seconds_bucket{le=\"30\"} 2"));
  EXPECT_TRUE(has("hfstatic_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(has("hfstatic_time_to_first_token_seconds_count 3"));
  EXPECT_TRUE(has("hfstatic_time_to_first_token_seconds_sum 100.204"));
  EXPECT_TRUE(has("hfstatic_time_per_output_token_seconds_count 0"));
  EXPECT_TRUE(has("hfstatic_grammar_cache_hits_total 2"));
  EXPECT_TRUE(has("hfstatic_grammar_cache_misses_total 1"));
  EXPECT_EQ(m.busy(), 2);
}

}  // namespace
}  // namespace hfs::server
