// The backend-neutral LLM runner: chunking, tail routing, capacity checks, sampling, statistics.
#include "hfstatic/llm_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "llm/constrained_sample.h"
#include "llm/draft_policy.h"
#include "llm/draft_verify.h"
#include "llm/logits_check.h"
#include "llm/draft_source.h"
#include "llm/program_draft.h"
#include "llm/program_vocabulary.h"
#include "llm/session_file.h"

namespace hfs {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int64_t peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  int64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::atoll(line + 6);
  std::fclose(f);
  return kb * 1024;
}

}  // namespace

struct Runner::Impl {
  std::unique_ptr<IOManager> io;
  std::shared_ptr<const Program> program;  // null when created on an IOManager (tests, custom contracts)
  // The draft program (DraftKind::kProgram), kept across generate() calls that name the same one, so a
  // continued chat feeds it only the new tokens.
  std::unique_ptr<ProgramDraft> program_draft;
  std::string program_draft_path;
  // Constrained generation's vocabulary trie from the program's tokenizer, built once on first use.
  std::shared_ptr<const TokenVocabulary> constraint_vocab;
  RunnerOptions options;
  RunnerStats stats;
  std::vector<int32_t> history;  // committed tokens (repetition penalty, sessions), reserved to capacity at load
  std::optional<uint64_t> program_id;  // program_identity(), computed by the first session call
  Result<SessionExpect> session_expect();
  // The program's prefill step sizes, ascending (the last is C): with step_cost they drive
  // TailPolicy::kAuto.
  std::vector<int64_t> sizes;
  // Tail planning scratch, sized C at create: the estimated cost of the cheapest way to run r tokens and
  // its first step (kDecodeStep or an index into sizes).
  static constexpr int32_t kDecodeStep = -1;
  std::vector<double> plan_cost;
  std::vector<int32_t> plan_step;
  // Set when generation met logits it cannot sample from (see unusable_logits): the caches were computed
  // from the same numbers, so, as after a failed step, nothing runs until reset(). Holds the error's text.
  std::string poisoned;
  // The most rows one step can verify with every row's logits (a step method, or prefill methods returning
  // every row): K drafts + the pending token. 0 or 1: no speculative decoding.
  int64_t verify_rows = 0;

  // The tail plan's cost model, in decode steps: a T-row prefill step costs 1 + (T − 1)/kPlanRows — one
  // pass over the weights, as decode makes, plus the rows' compute, here one more pass per 16 rows (a
  // 64-row chunk ≈ 5 decode steps; the 0.1–0.5B benchmark shapes measure 4–7 on a 2-core CPU). Fixed, not
  // measured: a plan picked from step times would change with the machine's load from one run to the
  // next, and a prompt's bits with it wherever two plans round differently (docs/determinism.md).
  static constexpr double kPlanRows = 16.0;
  static double step_cost(int64_t rows) { return 1.0 + static_cast<double>(rows - 1) / kPlanRows; }
  double est_prefill(size_t i) const { return step_cost(sizes[i]); }

  // Fills plan_cost / plan_step for 1..tail tokens (tail < C): each step is a full chunk of a smaller
  // prefill size, the rest padded into the smallest method that holds it (not with kDecode), or one
  // decode step (not with kPad).
  // Decode wins only when strictly cheaper, as the C-only rule always had it.
  void plan_tail(int64_t tail) {
    const bool may_pad = options.tail != TailPolicy::kDecode, may_decode = options.tail != TailPolicy::kPad;
    const double d = step_cost(1);
    plan_cost[0] = 0;
    for (int64_t r = 1; r <= tail; ++r) {
      double best = std::numeric_limits<double>::infinity();
      int32_t step = kDecodeStep;
      for (size_t i = 0; i < sizes.size(); ++i) {
        double c;
        if (sizes[i] <= r) c = est_prefill(i) + plan_cost[static_cast<size_t>(r - sizes[i])];
        else if (may_pad && i == prefill_size_index(sizes, r)) c = est_prefill(i);  // the method r pads into
        else continue;
        if (c < best) best = c, step = static_cast<int32_t>(i);
      }
      if (may_decode && d + plan_cost[static_cast<size_t>(r - 1)] < best)
        best = d + plan_cost[static_cast<size_t>(r - 1)], step = kDecodeStep;
      plan_cost[static_cast<size_t>(r)] = best;
      plan_step[static_cast<size_t>(r)] = step;
    }
  }

