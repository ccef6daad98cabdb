// Test fixture: tiny hf_static programs exported from random-weight checkpoints, so contract and
// runner tests run on real exported graphs without shipping binaries.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/llm_runner.h"

namespace hfs::test {

struct TinyModel {
  std::string arch = "llama";      // "llama" (global layers), "mistral" (sliding layers when window > 0) or
                                   // "gemma2" (sliding and global layers alternating)
  int chunk = 4;                   // prefill tokens C
  int context = 24;                // context length N
  int sliding_window = 0;          // mistral: W
  std::string cache_dtype = "f32";
  std::string logits = "last";     // "last" | "all"
  int layers = 2;
  uint64_t seed = 7;
  // Smaller prefill methods (ExportOptions::prefill_variants): nullopt = the exporter's default.
  std::optional<std::vector<int64_t>> prefill_variants = std::nullopt;
  int sequences = 1;               // ExportOptions::sequences (> 1: contract version 2)
  // Multi-row step_<T> methods (ExportOptions::step_sizes): nullopt = the exporter's default.
  std::optional<std::vector<int64_t>> step_sizes = std::nullopt;
  int pool_slots = 0;              // ExportOptions::pool_slots (0 = sequences × context)
  // Embed the stories260K fixture's tokenizer (512 pieces, the tiny vocabulary): programs that must share a
  // tokenizer (a target and its draft program).
  bool tokenizer = false;
};

// Exports (once per distinct options, cached for the test binary's lifetime) and returns the path.
std::string tiny_program(const TinyModel& m);
// A Runner over `path` whose methods run on `backend` (nullptr, with a test failure, when it does not load).
std::unique_ptr<Runner> runner_on(const std::string& path, const std::string& backend);
// A fresh directory under the system temp dir, removed at exit.
std::string temp_dir();
// Runner over a program path (aborts the test on failure via gtest assertions in the caller).
Result<std::unique_ptr<Runner>> open_runner(const std::string& path, TailPolicy tail = TailPolicy::kPad);
// One generate() on a fresh Runner over `program`: its result and the runner's stats afterwards (empty, with
// a gtest failure recorded, when loading or generating fails).
struct Outcome {
  GenerationResult out;
  RunnerStats stats;
};
Outcome generate_fresh(const std::string& program, std::span<const int32_t> prompt, const GenerationConfig& g);
// Deterministic pseudo-random token ids in [3, vocab).
std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed);

}  // namespace hfs::test
