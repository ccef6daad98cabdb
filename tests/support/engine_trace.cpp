#include "support/engine_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hfstatic/llm_runner.h"

namespace hfs::test {

TinyModel solo_of(TinyModel m) {
  m.sequences = 1;
  m.step_sizes = std::nullopt;
  m.pool_slots = 0;
  return m;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<std::vector<float>> solo_logits(const std::string& program, std::span<const int32_t> tokens,
                                            const std::string& backend) {
  RunnerOptions o;
  o.tail = TailPolicy::kPad;
  if (!backend.empty()) o.io.method.backends.backends = {backend};
  auto r = Runner::load(program, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  std::vector<std::vector<float>> out;
  if (!r) return out;
  for (int32_t t : tokens) {
    auto l = (*r)->decode_step(t);
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    if (!l) break;
    out.emplace_back(l->begin(), l->end());
  }
  return out;
}

void step_and_record(Engine& e, std::map<SequenceId, Trace>& traces) {
  auto ev = e.step();
  ASSERT_TRUE(ev.ok()) << ev.error().to_string();
  for (const StepEvent& x : *ev) {
    if (x.token < 0) continue;
    auto info = e.sequence(x.sequence);
    ASSERT_TRUE(info.ok());
    auto l = e.logits(x.sequence);
    ASSERT_FALSE(l.empty());
    Trace& t = traces[x.sequence];
    t.fed.resize(static_cast<size_t>(info->length));
    t.logits[info->length - 1] = {l.begin(), l.end()};
    t.fed.push_back(x.token);
  }
}

void run_to_idle(Engine& e, std::map<SequenceId, Trace>& traces, int max_steps) {
  for (int i = 0; i < max_steps && !e.idle(); ++i) {
    step_and_record(e, traces);
    if (::testing::Test::HasFatalFailure()) return;
  }
  ASSERT_TRUE(e.idle());
}

void expect_matches_solo(const std::string& solo_program, const std::map<SequenceId, Trace>& traces, float tol,
                         const std::string& backend) {
  size_t compared = 0;
  for (const auto& [id, t] : traces) {
    if (t.logits.empty()) continue;  // removed or ended before its first token
    // Up to the last position with logits: the last generated token may never have been fed.
    const size_t upto = static_cast<size_t>(t.logits.rbegin()->first + 1);
    ASSERT_LE(upto, t.fed.size()) << "sequence " << id;
    auto ref = solo_logits(solo_program, std::span<const int32_t>(t.fed).first(upto), backend);
    compared += t.logits.size();
    for (const auto& [pos, l] : t.logits) {
      ASSERT_LT(static_cast<size_t>(pos), ref.size()) << "sequence " << id;
      EXPECT_LE(max_abs_diff(l, ref[static_cast<size_t>(pos)]), tol) << "sequence " << id << " position " << pos;
    }
  }
  EXPECT_GT(compared, 0u);
}

}  // namespace hfs::test