  Status run_prefill_chunk(std::span<const int32_t> chunk, StepLogits logits) {
    HFS_TRY(io->run_prefill(chunk, logits));
    history.insert(history.end(), chunk.begin(), chunk.end());
    return Ok{};
  }
  Status run_decode(int32_t token) {
    HFS_TRY(io->run_decode(token));
    history.push_back(token);
    return Ok{};
  }

  // A failed step may have written part of the caches (needs_reset): refuse every request with
  // kNeedsReset before anything else is checked, so the caller sees the real cause rather than a
  // capacity or "nothing to continue from" error, and no step runs until reset().
  Status check_usable() const {
    if (io->needs_reset())
      return make_error(ErrorCode::kNeedsReset, "runner: a previous step failed part-way and may have left partial "
                                                "cache writes; call reset() before running again");
    if (!poisoned.empty())
      return make_error(ErrorCode::kNeedsReset, "runner: an earlier step produced unusable logits (" + poisoned +
                                                    "); call reset() before running again");
    return Ok{};
  }

  Error capacity_error(int64_t n) const {
    return make_error(ErrorCode::kCapacityExceeded,
                      std::to_string(n) + " tokens do not fit: position " + std::to_string(io->position()) + " + " +
                          std::to_string(n) + " > context length " + std::to_string(io->info().context_length) +
                          " (state unchanged; reset() or use a program exported with a longer --context)");
  }

  // Prefills `tokens`; *cancelled says whether `cancel` stopped it before one of its steps. The steps run
  // so far stay committed (position() counts them: a prefix of `tokens`) and the stats count those tokens
  // and that time; logits() stay what a step leaves them: after the last committed token, or empty.
  // DraftKind::kProgram: loads the draft program (or takes the loaded one) unless it is the one loaded
  // before, checking its vocabulary against this program's.
  Status load_program_draft(const DraftConfig& c) {
    const bool same = program_draft && (c.program ? program_draft->program() == c.program.get()
                                                   : !c.program_path.empty() && program_draft_path == c.program_path);
    if (same) return Ok{};
    HFS_ASSIGN_OR_RETURN_CTX(auto prog, draft_program_of(c, options.load), "generate");
    HFS_ASSIGN_OR_RETURN(program_draft, ProgramDraft::create(std::move(prog), program.get(), io->info().vocab_size,
                                                             draft_name(c), draft_options()));
    program_draft_path = c.program ? std::string() : c.program_path;
    return Ok{};
  }
  RunnerOptions draft_options() const { return draft_runner_options(options.load, options.io); }

  Status prefill(std::span<const int32_t> tokens, const std::atomic<bool>* cancel, bool* cancelled) {
    *cancelled = false;
    HFS_TRY(check_usable());
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) return Ok{};
    if (!io->can_accept(n)) return capacity_error(n);  // checked before any write
    const int64_t C = io->info().prefill_tokens;
    auto t0 = Clock::now();
    int64_t done = 0;
    auto stop_requested = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
    auto account = [&](int64_t committed) {
      stats.prompt_tokens += committed;
      stats.prefill_ms += ms_since(t0);
      stats.peak_rss_bytes = peak_rss_bytes();
    };
    auto stop_here = [&](int64_t committed) {
      account(committed);
      *cancelled = true;
      return Ok{};
    };
    while (n - done >= C) {
      if (stop_requested()) return stop_here(done);
      // Only the prompt's last step has logits anyone reads: earlier chunks skip the LM head.
      const StepLogits logits = done + C < n ? StepLogits::kSkip : StepLogits::kKeep;
      HFS_TRY(run_prefill_chunk(tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(C)), logits));
      done += C;
      if (options.on_prefill_progress) options.on_prefill_progress(done, n);
    }
    // The tail (< C tokens): the cheapest mix of smaller full chunks, one padded chunk and decode steps.
    if (n > done) {
      plan_tail(n - done);
      for (int64_t r = n - done; r > 0;) {
        if (stop_requested()) return stop_here(n - r);
        const int32_t step = plan_step[static_cast<size_t>(r)];
        auto rest = tokens.subspan(static_cast<size_t>(n - r));
        if (step == kDecodeStep) {
          HFS_TRY(run_decode(rest[0]));
          r -= 1;
        } else {
          const int64_t len = std::min(r, sizes[static_cast<size_t>(step)]);
          HFS_TRY(run_prefill_chunk(rest.first(static_cast<size_t>(len)), len < r ? StepLogits::kSkip : StepLogits::kKeep));
          r -= len;
        }
      }
      if (options.on_prefill_progress) options.on_prefill_progress(n, n);
    }
    account(n);
    return Ok{};
  }
};

