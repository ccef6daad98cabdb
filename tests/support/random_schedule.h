// The random engine schedule the engine and determinism tests share: each iteration draws an operation —
// an arrival (2 in 10), a removal, a fork at a random prefix with a few new tokens, an append (when the
// caller does appends), otherwise a step — and keeps each sequence's fed tokens, so the caller can compare
// what every sequence was shown against its run alone. The caller decides the prompts, the generation
// settings, what a refused arrival must say, how an append is done and what a step records.
//
//   std::map<SequenceId, Rec> live, done;   // Rec: any record with `std::vector<int32_t> fed`
//   test::random_schedule_ops(**engine, rng, 300, live, done, hooks);
//   ASSERT_FALSE(::testing::Test::HasFatalFailure());
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "hfstatic/engine.h"
#include "support/hf_static_fixture.h"

namespace hfs::test {

// Hooks: prompt(rng) → the arriving tokens; config(rng, bool fork) → its GenerationConfig; refused(Error)
// for an arrival the engine turned down; append(id, Rec&) → an append to a live sequence (return at once
// to make it a no-op); step() runs one engine step and records it; static appends(): whether op 4 appends
// (otherwise it is a step, as the other draws).
template <class Rec, class Hooks>
void random_schedule_ops(Engine& e, std::mt19937_64& rng, int iterations, std::map<SequenceId, Rec>& live,
                         std::map<SequenceId, Rec>& done, Hooks& h) {
  for (int iter = 0; iter < iterations; ++iter) {
    const int op = static_cast<int>(rng() % 10);
    const std::vector<SequenceId> ids = e.sequences();
    if (op < 2) {
      const std::vector<int32_t> p = h.prompt(rng);
      auto id = e.add(p, h.config(rng, false));
      if (id) live[*id].fed = p;
      else h.refused(id.error());
    } else if (op == 2 && !ids.empty()) {
      const SequenceId victim = ids[rng() % ids.size()];
      ASSERT_TRUE(e.remove(victim).ok());
      done[victim] = std::move(live[victim]);
      live.erase(victim);
    } else if (op == 3 && !ids.empty()) {
      const SequenceId parent = ids[rng() % ids.size()];
      auto info = e.sequence(parent);
      ASSERT_TRUE(info.ok());
      if (info->length > 0) {
        const int64_t prefix = static_cast<int64_t>(rng() % static_cast<uint64_t>(info->length + 1));
        const std::vector<int32_t> more = random_tokens(1 + static_cast<int>(rng() % 3), 512, rng());
        auto f = e.fork(parent, prefix, more, h.config(rng, true));
        if (f) {
          Rec& t = live[*f];
          t.fed.assign(live[parent].fed.begin(), live[parent].fed.begin() + prefix);
          t.fed.insert(t.fed.end(), more.begin(), more.end());
        }
      }
    } else if (op == 4 && Hooks::appends() && !ids.empty()) {
      const SequenceId id = ids[rng() % ids.size()];
      h.append(id, live[id]);
    } else {
      h.step();
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace hfs::test
