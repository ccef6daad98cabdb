// `hfstatic bench --sequences B1,B2,...`: aggregate decode throughput of B sequences sharing one program
// (the Engine), for each B, in one process.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "hfstatic/ext/backend.h"
#include "hfstatic/engine.h"
#include "hfstatic/program.h"

namespace hfs::cli {

struct SequencesBench {
  std::vector<int> counts;  // B values, each ≤ the program's max_sequences
  int prompt = 0;           // tokens per sequence's prompt
  int gen = 0;              // tokens each sequence generates
  int reps = 1;             // runs per B (fresh sequences each, the Bs in turn); the median is reported
  bool json = false;
};

// Prints a table (or one JSON object): per B, prefill tok/s over all prompts, aggregate decode tok/s (all
// sequences' tokens from when every one has its first token until the first one finishes ÷ that time),
// per-sequence decode tok/s, the aggregate's
// ratio to B = the first count, rows per step, pad rows, and the packing policy's latency: the worst time to
// first token and the worst wait between two tokens of one sequence. Exit status as the other commands.
// The same measurement on an engine the caller owns (every sequence it adds is removed again), as one JSON
// object: {"prompt_tokens", "gen_tokens", "reps", "max_sequences", "step_sizes", "sequences": [per-B rows]}.
// `hfstatic serve --self-bench` runs it on the server's own engine before serving. Counts outside
// [1, max_sequences] or a prompt + gen beyond the context: kInvalidArgument, nothing run.
[[nodiscard]] Result<nlohmann::json> measure_sequences(Engine& e, const SequencesBench& b);

int bench_sequences(std::shared_ptr<const Program> program, const BackendOptions& backends, const SequencesBench& b);

}  // namespace hfs::cli