Runner::Runner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runner::~Runner() = default;

Result<std::unique_ptr<Runner>> Runner::load(const std::string& path, const RunnerOptions& options) {
  auto t0 = Clock::now();
  HFS_ASSIGN_OR_RETURN(auto program, Program::load(path, options.load));
  auto r = create(std::move(program), options);
  if (r) (*r)->impl_->stats.load_ms = ms_since(t0);
  return r;
}

Result<std::unique_ptr<Runner>> Runner::create(std::shared_ptr<const Program> program, const RunnerOptions& options) {
  auto t0 = Clock::now();
  const std::shared_ptr<const Program> program_ref = program;
  HFS_ASSIGN_OR_RETURN(auto io, create_io_manager(std::move(program), options.io));
  auto r = create(std::move(io), options);
  if (r) (*r)->impl_->stats.load_ms = ms_since(t0);
  if (r) (*r)->impl_->program = program_ref;
  return r;
}

Result<std::unique_ptr<Runner>> Runner::create(std::unique_ptr<IOManager> io, const RunnerOptions& options) {
  if (!io) return make_error(ErrorCode::kInvalidArgument, "Runner::create: null IOManager");
  auto impl = std::make_unique<Impl>();
  impl->history.reserve(static_cast<size_t>(io->info().context_length));
  const ModelInfo& info = io->info();
  impl->sizes = info.prefill_step_sizes;
  if (impl->sizes.empty() || impl->sizes.back() != info.prefill_tokens) impl->sizes = {info.prefill_tokens};
  impl->plan_cost.assign(static_cast<size_t>(info.prefill_tokens), 0.0);
  impl->plan_step.assign(static_cast<size_t>(info.prefill_tokens), Impl::kDecodeStep);
  impl->verify_rows = info.step_sizes.empty() ? 0 : info.step_sizes.back();
  if (info.logits_all) impl->verify_rows = std::max(impl->verify_rows, info.prefill_tokens);
  impl->io = std::move(io);
  impl->options = options;
  impl->stats.peak_rss_bytes = peak_rss_bytes();
  return std::unique_ptr<Runner>(new Runner(std::move(impl)));
}

const ModelInfo& Runner::info() const { return impl_->io->info(); }
IOManager& Runner::io() { return *impl_->io; }
Status Runner::prefill(std::span<const int32_t> tokens, const std::atomic<bool>* cancel) {
  bool cancelled = false;
  HFS_TRY(impl_->prefill(tokens, cancel, &cancelled));
  if (cancelled)
    return make_error(ErrorCode::kCancelled, "prefill cancelled at position " + std::to_string(position()) +
                                                 " (the steps before it stay committed)");
  return Ok{};
}

Result<std::span<const float>> Runner::decode_step(int32_t token) {
  HFS_TRY(impl_->check_usable());
  if (!impl_->io->can_accept(1)) return impl_->capacity_error(1);
  auto t0 = Clock::now();
  HFS_TRY(impl_->run_decode(token));
  impl_->stats.decode_ms += ms_since(t0);
  impl_->stats.decode_steps += 1;
  return impl_->io->last_logits();
}

std::span<const float> Runner::logits() const { return impl_->io->last_logits(); }
bool Runner::can_accept(int64_t n) const { return impl_->io->can_accept(n); }
int64_t Runner::position() const { return impl_->io->position(); }
int64_t Runner::capacity_left() const { return impl_->io->info().context_length - impl_->io->position(); }
const RunnerStats& Runner::stats() const { return impl_->stats; }

Status Runner::truncate(int64_t length) {
  if (length < 0 || length > impl_->io->position())
    return make_error(ErrorCode::kInvalidArgument, "Runner::truncate(" + std::to_string(length) + "): the runner holds " +
                                                       std::to_string(impl_->io->position()) + " positions");
  HFS_TRY(impl_->io->truncate_sequence(0, length));
  if (static_cast<int64_t>(impl_->history.size()) > length) impl_->history.resize(static_cast<size_t>(length));
  return Ok{};
}

