// The multi-sequence engine: sequences, packing policy, per-sequence sampling and stop conditions. The
// rows themselves (slots, masks, padding, method choice) are the IO manager's, shared with the Runner.
#include "hfstatic/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

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
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

struct Engine::Impl {
  struct Seq {
    SequenceId id = -1;
    int32_t index = -1;              // the IO manager's sequence index
    std::vector<int32_t> pending;    // input not yet fed; pending[fed..] remain
    size_t fed = 0;
    std::vector<int32_t> history;    // tokens fed so far (repetition penalty), reserved to the context
    GenerationConfig config;
    std::optional<Sampler> sampler;
    SequenceInfo info;
    Clock::time_point started, last_token;
    int64_t order = 0;               // arrival order
    int64_t served = -1;             // the last step that gave it rows: who waited longest goes first
    int64_t logits_step = -1;        // the step whose part `logits_part` holds its logits
    size_t logits_part = 0;
    // Speculative decoding (config.draft): prompt lookup over its committed tokens or a draft program (from
    // draft_pools[draft_pool]), the draft-count policy, and this step's verification rows (the pending token
    // + drafts; drafts == 0: a plain row).
    std::unique_ptr<DraftSource> draft;
    std::string draft_pool;
    std::optional<DraftPolicy> policy;
    std::vector<int32_t> rows;
    size_t drafts = 0;
    // Structured output (config.constraint): the sequence's matcher over the vocabulary, and its masked
    // logits (sized when it starts); with drafts too, each verification row's mask and masked logits
    // ([rows_max, V] each, sized when it starts), so drafts are checked against the grammar as in the Runner.
    std::unique_ptr<TokenConstraint> constraint;
    std::vector<float> masked;
    std::vector<uint8_t> row_masks;
    std::vector<float> masked_rows;

    int64_t left() const { return static_cast<int64_t>(pending.size() - fed); }
    bool generating() const { return !info.finished && config.max_new_tokens > 0; }
  };

  std::unique_ptr<IOManager> io;
  std::shared_ptr<const Program> program;  // null when built on an IO manager: draft vocabularies by size only
  std::optional<uint64_t> program_id;      // program_identity(), computed by the first session call
  EngineOptions options;
  EngineStats stats;
  std::unordered_map<SequenceId, Seq> seqs;
  SequenceId next_id = 0;
  int64_t arrivals = 0;
  int64_t steps_run = 0;
  bool prefill_turn = false;  // interleaving: the next step is a prefill chunk
  int64_t rows_max = 1;       // the most rows one step may carry with logits for every row

  // Step scratch, reserved at create: packing never allocates.
  std::vector<Seq*> order;
  std::vector<SequenceTokens> parts;
  std::vector<Seq*> part_seq;
  std::vector<StepEvent> events;
  std::vector<int32_t> verified;  // one sequence's verified tokens (verify_drafts)

  // Draft programs by path (or by address, for loaded ones). A sequence drafting with one holds a
  // ProgramDraft of its own (runner and caches); when it finishes or is removed the draft goes back to its
  // pool for the next sequence, so there are never more than sequences drafting at once, and a draft's
  // caches are created when a sequence first needs one, never in a step.
  struct DraftPool {
    std::shared_ptr<const Program> program;
    std::vector<std::unique_ptr<DraftSource>> free;
  };
  std::map<std::string, DraftPool> draft_pools;
  // The vocabulary constrained sequences mask, from the program's tokenizer (built by the first one).
  std::shared_ptr<const TokenVocabulary> constraint_vocab;

