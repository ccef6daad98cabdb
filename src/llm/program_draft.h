// A draft program as a draft source: a smaller export sharing the target's tokenizer, decoding greedily on
// its own Runner (IO manager and caches). Its drafts are its argmax continuations of the committed tokens
// and the pending one; greedy drafts are deterministic given the context, which is what the acceptance
// rule (Sampler::verify) assumes, so sampling with them keeps the plain sampling distribution.
//
// Kept in step with the target lazily: the draft's caches hold `fed_` (committed tokens, then the
// drafts it ran ahead on). Before proposing, the longest prefix of fed_ that the committed tokens and the
// pending token still agree with stays; the rest is forgotten (Runner::truncate: counters only) and the
// missing tokens are fed (decode steps for one or two, else one prefill). After a verification that
// accepted a drafts of k, that is a + 1 tokens kept and nothing fed but the new pending token — or, when
// every draft was accepted, the last draft (never fed: it was proposed from the logits before it) too.
//
// Rollback and sliding windows: the draft runs at most k − 1 positions past the committed length before
// they are forgotten; k is capped at the draft's largest step (prefill chunk or step method, T_max), so a
// forgotten row's write evicts nothing the next kept row still needs (the ring argument of
// io-contract-v1.md §9 with the draft's own T_max).
//
// Capacity: a draft program with a shorter context than the target proposes only while its context holds
// the committed tokens, the pending one and the drafts; past that it proposes nothing (the target decodes
// plainly; the output never changes).
//
//   auto d = ProgramDraft::create(draft_program, target_program.get(), target_vocab, runner_options);
//   d->commit(prompt); d->catch_up();
//   auto n = d->propose(pending, 4, out);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"
#include "llm/draft_source.h"

namespace hfs {

// The draft's tokenizer must be the target's: the same vocabulary size and the same string for every id.
// Both without embedded tokenizers: the models' vocabulary sizes must match. Otherwise kInvalidArgument
// naming `draft_name`, the first differing id and both strings (and both sizes when they differ).
[[nodiscard]] Status check_same_vocabulary(const Program* target, int64_t target_vocab, const Program& draft,
                                           int64_t draft_vocab, const std::string& draft_name);

// The Runner options a draft program runs with: the target's backends, allocator and load options, on the
// calling thread alone (threads = 1 for every backend named). A draft program's steps are small, and a second
// pool of workers would compete with the target's for the same cores (its workers spin between steps),
// which measured a draft decode step at 20x its cost alone on a 2-core machine.
RunnerOptions draft_runner_options(const LoadOptions& load, const IOManagerOptions& io);

// The draft program `c` names (DraftKind::kProgram): the loaded `c.program`, or the file at `c.program_path`
// loaded with `load` (errors say "draft program PATH"); kInvalidArgument when it names neither. Callers add
// who is asking ("generate", "engine: add").
[[nodiscard]] Result<std::shared_ptr<const Program>> draft_program_of(const DraftConfig& c, const LoadOptions& load);
// How messages name it: its path, or "(loaded program)".
std::string draft_name(const DraftConfig& c);

class ProgramDraft final : public DraftSource {
 public:
  // `target` may be null (a runner built on an IO manager): then only the vocabulary sizes are compared.
  [[nodiscard]] static Result<std::unique_ptr<ProgramDraft>> create(std::shared_ptr<const Program> draft,
                                                                    const Program* target, int64_t target_vocab,
                                                                    const std::string& name,
                                                                    const RunnerOptions& options = {});

  std::span<const int32_t> tokens() const override { return tokens_; }
  void commit(std::span<const int32_t> tokens) override;
  void rollback(int64_t length) override;
  Status catch_up() override;
  Result<size_t> propose(int32_t last, size_t k, int32_t* out) override;

  const Program* program() const { return program_.get(); }
  const std::string& name() const { return name_; }
  // The draft runner's own step count and time (catch-up prefill and draft decode steps), cumulative.
  int64_t steps() const { return steps_; }
  double ms() const { return ms_; }

 private:
  ProgramDraft() = default;
  // Tokens fed by decode steps rather than a prefill (what a verification round leaves to feed: 1 or 2).
  static constexpr size_t kDecodeFeed = 2;
  // Brings the draft's caches to tokens_ followed by `extra` (when given), with the logits after the last.
  Status feed_to(const int32_t* extra);

  std::shared_ptr<const Program> program_;
  std::unique_ptr<Runner> runner_;
  std::string name_;
  int64_t target_vocab_ = 0;
  int64_t context_ = 0;
  int64_t max_rows_ = 1;           // the draft's T_max: the most positions it may run ahead and forget
  std::vector<int32_t> tokens_;   // committed tokens
  std::vector<int32_t> fed_;      // what the draft's caches hold, in order
  int64_t steps_ = 0;
  double ms_ = 0;
};

}  // namespace hfs