void Runner::reset() {
  impl_->io->reset();
  impl_->history.clear();
  impl_->poisoned.clear();
}

Result<SessionExpect> Runner::Impl::session_expect() { return hfs::session_expect(program.get(), *io, &program_id); }

Status Runner::save_session(const std::string& path) {
  HFS_TRY(impl_->check_usable());
  HFS_ASSIGN_OR_RETURN(const SessionExpect e, impl_->session_expect());
  SessionFile s;
  s.program_id = e.program_id;
  HFS_ASSIGN_OR_RETURN(s.state, impl_->io->save_sequence(0));
  s.tokens = impl_->history;
  HFS_TRY_CTX(write_session_file(path, s), "Runner::save_session");
  return Ok{};
}

Status Runner::restore_session(const std::string& path) {
  HFS_ASSIGN_OR_RETURN(const SessionExpect e, impl_->session_expect());
  HFS_ASSIGN_OR_RETURN_CTX(SessionFile s, read_session_file(path, e), "Runner::restore_session");
  HFS_TRY_CTX(check_session_tokens(path, s.tokens, info().vocab_size), "Runner::restore_session");
  if (impl_->io->needs_reset()) impl_->io->reset();  // a failed step's caches are not worth keeping
  HFS_TRY_CTX(impl_->io->restore_sequence(0, s.state), "Runner::restore_session: session file '" + path + "'");
  impl_->history = std::move(s.tokens);
  impl_->history.reserve(static_cast<size_t>(info().context_length));
  impl_->poisoned.clear();
  return Ok{};
}

std::span<const int32_t> Runner::tokens() const { return impl_->history; }

struct Generation::Impl {
  Runner::Impl* runner = nullptr;
  GenerationConfig config;
  Sampler sampler;
  std::vector<int32_t> tokens;
  std::optional<int32_t> pending;  // returned but not yet fed
  bool done = false;
  GenerationResult::Stop stop = GenerationResult::Stop::kMaxTokens;
  Clock::time_point started;
  // Speculative decoding (config.draft): the draft source over the committed tokens (prompt lookup, owned
  // here; or the runner's draft program), the policy, and the verified tokens still to hand out (all but
  // the last already committed; the last becomes pending).
  std::unique_ptr<DraftSource> owned_draft;
  DraftSource* draft = nullptr;
  DraftPolicy policy;
  std::vector<int32_t> verified;
  size_t verified_next = 0;
  std::vector<int32_t> rows;  // scratch: the pending token and the drafts of one verification step
  // config.constraint: the matcher over the vocabulary and the masked logits (sized once); with drafts, a
  // mask per verification row and the rows' masked logits.
  std::unique_ptr<TokenConstraint> constraint;
  std::vector<float> masked;
  std::vector<uint8_t> row_masks;    // [verify_rows, V]
  std::vector<float> masked_rows;    // [verify_rows, V]

  Impl(Runner::Impl* r, const GenerationConfig& c, std::shared_ptr<const TokenVocabulary> vocab)
      : runner(r), config(c), sampler(c.sampling, r->io->info().vocab_size),
        policy(c.draft.max_tokens, r->io->info().step_sizes) {
    tokens.reserve(static_cast<size_t>(std::max(0, c.max_new_tokens)));
    const size_t V = static_cast<size_t>(r->io->info().vocab_size);
    if (c.constraint) {
      constraint = std::make_unique<TokenConstraint>(c.constraint, std::move(vocab));
      masked.resize(V);
      if (c.draft.kind != DraftKind::kNone && r->verify_rows >= 2) {
        row_masks.resize(static_cast<size_t>(r->verify_rows) * V);
        masked_rows.resize(static_cast<size_t>(r->verify_rows) * V);
      }
    }
    if (c.draft.kind == DraftKind::kNgram && r->verify_rows >= 2) {
      owned_draft = std::make_unique<NgramSource>(r->io->info().context_length);
      owned_draft->commit(r->history);
      draft = owned_draft.get();
    } else if (c.draft.kind == DraftKind::kProgram && r->verify_rows >= 2) {
      draft = r->program_draft.get();  // brought to the history by Runner::start
    }
    if (draft) {
      rows.reserve(static_cast<size_t>(r->verify_rows));
      verified.reserve(static_cast<size_t>(r->verify_rows));
    }
  }

