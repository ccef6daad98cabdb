// tools/sampling_options.h — the sampling options `run` and `chat` share (--temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --presence-penalty, --frequency-penalty, --logit-bias, --seed): one definition, checked at
// parse time against the library's own ranges (hfs::find_invalid_field), so the CLI accepts exactly what
// Runner::generate accepts. The defaults are llama.cpp's (temperature hfs::kDefaultTemperature, top-k 40,
// top-p 0.95, min-p 0.05); the seed is drawn at random unless --seed gives one, and printed with the stats.
#pragma once

#include <CLI/CLI.hpp>

#include "hfstatic/llm_runner.h"
#include "hfstatic/sampler.h"

namespace hfs::cli {

// The CLI's sampling defaults (llama-cli's), before any option.
SamplingConfig default_sampling();
// Adds the options to `sub`, writing into `config`; its values when called are the defaults --help shows.
// The seed is drawn at random here, so a command line without --seed samples differently every run.
void add_sampling_options(CLI::App& sub, SamplingConfig& config);
// A random seed (std::random_device), as a run without --seed uses.
uint64_t random_seed();
// Usage error text when a --logit-bias id is outside the vocabulary of `vocab_size` ids; "" when all fit.
std::string logit_bias_outside(const SamplingConfig& config, int64_t vocab_size);

// --draft none|ngram and --draft-max K (speculative decoding: GenerationConfig::draft).
void add_draft_options(CLI::App& sub, DraftConfig& config);

}  // namespace hfs::cli
