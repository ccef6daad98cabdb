// tools/sampling_options.h — the sampling options `run` and `chat` share (--temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --seed): one definition, checked at parse time against the library's own ranges
// (hfs::find_invalid_field), so the CLI accepts exactly what Runner::generate accepts.
#pragma once

#include <CLI/CLI.hpp>

#include "hfstatic/llm_runner.h"
#include "hfstatic/sampler.h"

namespace hfs::cli {

// Adds the options to `sub`, writing into `config`; its values when called are the defaults --help shows.
void add_sampling_options(CLI::App& sub, SamplingConfig& config);
// --draft none|ngram and --draft-max K (speculative decoding: GenerationConfig::draft).
void add_draft_options(CLI::App& sub, DraftConfig& config);

}  // namespace hfs::cli