  // The tokens the caller may still be handed: the budget left, counting the verified ones not yet out.
  int64_t budget() const { return config.max_new_tokens - static_cast<int64_t>(tokens.size()); }

  // Commits the pending token: through a verification step with drafts (*verified = true: `verified` holds
  // the next tokens), or a plain decode step (the logits after it are then io->last_logits()).
  Status advance(int32_t token, bool* verified);
  Status decode_plain(int32_t token);
  // Under a constraint: keeps the drafts (rows[1..]) the grammar allows one after another, and fills each
  // kept row's mask (row_masks) — the tokens allowed after the pending token and the drafts before that row.
  // A row whose mask allows nothing (complete, and no end token allowed) ends the rows before it. Returns the
  // drafts kept (rows is cut to them); the matcher is left where it was.
  size_t constrain_drafts(size_t drafted);
  bool is_stop(int32_t t) const {
    const auto& eos = runner->io->info().eos_token_ids;
    if (!config.ignore_eos && std::find(eos.begin(), eos.end(), t) != eos.end()) return true;
    return std::find(config.stop_tokens.begin(), config.stop_tokens.end(), t) != config.stop_tokens.end();
  }
  std::optional<int32_t> finish(GenerationResult::Stop why) {
    done = true;
    stop = why;
    runner->stats.peak_rss_bytes = peak_rss_bytes();
    return std::nullopt;
  }
};

Generation::Generation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generation::~Generation() = default;
GenerationResult::Stop Generation::stop_reason() const { return impl_->stop; }
const std::vector<int32_t>& Generation::tokens() const { return impl_->tokens; }

Result<std::optional<int32_t>> Generation::next() {
  Impl& g = *impl_;
  Runner::Impl& m = *g.runner;
  if (g.done) return std::optional<int32_t>();
  HFS_TRY(m.check_usable());  // a failed next() leaves the runner needing reset: never resume silently
  if (g.config.cancel && g.config.cancel->load(std::memory_order_relaxed)) return g.finish(GenerationResult::Stop::kCancelled);
  // Verified tokens from the last speculative step go out first, each checked as a sampled token would be.
  if (g.verified_next < g.verified.size()) {
    const int32_t prev = g.tokens.back();
    if (g.is_stop(prev)) return g.finish(GenerationResult::Stop::kStopToken);
    const int32_t tok = g.verified[g.verified_next++];
    g.tokens.push_back(tok);
    if (g.verified_next == g.verified.size()) g.pending = tok;
    m.stats.generated_tokens += 1;
    return std::optional<int32_t>(tok);
  }
  if (g.pending) {
    const int32_t last = *g.pending;
    if (g.is_stop(last)) return g.finish(GenerationResult::Stop::kStopToken);
    if (static_cast<int32_t>(g.tokens.size()) >= g.config.max_new_tokens) return g.finish(GenerationResult::Stop::kMaxTokens);
    if (!m.io->can_accept(1)) return g.finish(GenerationResult::Stop::kContextFull);
    bool verified = false;
    HFS_TRY(g.advance(last, &verified));
    if (verified) return next();  // hands out the first verified token
  } else if (static_cast<int32_t>(g.tokens.size()) >= g.config.max_new_tokens) {
    return g.finish(GenerationResult::Stop::kMaxTokens);
  }
  const std::span<const float> logits = m.io->last_logits();
  if (std::string why = unusable_logits(logits); !why.empty()) {
    // Named by the step that computed them: the prompt's last step for the first token, else the decode
    // step that fed the previous one. Position: of the token those logits follow.
    const std::string at = "position " + std::to_string(m.io->position() - 1);
    const std::string step = g.tokens.empty() ? "the prompt's last step (" + at + ")"
                                              : "decode step " + std::to_string(g.tokens.size()) + " (" + at + ")";
    m.poisoned = step + ": " + why;
    return make_error(ErrorCode::kExecution,
                      "generate: " + m.poisoned + " (non-finite weights or activations?); the runner needs reset()");
  }
  int32_t tok;
  if (g.constraint) {
    HFS_ASSIGN_OR_RETURN(const ConstrainedDraw d, sample_constrained(*g.constraint, g.sampler, logits, m.history, g.masked));
    if (!d.token) {
      if (g.constraint->complete()) return g.finish(GenerationResult::Stop::kStopToken);
      return make_error(ErrorCode::kInvalidArgument, "generate: " + no_continuation_message(g.tokens.size()));
    }
    m.stats.constraint_ms += d.constraint_ms;
    ++m.stats.constraint_steps;
    tok = *d.token;
  } else {
    tok = g.sampler.sample(logits, m.history);
  }
  if (g.tokens.empty()) m.stats.ttft_ms = ms_since(g.started);
  g.tokens.push_back(tok);
  g.pending = tok;
  m.stats.generated_tokens += 1;
  return std::optional<int32_t>(tok);
}

