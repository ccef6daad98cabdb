// `hfstatic bench --context-fill 1k,8k,32k`: decode throughput with that many live tokens in the cache, one
// row per length, in one process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"

namespace hfs::cli {

struct ContextFillBench {
  std::vector<int64_t> lengths;  // live tokens at the last measured step, each ≤ the context
  int gen = 0;                   // decode steps measured per length (ending at that length)
  int reps = 1;                  // runs, the lengths taking turns within each; the median is reported
  bool json = false;
  std::string model;             // as given, for the JSON
};

// "1k,8k,32k" or plain numbers ("1024,8192"): k = 1024. nullopt for anything else (empty parts, 0, signs).
std::optional<std::vector<int64_t>> parse_context_lengths(const std::string& s);

// Per length N: reset, the first N − gen positions skipped without running (IOManager::advance_unwritten:
// their rows hold zeros; attention reads every live row whatever its values, so the cost is that of a
// prefilled cache, and a 32k prefill would take minutes on a CPU), then gen decode steps, greedy, timed.
// Lengths over the context or not above gen: a usage error naming the capacity, nothing run.
int bench_context_fill(std::shared_ptr<const Program> program, const RunnerOptions& options, const ContextFillBench& b);

}  // namespace hfs::cli
