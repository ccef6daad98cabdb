// python/src/stepper.h — one generation, a step at a time: tokens, or text pieces with stop strings.
//
// Wraps hfs::Generation for the Python iterator and for generate(): each step() feeds the previous token
// and samples one more (the caller releases the GIL around it). In text mode the ids go through a
// StreamDecoder primed with the preceding context (so "▁there" after a prompt decodes as " there"),
// the token that ended generation (EOS / a stop id) is not rendered, and stop strings cut the text: the
// piece containing one is truncated before it and generation ends. Text that could be the beginning of a
// stop string is held back until it is known not to be one.
//
//   Stepper s(std::move(gen), tokenizer, eos_ids, cfg, stop_strings, context_ids);
//   while (auto piece = s.step_text()) use(*piece);   // Result<optional<string>> — error handling elided
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"

namespace hfs::py_bind {

class Stepper {
 public:
  // `tokenizer` may be null (token mode only). `context` primes the detokenizer (text mode).
  Stepper(std::unique_ptr<Generation> gen, std::shared_ptr<const Tokenizer> tokenizer,
          std::vector<int32_t> eos_ids, const GenerationConfig& config, std::vector<std::string> stop_strings,
          std::span<const int32_t> context);

  // Token mode: the next generated id (stop tokens included, as hfs::Runner::generate reports them).
  [[nodiscard]] Result<std::optional<int32_t>> step_token();
  // Text mode: the next non-empty piece of text; nullopt at the end. May run several steps.
  [[nodiscard]] Result<std::optional<std::string>> step_text();

  bool done() const { return done_; }
  // "max_tokens" | "stop_token" | "cancelled" | "context_full" | "stop_string"; "" while running.
  std::string stop_reason() const;
  const std::vector<int32_t>& tokens() const { return gen_->tokens(); }

 private:
  bool is_stop_token(int32_t t) const;
  // How many trailing bytes of pending_ could still begin a stop string.
  size_t held_back() const;

  std::unique_ptr<Generation> gen_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::unique_ptr<StreamDecoder> decoder_;
  std::vector<int32_t> eos_ids_;
  GenerationConfig config_;
  std::vector<std::string> stop_strings_;
  std::string pending_;  // decoded, not yet returned
  bool done_ = false;
  bool stopped_by_string_ = false;
};

}  // namespace hfs::py_bind