Status Generation::Impl::decode_plain(int32_t token) {
  Runner::Impl& m = *runner;
  auto td = Clock::now();
  HFS_TRY(m.run_decode(token));
  const double ms = ms_since(td);
  m.stats.decode_ms += ms;
  m.stats.decode_steps += 1;
  if (draft) {
    draft->commit(std::span<const int32_t>(&token, 1));
    policy.on_decode(ms);
  }
  pending.reset();
  return Ok{};
}

// With drafts: the pending token and up to K drafts in one multi-row step, each row's logits checked by the
// sampler's rule (Sampler::verify) against the draft that follows it. The accepted drafts and one more
// token — the replacement for the first rejected draft, or a bonus token from the last row — become
// `verified`; the rows after them are forgotten (truncate_sequence: counters only). No draft proposed, or
// the policy pausing: a plain decode step.
Status Generation::Impl::advance(int32_t last, bool* was_verified) {
  *was_verified = false;
  Runner::Impl& m = *runner;
  // Rows: the pending token + K drafts, within the context and the method, and no more drafts than tokens
  // still wanted (the token after the last draft is generated too).
  const int64_t room = m.io->info().context_length - m.io->position();
  const int64_t k = draft ? std::min<int64_t>({policy.want(), m.verify_rows - 1, room - 1, budget() - 1}) : 0;
  if (k < 1) return decode_plain(last);
  // Proposing is timed with the step: a draft program's steps are part of what a round costs.
  auto t0 = Clock::now();
  const double draft_ms0 = m.program_draft ? m.program_draft->ms() : 0;
  const int64_t draft_steps0 = m.program_draft ? m.program_draft->steps() : 0;
  HFS_ASSIGN_OR_RETURN(const size_t drafted, propose_rows(*draft, last, k, rows));
  if (m.program_draft) {
    m.stats.draft_program_ms += m.program_draft->ms() - draft_ms0;
    m.stats.draft_program_steps += m.program_draft->steps() - draft_steps0;
  }
  const size_t drafts = constraint ? constrain_drafts(drafted) : drafted;
  if (drafts == 0) {
    m.stats.decode_ms += ms_since(t0);  // the draft program's time, if it ran
    return decode_plain(last);
  }
  const int64_t base = m.io->position();
  const SequenceTokens part{0, rows};
  HFS_TRY(m.io->run_step(std::span<const SequenceTokens>(&part, 1), StepLogits::kAllRows));
  verified_next = 0;
  const size_t V = static_cast<size_t>(m.io->info().vocab_size);
  std::span<const float> all = m.io->last_step_logits();
  if (constraint) {  // each row's logits masked by the matcher after the tokens before it
    const size_t n = std::min(all.size(), rows.size() * V);
    apply_mask(std::span<const uint8_t>(row_masks).first(n), all.first(n), std::span<float>(masked_rows).first(n));
    all = std::span<const float>(masked_rows).first(n);
  }
  const Verification v = verify_rows(sampler, all, V, rows, m.history, [&](int32_t t) { return is_stop(t); }, budget(),
                                     verified);
  if (constraint) {  // the matcher follows what was generated
    const auto c0 = Clock::now();
    for (int32_t t : verified) HFS_TRY(constraint->accept(t));
    m.stats.constraint_ms += ms_since(c0);
    m.stats.constraint_steps += static_cast<int64_t>(verified.size());
  }
  if (!v.error.empty()) {
    m.poisoned = "verification step (position " + std::to_string(base + static_cast<int64_t>(v.bad_row)) + "): " + v.error;
    return make_error(ErrorCode::kExecution, "generate: " + m.poisoned + " (non-finite weights or activations?); the runner needs reset()");
  }
  // Committed: the pending token and every verified token but the last (a stop token is handed out, never fed).
  const int64_t committed = static_cast<int64_t>(verified.size());
  HFS_TRY(m.io->truncate_sequence(0, base + committed));
  m.history.resize(static_cast<size_t>(base + committed));
  const double ms = ms_since(t0);
  policy.on_verify(static_cast<int32_t>(drafts), static_cast<int32_t>(v.accepted), ms);
  m.stats.decode_ms += ms;
  m.stats.decode_steps += committed;
  m.stats.verify_steps += 1;
  m.stats.draft_tokens += static_cast<int64_t>(drafts);
  m.stats.draft_accepted += static_cast<int64_t>(v.accepted);
  push_committed(*draft, last, verified);
  pending.reset();
  *was_verified = true;
  return Ok{};
}

