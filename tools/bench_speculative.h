// `hfstatic bench --verify K,...` (what one verification step of K + 1 rows costs next to one decode step)
// and `hfstatic bench --draft ngram|PATH.hfs` (plain decode and speculative decoding on the same prompt, in turn).
// Both measure in one process, taking turns, and report ratios: on a shared machine two things timed
// minutes apart differ by more than what is measured.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hfstatic/ext/backend.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"

namespace hfs::cli {

struct VerifyBench {
  std::vector<int> drafts;  // K values: steps of K + 1 rows
  int prompt = 0;           // tokens in the cache before every measured step
  int pairs = 0;            // decode/step pairs per K, the order alternating
  bool json = false;
};

// Per K: the step method run_step picks for K + 1 rows (step_<T>, T ≥ K + 1), the medians of decode and
// step times and the median of the pairs' ratios (step ÷ decode). Every step is taken back
// (truncate_sequence), so each one sees the same `prompt` tokens.
int bench_verify(std::shared_ptr<const Program> program, const BackendOptions& backends, const VerifyBench& b);

struct DraftBench {
  std::vector<int32_t> prompt;
  int gen = 0;
  int reps = 1;  // pairs of generations (plain, drafted), the order alternating
  DraftConfig draft;
  bool json = false;
};

// Greedy: `gen` tokens after `prompt`, without drafts and with `draft`, `reps` times each. Reports each
// side's decode tok/s (medians), the speedup (the median of the pairs' ratios), the drafts' acceptance
// rate, tokens per target step, and whether both produced the same tokens (they must: exit status 1
// when not).
int bench_draft(std::shared_ptr<const Program> program, const RunnerOptions& options, const DraftBench& b);

}  // namespace hfs::cli
