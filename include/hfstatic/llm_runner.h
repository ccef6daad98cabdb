// hfstatic/llm_runner.h — the backend-neutral LLM runner.
//
// Built from injected parts: an IOManager (the contract: buffers, counters, padding) chosen by the
// program's metadata, and a Sampler. The runner splits prompts into prefill chunks, plans the tail
// (smaller chunks, a padded chunk or token-by-token decode), checks capacity before any write, samples, streams tokens,
// and keeps timing statistics. It never knows the backend or the architecture.
//
//   auto r = hfs::Runner::load("model.hfs");
//   if (!r) return r.error();
//   hfs::GenerationConfig g; g.max_new_tokens = 64;
//   std::vector<int32_t> prompt = {1};          // token ids: Tokenizer::encode(text), or your own
//   auto out = (*r)->generate(prompt, g, [](int32_t tok) { std::printf("%d ", tok); return true; });
//   // continuation: the next generate() continues at (*r)->position(); (*r)->reset() starts over.
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/constraint.h"
#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/io_contract.h"
#include "hfstatic/program.h"
#include "hfstatic/sampler.h"

namespace hfs {

class Tokenizer;

// How a prompt's tail (the tokens after its full C-token chunks) runs: a plan of smaller full chunks (where
// the program has prefill variants), at most one padded chunk (the smallest prefill method that holds the
// rest) and decode steps.
enum class TailPolicy : uint8_t {
  kAuto,    // the plan of least cost in a fixed model (never timings: the same plan on every run)
  kPad,     // no decode steps: without variants, always one padded chunk
  kDecode,  // no padded chunk: full chunks of every size, the rest token by token
};

struct HFS_API RunnerOptions {
  IOManagerOptions io;
  TailPolicy tail = TailPolicy::kAuto;
  LoadOptions load;
  // Called after each prefill step with (tokens done, tokens in this prompt): progress bars for long
  // prompts. Runs on the calling thread; keep it cheap.
  std::function<void(int64_t done, int64_t total)> on_prefill_progress;
};

// Speculative decoding: proposed continuations verified K + 1 rows at a time in one multi-row step of the
// program (a step_<T> method, or prefill methods exported with --logits all), accepted by the sampler's
// rule (Sampler::verify), so the output is exactly what decoding without drafts gives: the same tokens
// when greedy, the same distribution when sampling.
//
//   g.draft.kind = hfs::DraftKind::kProgram;
//   g.draft.program_path = "small.hfs";   // or g.draft.program = an already loaded Program
enum class DraftKind : uint8_t {
  kNone,
  kNgram,    // prompt lookup: what followed the latest earlier occurrence of the last tokens (no extra model)
  kProgram,  // a draft program: a smaller export sharing the tokenizer, decoding greedily on its own caches
};

struct HFS_API DraftConfig {
  DraftKind kind = DraftKind::kNone;
  // kProgram: the draft program, loaded (`program`) or by path (`program_path`, loaded by the first
  // generate() that names it). Its tokenizer must be the target's: the same vocabulary size and the same
  // string for every id (checked at load: kInvalidArgument naming the first id that differs and both
  // strings); two programs without embedded tokenizers are compared by vocabulary size only. The Runner
  // keeps the loaded draft (its own IO manager and caches) across generate() calls with the same program,
  // and keeps it in step with the committed tokens: catch-up prefill for a new prompt, counters rolled back
  // to the accepted length after each verification. A draft program with a shorter context than the
  // target stops drafting at its capacity (the output is unchanged). The Engine gives each sequence drafting
  // with a program its own draft runner and caches (reused by later sequences).
  std::string program_path;
  std::shared_ptr<const Program> program;
  // The most drafts per verification step; also capped by the program's largest all-rows method (T − 1),
  // the context left and the tokens still to generate. The count adapts to recent acceptance, and drafting
  // pauses while verification steps produce fewer tokens per unit of time than decode steps.
  int32_t max_tokens = 8;
};

// Whether a program described by `info` can verify the drafts `draft` asks for: that needs a method with logits
// for several rows (step methods: export --step-sizes, or --sequences > 1; or logits for every row). Without
// one, the Runner and Engine decode plainly and never draft; front ends (the CLI's run, chat and serve) call
// this first so that asking for drafts the program cannot use is an error rather than silently nothing:
// kInvalidArgument naming `export --step-sizes`. Ok for DraftKind::kNone.
[[nodiscard]] HFS_API Status check_draft_support(const ModelInfo& info, const DraftConfig& draft);

struct HFS_API GenerationConfig {
  int32_t max_new_tokens = 128;
  DraftConfig draft;
  std::vector<int32_t> stop_tokens;  // in addition to the program's eos ids (unless ignore_eos)
  bool ignore_eos = false;
  SamplingConfig sampling;
  // Checked before every step, prefill steps included: once set, generation stops with kCancelled before
  // the next step runs (a prompt's prefill stops within one chunk; see Runner::prefill for what stays).
  const std::atomic<bool>* cancel = nullptr;
  // Structured output (constraint.h): each step's logits are masked to the tokens that keep the output a
  // valid prefix of `constraint` (then sampled with `sampling` as usual); the program's EOS ids are allowed
  // only where the grammar is complete, special tokens never. The vocabulary's byte trie comes from the
  // program's tokenizer, built by the first constrained generate() and kept by the Runner; a Runner created
  // on an IOManager without a program needs `constraint_vocab`. A constrained generation that reaches
  // max_new_tokens stops with kMaxTokens, its output a valid prefix; one whose grammar is complete with no
  // end token allowed (ignore_eos, or no EOS id) stops with kStopToken. Drafts (`draft`) work under a
  // constraint: drafts the grammar refuses are cut before the verification step, and each verification row
  // is masked by the matcher after the tokens before it, so the output is what plain constrained decoding
  // gives (in the Engine too, per sequence; see docs/structured-output.md).
  std::shared_ptr<const Grammar> constraint;
  std::shared_ptr<const TokenVocabulary> constraint_vocab;
};

struct HFS_API RunnerStats {
  double load_ms = 0;
  int64_t prompt_tokens = 0;
  double prefill_ms = 0;
  int64_t generated_tokens = 0;
  int64_t decode_steps = 0;    // tokens fed through decode (the last generated token is not fed)
  double decode_ms = 0;
  double ttft_ms = 0;          // prompt start → first generated token available
  int64_t peak_rss_bytes = 0;
  // Speculative decoding (GenerationConfig::draft): verification steps, drafts proposed and accepted. Their
  // time and committed tokens count in decode_ms / decode_steps.
  int64_t verify_steps = 0;
  int64_t draft_tokens = 0;
  int64_t draft_accepted = 0;
  // A draft program's own steps (DraftKind::kProgram): its catch-up prefills and decode steps. Drafting
  // time counts in decode_ms as well (it is part of each verification round); catch-up on a new prompt in
  // ttft_ms.
  int64_t draft_program_steps = 0;
  double draft_program_ms = 0;
  // Structured output (GenerationConfig::constraint): time computing token masks and advancing the matcher,
  // over `constraint_steps` sampled tokens (it counts in decode_ms / ttft_ms as well).
  int64_t constraint_steps = 0;
  double constraint_ms = 0;
  double prefill_tok_s() const { return prefill_ms > 0 ? prompt_tokens * 1000.0 / prefill_ms : 0; }
  double decode_tok_s() const { return decode_ms > 0 ? decode_steps * 1000.0 / decode_ms : 0; }
};

struct HFS_API GenerationResult {
  std::vector<int32_t> tokens;  // generated ids (the stop token included if one ended generation)
  enum class Stop : uint8_t { kMaxTokens, kStopToken, kCancelled, kContextFull } stop = Stop::kMaxTokens;
};

// Return false to stop generation after this token.
using TokenCallback = std::function<bool(int32_t token)>;

class Runner;

// Stepwise generation (streaming APIs, Python iterators). Each next() feeds the previously returned
// token (if any) through decode and samples one more. The Generation borrows its Runner: keep the
// Runner alive and do not interleave other calls on it until the Generation is done.
class HFS_API Generation {
 public:
  ~Generation();
  // The next token, or nullopt once generation has ended (stop_reason() says why).
  [[nodiscard]] Result<std::optional<int32_t>> next();
  GenerationResult::Stop stop_reason() const;
  const std::vector<int32_t>& tokens() const;  // generated so far