size_t Generation::Impl::constrain_drafts(size_t drafted) {
  const auto t0 = Clock::now();
  const size_t kept = hfs::constrain_drafts(*constraint, rows, drafted, row_masks,
                                            static_cast<size_t>(runner->io->info().vocab_size));
  runner->stats.constraint_ms += ms_since(t0);
  rows.resize(1 + kept);
  return kept;
}

Status check_draft_support(const ModelInfo& info, const DraftConfig& draft) {
  if (draft.kind == DraftKind::kNone) return Ok{};
  const int64_t rows = std::max<int64_t>(info.step_sizes.empty() ? 0 : info.step_sizes.back(),
                                         info.logits_all ? info.prefill_tokens : 0);
  if (rows >= 2) return Ok{};
  return make_error(ErrorCode::kInvalidArgument,
                    "draft: the program has no step methods to verify drafts with (methods with logits for several "
                    "rows): export it with --step-sizes (e.g. --step-sizes 3,5,9,17), or decode without drafts");
}

Result<std::unique_ptr<Generation>> Runner::start(std::span<const int32_t> prompt, const GenerationConfig& config) {
  Impl& m = *impl_;
  HFS_TRY(m.check_usable());
  if (prompt.empty() && m.io->last_logits().empty())
    return make_error(ErrorCode::kInvalidArgument, "generate: empty prompt and nothing to continue from");
  if (config.max_new_tokens < 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "generate: max_new_tokens must be ≥ 0, got " + std::to_string(config.max_new_tokens));
  HFS_TRY_CTX(validate(config.sampling), "generate");
  std::shared_ptr<const TokenVocabulary> vocab = config.constraint_vocab;
  if (config.constraint && !vocab) {
    if (!m.constraint_vocab) {
      HFS_ASSIGN_OR_RETURN(m.constraint_vocab, program_vocabulary(m.program.get(), m.io->info().eos_token_ids, "generate"));
    }
    vocab = m.constraint_vocab;
  }
  if (config.draft.kind == DraftKind::kProgram) HFS_TRY(m.load_program_draft(config.draft));
  auto t0 = Clock::now();
  bool cancelled = false;
  HFS_TRY(m.prefill(prompt, config.cancel, &cancelled));
  if (config.draft.kind == DraftKind::kProgram && !cancelled && m.verify_rows >= 2) {
    // The draft program catches up on the committed tokens now (the prompt's prefill on its caches), so the
    // first verification round does not pay for it; it counts in the time to the first token.
    ProgramDraft& d = *m.program_draft;
    const double ms0 = d.ms();
    const int64_t steps0 = d.steps();
    sync_source(d, m.history);
    HFS_TRY(d.catch_up());
    m.stats.draft_program_ms += d.ms() - ms0;
    m.stats.draft_program_steps += d.steps() - steps0;
  }
  auto impl = std::make_unique<Generation::Impl>(&m, config, std::move(vocab));
  impl->started = t0;
  if (cancelled) impl->finish(GenerationResult::Stop::kCancelled);  // next() yields nothing
  return std::unique_ptr<Generation>(new Generation(std::move(impl)));
}

Result<GenerationResult> Runner::generate(std::span<const int32_t> prompt, const GenerationConfig& config,
                                          const TokenCallback& on_token) {
  HFS_ASSIGN_OR_RETURN(auto gen, start(prompt, config));
  GenerationResult out;
  for (;;) {
    HFS_ASSIGN_OR_RETURN(std::optional<int32_t> tok, gen->next());
    if (!tok) {
      out.stop = gen->stop_reason();
      break;
    }
    if (on_token && !on_token(*tok)) {
      out.stop = GenerationResult::Stop::kCancelled;
      break;
    }
  }
  out.tokens = gen->tokens();
  return out;
}

}  // namespace hfs