  Status check_tokens(std::span<const int32_t> tokens, const char* what) const {
    const int64_t V = io->info().vocab_size;
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || tokens[i] >= V)
        return make_error(ErrorCode::kOutOfRange, std::string("engine: ") + what + ": token " + std::to_string(tokens[i]) +
                                                      " at index " + std::to_string(i) + " is outside the vocabulary [0, " +
                                                      std::to_string(V) + ")");
    return Ok{};
  }
  Status check_start(std::span<const int32_t> tokens, int64_t length, const GenerationConfig& config, const char* what) const {
    if (tokens.empty()) return make_error(ErrorCode::kInvalidArgument, std::string("engine: ") + what + ": no tokens to feed");
    if (config.max_new_tokens < 0)
      return make_error(ErrorCode::kInvalidArgument, std::string("engine: ") + what + ": max_new_tokens must be ≥ 0, got " +
                                                         std::to_string(config.max_new_tokens));
    HFS_TRY_CTX(validate(config.sampling), std::string("engine: ") + what);
    if (config.draft.kind == DraftKind::kProgram && !config.draft.program && config.draft.program_path.empty())
      return make_error(ErrorCode::kInvalidArgument, std::string("engine: ") + what +
                                                         ": GenerationConfig::draft: DraftKind::kProgram needs program_path or program");
    HFS_TRY(check_tokens(tokens, what));
    const int64_t n = static_cast<int64_t>(tokens.size()), N = io->info().context_length;
    if (length + n > N)
      return make_error(ErrorCode::kCapacityExceeded, std::string("engine: ") + what + ": " + std::to_string(n) +
                                                          " tokens do not fit: position " + std::to_string(length) + " + " +
                                                          std::to_string(n) + " > context length " + std::to_string(N));
    return Ok{};
  }

  // The draft program a sequence with `config` drafts with (its pool's free one, or a new one), or null when it
  // drafts otherwise or not at all. Loading or checking the draft fails here, before the sequence changes.
  Result<std::unique_ptr<DraftSource>> acquire_draft(const GenerationConfig& config, std::string* key, const char* what) {
    const DraftConfig& c = config.draft;
    if (c.kind != DraftKind::kProgram || config.max_new_tokens == 0 || rows_max < 2)
      return std::unique_ptr<DraftSource>();
    *key = c.program ? "@" + std::to_string(reinterpret_cast<uintptr_t>(c.program.get())) : c.program_path;
    auto it = draft_pools.find(*key);
    if (it != draft_pools.end() && !it->second.free.empty()) {
      std::unique_ptr<DraftSource> d = std::move(it->second.free.back());
      it->second.free.pop_back();
      return d;
    }
    std::shared_ptr<const Program> prog = it != draft_pools.end() ? it->second.program : nullptr;
    if (!prog) {
      HFS_ASSIGN_OR_RETURN_CTX(prog, draft_program_of(c, options.load), std::string("engine: ") + what);
    }
    auto d = ProgramDraft::create(prog, program.get(), io->info().vocab_size, draft_name(c),
                                  draft_runner_options(options.load, options.io));
    if (!d) return d.error().with_context(std::string("engine: ") + what);
    draft_pools[*key].program = std::move(prog);
    return std::unique_ptr<DraftSource>(std::move(*d));
  }

  // The vocabulary a constrained config masks: its own, or the program's (built once). Null without one.
  Result<std::shared_ptr<const TokenVocabulary>> vocabulary(const GenerationConfig& config, const char* what) {
    if (!config.constraint) return std::shared_ptr<const TokenVocabulary>();
    if (config.constraint_vocab) return config.constraint_vocab;
    if (!constraint_vocab) {
      HFS_ASSIGN_OR_RETURN(constraint_vocab,
                           program_vocabulary(program.get(), io->info().eos_token_ids, std::string("engine: ") + what));
    }
    return constraint_vocab;
  }

  // A draft program goes back to its pool (the next sequence brings it to its own tokens).
  void release_draft(Seq& s) {
    if (!s.draft_pool.empty() && s.draft) draft_pools[s.draft_pool].free.push_back(std::move(s.draft));
    s.draft.reset();
    s.draft_pool.clear();
  }

  void start(Seq& s, std::span<const int32_t> tokens, const GenerationConfig& config,
             std::unique_ptr<DraftSource> program_draft = nullptr, std::string pool = {},
             std::shared_ptr<const TokenVocabulary> vocab = nullptr) {
    s.pending.assign(tokens.begin(), tokens.end());
    s.fed = 0;
    s.config = config;
    if (config.max_new_tokens > 0) s.sampler.emplace(config.sampling, io->info().vocab_size);
    s.info.generated.clear();
    s.info.generated.reserve(static_cast<size_t>(config.max_new_tokens));
    s.info.finished = false;
    s.info.stop = SequenceStop::kNone;
    s.info.error.clear();
    s.info.draft_error.clear();
    s.info.ttft_ms = s.info.max_gap_ms = 0;
    s.started = Clock::now();
    s.order = arrivals++;
    s.logits_step = -1;
    release_draft(s);
    s.policy.reset();
    s.constraint.reset();
    const size_t V = static_cast<size_t>(io->info().vocab_size);
    if (config.constraint && config.max_new_tokens > 0) {
      s.constraint = std::make_unique<TokenConstraint>(config.constraint, std::move(vocab));
      s.masked.resize(V);
    }
    if (program_draft) {
      s.draft = std::move(program_draft);
      s.draft_pool = std::move(pool);
      sync_source(*s.draft, s.history);  // the tokens it shares with its last sequence stay in its caches
    } else if (config.draft.kind == DraftKind::kNgram && config.max_new_tokens > 0 && rows_max >= 2) {
      s.draft = std::make_unique<NgramSource>(io->info().context_length);
      s.draft->commit(s.history);
    }
    if (s.draft) {
      s.policy.emplace(config.draft.max_tokens, io->info().step_sizes);
      s.rows.reserve(static_cast<size_t>(rows_max));
      if (s.constraint) {
        s.row_masks.resize(static_cast<size_t>(rows_max) * V);
        s.masked_rows.resize(static_cast<size_t>(rows_max) * V);
      }
    }
  }

  Seq& make_seq(int32_t index) {
    const SequenceId id = next_id++;
    Seq& s = seqs[id];
    s.id = id;
    s.index = index;
    s.info.id = id;
    s.history.reserve(static_cast<size_t>(io->info().context_length));
    return s;
  }

  Result<Seq*> find(SequenceId id, const char* what) {
    auto it = seqs.find(id);
    if (it == seqs.end())
      return make_error(ErrorCode::kInvalidArgument, std::string("engine: ") + what + ": unknown sequence " + std::to_string(id) +
                                                         " (never added, or removed)");
    return &it->second;
  }

  bool is_stop(const Seq& s, int32_t t) const {
    const auto& eos = io->info().eos_token_ids;
    if (!s.config.ignore_eos && std::find(eos.begin(), eos.end(), t) != eos.end()) return true;
    return std::find(s.config.stop_tokens.begin(), s.config.stop_tokens.end(), t) != s.config.stop_tokens.end();
  }

  void finish(Seq& s, SequenceStop why) {
    release_draft(s);
    s.info.finished = true;
    s.info.stop = why;
    s.pending.clear();
    s.fed = 0;
  }

  // Packs this step's parts: decode rows (one per sequence with a single token left) first, longest
  // waiting first, up to rows_max; then prompt tokens of the others in the rows left. With nothing running, or on
  // an interleaved prefill turn, one prompt's chunk of up to C tokens through the prefill methods instead.
  // A sequence whose next rows need pool blocks the pool cannot give is skipped this step.
  StepLogits pack() {
    parts.clear();
    part_seq.clear();
    order.clear();
    for (auto& [id, s] : seqs)
      if (!s.info.finished && s.left() > 0) order.push_back(&s);
    // Longest waiting first, then first come: when more sequences want rows than a step holds, every one
    // is served in turn.
    std::sort(order.begin(), order.end(), [](const Seq* a, const Seq* b) {
      return a->served != b->served ? a->served < b->served : a->order < b->order;
    });
    int64_t blocks = 0;
    auto take = [&](Seq* s, int64_t n) {
      const int64_t need = io->blocks_needed(s->index, n);
      if (blocks + need > io->free_blocks()) return false;
      blocks += need;
      parts.push_back({s->index, std::span<const int32_t>(s->pending).subspan(s->fed, static_cast<size_t>(n))});
      part_seq.push_back(s);
      return true;
    };
    bool any_decode = false, any_prompt = false;
    for (Seq* s : order) (s->left() == 1 ? any_decode : any_prompt) = true;
    const int64_t C = io->info().prefill_tokens;
    if (any_prompt && (!any_decode || (options.interleave_prefill && prefill_turn))) {
      prefill_turn = false;
      for (Seq* s : order)
        if (s->left() > 1 && take(s, std::min(s->left(), C))) break;
      if (!parts.empty()) return parts[0].tokens.size() == static_cast<size_t>(part_seq[0]->left()) ? StepLogits::kKeep : StepLogits::kSkip;
    }
    int64_t rows = 0;
    for (Seq* s : order)
      if (s->left() == 1 && rows < rows_max && take(s, 1)) ++rows;
    // Drafts next (they are running sequences' tokens too), then prompt tokens in the rows left.
    bool any_drafts = false;
    for (size_t i = 0; i < parts.size() && rows < rows_max; ++i) {
      const int64_t d = add_drafts(*part_seq[i], rows_max - rows, &blocks);
      if (d == 0) continue;
      parts[i].tokens = part_seq[i]->rows;
      rows += d;
      any_drafts = true;
    }
    for (Seq* s : order)
      if (s->left() > 1 && rows < rows_max) {
        const int64_t n = std::min(s->left(), rows_max - rows);
        if (take(s, n)) rows += n;
      }
    prefill_turn = any_prompt;
    return any_drafts ? StepLogits::kAllRows : StepLogits::kKeep;
  }

  // Up to `room` drafts after a running sequence's pending token (0: none, a plain row), within its context,
  // its token budget and the pool; its part's rows then are s.rows.
  int64_t add_drafts(Seq& s, int64_t room, int64_t* blocks) {
    s.drafts = 0;
    if (!s.draft || s.left() != 1) return 0;
    const int64_t len = io->sequence_length(s.index);
    const int64_t budget = s.config.max_new_tokens - static_cast<int64_t>(s.info.generated.size());
    const int64_t k = std::min<int64_t>({s.policy->want(), room, io->info().context_length - len - 1, budget - 1});
    if (k < 1) return 0;
    auto proposed = propose_rows(*s.draft, s.pending[s.fed], k, s.rows);
    if (!proposed) {  // a draft program's step failed: the sequence goes on without drafts, its output the same
      s.info.draft_error = proposed.error().to_string();
      release_draft(s);
      return 0;
    }
    size_t d = *proposed;
    // Under a constraint only the drafts the grammar allows in turn (each kept row's mask is filled).
    if (s.constraint) d = constrain_drafts(*s.constraint, s.rows, d, s.row_masks, static_cast<size_t>(io->info().vocab_size));
    // The pool must hold the extra rows too.
    while (d > 0) {
      const int64_t extra = io->blocks_needed(s.index, 1 + static_cast<int64_t>(d)) - io->blocks_needed(s.index, 1);
      if (*blocks + extra <= io->free_blocks()) {
        *blocks += extra;
        break;
      }
      --d;
    }
    s.rows.resize(1 + d);
    s.drafts = d;
    return static_cast<int64_t>(d);
  }

  // After a successful step: advance every part's sequence; sample where its input is used up, or verify
  // its drafts.
  void after_step(StepLogits kept, double step_ms) {
    const Clock::time_point now = Clock::now();
    int64_t row = 0;  // the part's first row in the step
    for (size_t i = 0; i < parts.size(); ++i) {
      Seq& s = *part_seq[i];
      const size_t n = parts[i].tokens.size();
      s.served = steps_run;
      const int64_t first_row = row;
      row += static_cast<int64_t>(n);
      if (s.drafts > 0) {
        verify_drafts(s, first_row, step_ms, now);
        continue;
      }
      s.history.insert(s.history.end(), parts[i].tokens.begin(), parts[i].tokens.end());
      if (s.draft) s.draft->commit(parts[i].tokens);
      if (s.policy && n == 1 && !s.info.generated.empty()) s.policy->on_decode(step_ms);
      s.fed += n;
      if (s.left() > 0) continue;
      s.logits_step = kept != StepLogits::kSkip ? steps_run : -1;
      s.logits_part = i;
      if (!s.generating()) {
        if (s.config.max_new_tokens == 0) s.pending.clear(), s.fed = 0;
        continue;
      }
      sample(s, io->step_logits(i), now);
    }
  }

  // The sequence's rows were its pending token and s.drafts drafts: each row's logits check the draft after
  // it (Sampler::verify); the accepted drafts and one more token (the replacement for the first rejected
  // draft, or a bonus token from the last row) are generated; the rows after them are forgotten
  // (truncate_sequence), so the caches hold what a step without drafts would have left.
  void verify_drafts(Seq& s, int64_t first_row, double step_ms, Clock::time_point now) {
    const size_t V = static_cast<size_t>(io->info().vocab_size);
    const std::span<const float> all = io->last_step_logits();
    const int64_t base = io->sequence_length(s.index) - static_cast<int64_t>(s.rows.size());
    const size_t n = s.rows.size() * V;
    if (all.size() < static_cast<size_t>(first_row) * V + n)
      s.info.error = "position " + std::to_string(base) + ": the step returned no logits for its draft rows";
    const int64_t budget = s.config.max_new_tokens - static_cast<int64_t>(s.info.generated.size());
    size_t accepted = 0;
    if (s.info.error.empty()) {
      std::span<const float> rows = all.subspan(static_cast<size_t>(first_row) * V, n);
      if (s.constraint) {  // each row's logits masked by the matcher after the tokens before it (add_drafts)
        apply_mask(std::span<const uint8_t>(s.row_masks).first(n), rows, std::span<float>(s.masked_rows).first(n));
        rows = std::span<const float>(s.masked_rows).first(n);
      }
      const Verification v = verify_rows(*s.sampler, rows, V, s.rows, s.history, [&](int32_t t) { return is_stop(s, t); },
                                         budget, verified);
      accepted = v.accepted;
      if (!v.error.empty()) s.info.error = "position " + std::to_string(base + static_cast<int64_t>(v.bad_row)) + ": " + v.error;
      if (s.constraint)  // the matcher follows what was generated
        for (int32_t t : verified)
          if (s.info.error.empty())
            if (Status st = s.constraint->accept(t); !st) s.info.error = st.error().to_string();
    } else {
      s.history.push_back(s.rows[0]);  // as verify_rows would have: the pending token was fed
      verified.clear();
    }
    // Committed: the pending token and every verified token but the last (which becomes pending).
    const int64_t committed = std::max<int64_t>(1, static_cast<int64_t>(verified.size()));
    (void)io->truncate_sequence(s.index, base + committed);  // within the sequence's length: cannot fail
    s.history.resize(static_cast<size_t>(base + committed));
    push_committed(*s.draft, s.rows[0], verified);
    s.policy->on_verify(static_cast<int32_t>(s.drafts), static_cast<int32_t>(accepted), step_ms);
    s.fed = s.pending.size();
    s.logits_step = -1;
    s.drafts = 0;
    if (!s.info.error.empty()) {
      finish(s, SequenceStop::kError);
      events.push_back({s.id, -1, true});
      return;
    }
    stats.draft_tokens += static_cast<int64_t>(s.rows.size()) - 1;
    stats.draft_accepted += static_cast<int64_t>(accepted);
    for (size_t i = 0; i < verified.size() && !s.info.finished; ++i) emit(s, verified[i], now, i + 1 == verified.size());
  }

  void sample(Seq& s, std::span<const float> logits, Clock::time_point now) {
    if (std::string why = unusable_logits(logits); !why.empty() || logits.empty()) {
      s.info.error = "position " + std::to_string(io->sequence_length(s.index) - 1) + ": " +
                     (logits.empty() ? "no logits were computed" : why);
      finish(s, SequenceStop::kError);
      events.push_back({s.id, -1, true});
      return;
    }
    if (s.constraint) {
      // Only tokens that keep the output a valid prefix; an end token only where the grammar is complete.
      auto d = sample_constrained(*s.constraint, *s.sampler, logits, s.history, s.masked);
      if (d && d->token) {
        emit(s, *d->token, now, true);
        return;
      }
      const bool ended = d && s.constraint->complete();
      if (!ended) s.info.error = d ? no_continuation_message(s.info.generated.size()) : d.error().to_string();
      finish(s, ended ? SequenceStop::kStopToken : SequenceStop::kError);
      events.push_back({s.id, -1, true});
      return;
    }
    emit(s, s.sampler->sample(logits, s.history), now, true);
  }

  // A generated token: recorded, announced, and either the sequence's next input or its last token.
  // `last`: no token follows it in this step (tokens before it are already in the caches).
  void emit(Seq& s, int32_t tok, Clock::time_point now, bool last) {
    if (s.info.generated.empty()) s.info.ttft_ms = ms_between(s.started, now);
    else s.info.max_gap_ms = std::max(s.info.max_gap_ms, ms_between(s.last_token, now));
    s.last_token = now;
    s.info.generated.push_back(tok);
    StepEvent ev{s.id, tok, false};
    if (is_stop(s, tok)) finish(s, SequenceStop::kStopToken);
    else if (static_cast<int32_t>(s.info.generated.size()) >= s.config.max_new_tokens) finish(s, SequenceStop::kMaxTokens);
    else if (last && io->sequence_length(s.index) + 1 > io->info().context_length) finish(s, SequenceStop::kContextFull);
    else s.pending.assign(1, tok), s.fed = 0;
    ev.finished = s.info.finished;
    events.push_back(ev);
  }

  // Sequences with input whose next rows no pool block can hold while nothing else could run: each ends
  // alone with kContextFull, so the engine never waits forever on a full pool.
  void end_starved() {
    for (Seq* s : order)
      if (s->left() > 0 && io->blocks_needed(s->index, 1) > io->free_blocks()) {
        s->info.error = "the cache pool has no free block (" + std::to_string(io->info().pool_slots) + " slots shared by every sequence)";
        finish(*s, SequenceStop::kContextFull);
        events.push_back({s->id, -1, true});
      }
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::load(const std::string& path, const EngineOptions& options) {
  HFS_ASSIGN_OR_RETURN(auto program, Program::load(path, options.load));
  return create(std::move(program), options);
}

Result<std::unique_ptr<Engine>> Engine::create(std::shared_ptr<const Program> program, const EngineOptions& options) {
  IOManagerOptions io = options.io;
  io.default_sequence = false;
  HFS_ASSIGN_OR_RETURN(auto m, create_io_manager(program, io));
  HFS_ASSIGN_OR_RETURN(auto e, create(std::move(m), options));
  e->impl_->program = std::move(program);
  return e;
}

Result<std::unique_ptr<Engine>> Engine::create(std::unique_ptr<IOManager> io, const EngineOptions& options) {
  if (!io) return make_error(ErrorCode::kInvalidArgument, "Engine::create: null IOManager");
  auto impl = std::make_unique<Impl>();
  const ModelInfo& info = io->info();
  impl->rows_max = info.step_sizes.empty() ? 1 : info.step_sizes.back();
  const size_t n = static_cast<size_t>(info.max_sequences);
  impl->seqs.reserve(n);
  impl->order.reserve(n);
  impl->parts.reserve(n);
  impl->part_seq.reserve(n);
  impl->events.reserve(n + static_cast<size_t>(impl->rows_max));
  impl->verified.reserve(static_cast<size_t>(impl->rows_max));
  impl->io = std::move(io);
  impl->options = options;
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const ModelInfo& Engine::info() const { return impl_->io->info(); }
IOManager& Engine::io() { return *impl_->io; }
const EngineStats& Engine::stats() const { return impl_->stats; }

Result<SequenceId> Engine::add(std::span<const int32_t> prompt, const GenerationConfig& config) {
  Impl& m = *impl_;
  HFS_TRY(m.check_start(prompt, 0, config, "add"));
  HFS_ASSIGN_OR_RETURN(auto vocab, m.vocabulary(config, "add"));
  std::string pool;
  HFS_ASSIGN_OR_RETURN(auto draft, m.acquire_draft(config, &pool, "add"));
  auto index = m.io->add_sequence();
  if (!index) {
    if (draft) m.draft_pools[pool].free.push_back(std::move(draft));
    return index.error();
  }
  Impl::Seq& s = m.make_seq(*index);
  m.start(s, prompt, config, std::move(draft), std::move(pool), std::move(vocab));
  return s.id;
}

Result<SequenceId> Engine::fork(SequenceId parent, int64_t prefix, std::span<const int32_t> more, const GenerationConfig& config) {
  Impl& m = *impl_;
  HFS_ASSIGN_OR_RETURN(Impl::Seq * p, m.find(parent, "fork"));
  const int64_t held = m.io->sequence_length(p->index);
  if (prefix < 0 || prefix > held)
    return make_error(ErrorCode::kInvalidArgument, "engine: fork: prefix of " + std::to_string(prefix) + " tokens, but sequence " +
                                                       std::to_string(parent) + " holds " + std::to_string(held));
  HFS_TRY(m.check_start(more, prefix, config, "fork"));
  HFS_ASSIGN_OR_RETURN(auto vocab, m.vocabulary(config, "fork"));
  std::string pool;
  HFS_ASSIGN_OR_RETURN(auto draft, m.acquire_draft(config, &pool, "fork"));
  auto index = m.io->fork_sequence(p->index, prefix);
  if (!index) {
    if (draft) m.draft_pools[pool].free.push_back(std::move(draft));
    return index.error();
  }
  std::vector<int32_t> history(p->history.begin(), p->history.begin() + prefix);
  Impl::Seq& s = m.make_seq(*index);
  s.history.insert(s.history.end(), history.begin(), history.end());
  m.start(s, more, config, std::move(draft), std::move(pool), std::move(vocab));
  return s.id;
}

Status Engine::append(SequenceId id, std::span<const int32_t> tokens, const GenerationConfig& config) {
  Impl& m = *impl_;
  HFS_ASSIGN_OR_RETURN(Impl::Seq * s, m.find(id, "append"));
  if (s->left() > 0)
    return make_error(ErrorCode::kInvalidArgument, "engine: append: sequence " + std::to_string(id) + " still has " +
                                                       std::to_string(s->left()) + " tokens to feed or is generating");
  HFS_TRY(m.check_start(tokens, m.io->sequence_length(s->index), config, "append"));
  HFS_ASSIGN_OR_RETURN(auto vocab, m.vocabulary(config, "append"));
  std::string pool;
  HFS_ASSIGN_OR_RETURN(auto draft, m.acquire_draft(config, &pool, "append"));
  m.start(*s, tokens, config, std::move(draft), std::move(pool), std::move(vocab));
  return Ok{};
}

Status Engine::save_session(SequenceId id, const std::string& path) {
  Impl& m = *impl_;
  HFS_ASSIGN_OR_RETURN(Impl::Seq * s, m.find(id, "save_session"));
  HFS_ASSIGN_OR_RETURN(const SessionExpect e, session_expect(m.program.get(), *m.io, &m.program_id));
  SessionFile f;
  f.program_id = e.program_id;
  HFS_ASSIGN_OR_RETURN(f.state, m.io->save_sequence(s->index));
  f.tokens = s->history;
  HFS_TRY_CTX(write_session_file(path, f), "engine: save_session(" + std::to_string(id) + ")");
  return Ok{};
}

Result<SequenceId> Engine::restore_session(const std::string& path) {
  Impl& m = *impl_;
  HFS_ASSIGN_OR_RETURN(const SessionExpect e, session_expect(m.program.get(), *m.io, &m.program_id));
  HFS_ASSIGN_OR_RETURN_CTX(SessionFile f, read_session_file(path, e), "engine: restore_session");
  HFS_TRY_CTX(check_session_tokens(path, f.tokens, info().vocab_size), "engine: restore_session");
  HFS_ASSIGN_OR_RETURN(const int32_t index, m.io->add_sequence());
  if (Status st = m.io->restore_sequence(index, f.state); !st.ok()) {
    (void)m.io->remove_sequence(index);
    return st.error().with_context("engine: restore_session: session file '" + path + "'");
  }
  Impl::Seq& s = m.make_seq(index);
  s.history.insert(s.history.end(), f.tokens.begin(), f.tokens.end());
  s.config.max_new_tokens = 0;  // feed-only and fed: append() continues it
  s.order = m.arrivals++;
  return s.id;
}

Result<std::vector<int32_t>> Engine::session_tokens(const std::string& path) {
  Impl& m = *impl_;
  HFS_ASSIGN_OR_RETURN(const SessionExpect e, session_expect(m.program.get(), *m.io, &m.program_id));
  return read_session_tokens(path, e);
}

Status Engine::remove(SequenceId id) {
  Impl& m = *impl_;
  HFS_ASSIGN_OR_RETURN(Impl::Seq * s, m.find(id, "remove"));
  HFS_TRY(m.io->remove_sequence(s->index));
  m.release_draft(*s);
  m.seqs.erase(id);
  return Ok{};
}

bool Engine::idle() const {
  for (const auto& [id, s] : impl_->seqs)
    if (!s.info.finished && s.left() > 0) return false;
  return true;
}

Result<std::span<const StepEvent>> Engine::step() {
  Impl& m = *impl_;
  m.events.clear();
  if (m.io->needs_reset())
    return make_error(ErrorCode::kNeedsReset, "engine: a previous step failed part-way; the caches cannot be trusted");
  const StepLogits kept = m.pack();
  if (m.parts.empty()) {
    m.end_starved();
    return std::span<const StepEvent>(m.events);
  }
  const Clock::time_point t0 = Clock::now();
  HFS_TRY(m.io->run_step(m.parts, kept));
  const double ms = ms_between(t0, Clock::now());
  int64_t rows = 0;
  for (size_t i = 0; i < m.parts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(m.parts[i].tokens.size());
    rows += n;
    // Feeds back a generated token (with its drafts, when it has some).
    const bool decode = (n == 1 || m.part_seq[i]->drafts > 0) && !m.part_seq[i]->info.generated.empty();
    (decode ? m.stats.decode_rows : m.stats.prompt_rows) += n;
  }
  m.stats.steps += 1;
  m.stats.rows += rows;
  m.stats.padded_rows += m.io->last_step_tokens() - rows;
  m.stats.step_ms += ms;
  m.after_step(kept, ms);
  ++m.steps_run;
  return std::span<const StepEvent>(m.events);
}

std::span<const float> Engine::logits(SequenceId id) const {
  auto it = impl_->seqs.find(id);
  if (it == impl_->seqs.end() || it->second.logits_step != impl_->steps_run - 1) return {};
  return impl_->io->step_logits(it->second.logits_part);
}

Result<SequenceInfo> Engine::sequence(SequenceId id) const {
  auto it = impl_->seqs.find(id);
  if (it == impl_->seqs.end())
    return make_error(ErrorCode::kInvalidArgument, "engine: sequence: unknown sequence " + std::to_string(id));
  SequenceInfo info = it->second.info;
  info.length = impl_->io->sequence_length(it->second.index);
  info.pending = it->second.left();
  return info;
}

std::vector<SequenceId> Engine::sequences() const {
  std::vector<SequenceId> ids;
  for (const auto& [id, s] : impl_->seqs) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace hfs