 private:
  friend class Runner;
  struct Impl;
  explicit Generation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class HFS_API Runner {
 public:
  [[nodiscard]] static Result<std::unique_ptr<Runner>> load(const std::string& path, const RunnerOptions& options = {});
  [[nodiscard]] static Result<std::unique_ptr<Runner>> create(std::shared_ptr<const Program> program,
                                                              const RunnerOptions& options = {});
  // Injection point for tests and custom contracts.
  [[nodiscard]] static Result<std::unique_ptr<Runner>> create(std::unique_ptr<IOManager> io, const RunnerOptions& options = {});
  ~Runner();

  const ModelInfo& info() const;
  IOManager& io();

  // Feeds tokens (any count that fits); afterwards logits() are those after the last token. Only the last
  // step's logits are computed: earlier full chunks run with StepLogits::kSkip (no LM head where the
  // backend partitions it separately), so logits() is empty while on_prefill_progress reports them.
  // Over capacity → kCapacityExceeded, nothing run, state unchanged.
  // A step that fails part-way (the backend's error, naming method and node) keeps position() at the
  // last committed step, empties logits() and sets io().needs_reset(): from then on prefill, decode_step,
  // generate, start and Generation::next fail with kNeedsReset, running nothing, until reset().
  [[nodiscard]] Status prefill(std::span<const int32_t> tokens) { return prefill(tokens, nullptr); }
  // Cancellable: `cancel` is checked before each step. Once it is set, prefill returns kCancelled before the
  // next step; the steps already run stay committed (position() has advanced by a prefix of `tokens`,
  // usable as is: prefill the rest to continue, or reset()), and logits() are those after the last committed
  // token when that step computed them, else empty. generate() and start() pass GenerationConfig::cancel
  // here and end with Stop::kCancelled and no tokens instead of an error.
  [[nodiscard]] Status prefill(std::span<const int32_t> tokens, const std::atomic<bool>* cancel);
  // Feeds one token; returns the logits after it ([vocab], valid until the next call).
  [[nodiscard]] Result<std::span<const float>> decode_step(int32_t token);
  std::span<const float> logits() const;

  // Prefills `prompt` (may be empty when continuing) and samples up to max_new_tokens. Each generated
  // token is passed to on_token before it is fed back. The last generated token is not fed (it is
  // committed by the next call's prompt, as in a chat turn).
  // config.sampling is checked first (validate(), kInvalidArgument naming the field; nothing run).
  // Logits that cannot be sampled from (a NaN or +inf, or every logit −inf: non-finite weights or
  // activations) fail with kExecution naming the step and position ("decode step 3 (position 17): logits
  // contain NaN at id 0"), on every backend alike; the step that computed them stays committed (position(),
  // logits() show it) and, as after a failed step, every later call fails with kNeedsReset until reset().
  [[nodiscard]] Result<GenerationResult> generate(std::span<const int32_t> prompt, const GenerationConfig& config,
                                                  const TokenCallback& on_token = {});
  // Prefills `prompt` and returns a stepwise generator (generate() is this plus a loop).
  [[nodiscard]] Result<std::unique_ptr<Generation>> start(std::span<const int32_t> prompt, const GenerationConfig& config);

  bool can_accept(int64_t n) const;
  int64_t position() const;
  // Forgets the positions from `length` on (counters only: their cache slots are overwritten by later
  // steps). logits() still show the last step's, not those after position length − 1: feed a token
  // before sampling again. length > position() →
  // kInvalidArgument, nothing changes. (A draft program's runner rolls back rejected drafts with it.)
  [[nodiscard]] Status truncate(int64_t length);
  int64_t capacity_left() const;
  void reset();

  // Persistent prompt caches (docs/sessions.md): the committed tokens and their cache rows (every state
  // tensor's rows of the live positions; a sliding layer's window) in one file, written to a temporary
  // beside `path` and renamed over it. The file names the program by the content hash of its file (read
  // once, on the first save or restore). kUnsupported for a runner without a program file.
  [[nodiscard]] Status save_session(const std::string& path);
  // Replaces the runner's state with the file's: position() and the tokens are the saved ones, logits()
  // are empty (feed a token — or prefill the rest of a prompt — to get the next logits; they are bit for
  // bit those after prefilling the same tokens on cpu_ref and cpu_fast). Everything is checked before
  // anything changes, and a refusal names the file with expected vs got: not a session file (kBadMagic),
  // another format version (kBadVersion), another program (kInvalidArgument, both ids), truncated
  // (kTruncated), corrupted (kChecksumMismatch), longer than the context (kCapacityExceeded).
  [[nodiscard]] Status restore_session(const std::string& path);
  // The committed tokens (position() of them): what save_session saves, what a restore brought back.
  std::span<const int32_t> tokens() const;
  const RunnerStats& stats() const;

 private:
  struct Impl;
  friend class Generation;
  explicit Runner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The vocabulary a constrained generation masks with, from a tokenizer: Tokenizer::token_bytes for every
// id, its special tokens excluded, `end_ids` (the program's EOS ids) ending. The runner builds it itself
// from the program's tokenizer; give it as RunnerOptions::constraint_vocab to share one across runners.
[[nodiscard]] HFS_API Result<std::shared_ptr<const TokenVocabulary>> token_vocabulary(const Tokenizer& tok,
                                                                                      std::span<const int32_t> end_ids);

}  // namespace hfs
