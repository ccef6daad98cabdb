#include "llm/program_draft.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "hfstatic/ext/backend.h"
#include "hfstatic/tokenizer.h"

namespace hfs {
namespace {

using Clock = std::chrono::steady_clock;

std::string quoted(const std::optional<std::string>& s) { return s ? "\"" + *s + "\"" : std::string("(no token)"); }

}  // namespace

Status check_same_vocabulary(const Program* target, int64_t target_vocab, const Program& draft, int64_t draft_vocab,
                             const std::string& draft_name) {
  const std::string who = "draft program " + draft_name;
  auto no_tokenizer = [](const Result<std::shared_ptr<const Tokenizer>>& t) {
    return !t.ok() && t.error().code() == ErrorCode::kNotFound;
  };
  auto tt = target ? Tokenizer::from_program(*target)
                   : Result<std::shared_ptr<const Tokenizer>>(Error(ErrorCode::kNotFound, "no program"));
  auto dt = Tokenizer::from_program(draft);
  if (!tt.ok() && !no_tokenizer(tt)) return tt.error().with_context("the target program's tokenizer");
  if (!dt.ok() && !no_tokenizer(dt)) return dt.error().with_context(who + ": its tokenizer");
  if (tt.ok() != dt.ok())
    return make_error(ErrorCode::kInvalidArgument,
                      who + ": " + (tt.ok() ? "the target embeds a tokenizer and the draft does not"
                                            : "the draft embeds a tokenizer and the target does not") +
                          ": cannot check that they share a vocabulary (export both from checkpoints with the same "
                          "tokenizer.json)");
  if (!tt.ok()) {  // token ids are all the two programs share: their vocabularies must at least be as large
    if (target_vocab != draft_vocab)
      return make_error(ErrorCode::kInvalidArgument, who + ": vocabulary size " + std::to_string(draft_vocab) +
                                                         " differs from the target's " + std::to_string(target_vocab) +
                                                         " (neither program embeds a tokenizer)");
    return Ok{};
  }
  const Tokenizer &a = **tt, &b = **dt;
  const int32_t va = a.vocab_size(), vb = b.vocab_size();
  for (int32_t id = 0; id < std::max(va, vb); ++id) {
    const auto sa = id < va ? a.id_to_token(id) : std::nullopt, sb = id < vb ? b.id_to_token(id) : std::nullopt;
    if (sa == sb) continue;
    std::string msg = who + ": its tokenizer differs from the target's at id " + std::to_string(id) + ": target " +
                      quoted(sa) + ", draft " + quoted(sb);
    if (va != vb) msg += " (vocabulary sizes: target " + std::to_string(va) + ", draft " + std::to_string(vb) + ")";
    return make_error(ErrorCode::kInvalidArgument, msg + "; a draft program must share the target's tokenizer");
  }
  return Ok{};
}

RunnerOptions draft_runner_options(const LoadOptions& load, const IOManagerOptions& io) {
  RunnerOptions o;
  o.load = load;
  o.io = io;
  // One thread for the backends that run a thread pool; the reference backend takes no settings at all.
  for (const std::string& b : o.io.method.backends.backends)
    if (b != kReferenceBackend) o.io.method.backends.settings[b].set("threads", Value(1));
  return o;
}

Result<std::shared_ptr<const Program>> draft_program_of(const DraftConfig& c, const LoadOptions& load) {
  if (c.program) return c.program;
  if (c.program_path.empty())
    return make_error(ErrorCode::kInvalidArgument, "GenerationConfig::draft: DraftKind::kProgram needs program_path or program");
  HFS_ASSIGN_OR_RETURN_CTX(auto prog, Program::load(c.program_path, load), "draft program " + c.program_path);
  return std::shared_ptr<const Program>(std::move(prog));
}

std::string draft_name(const DraftConfig& c) { return c.program_path.empty() ? "(loaded program)" : c.program_path; }

Result<std::unique_ptr<ProgramDraft>> ProgramDraft::create(std::shared_ptr<const Program> draft, const Program* target,
                                                           int64_t target_vocab, const std::string& name,
                                                           const RunnerOptions& options) {
  if (!draft) return make_error(ErrorCode::kInvalidArgument, "draft program " + name + ": null Program");
  auto d = std::unique_ptr<ProgramDraft>(new ProgramDraft());
  RunnerOptions o = options;
  o.on_prefill_progress = nullptr;
  auto runner = Runner::create(draft, o);
  if (!runner) return runner.error().with_context("draft program " + name);
  const ModelInfo& info = (*runner)->info();
  HFS_TRY(check_same_vocabulary(target, target_vocab, *draft, info.vocab_size, name));
  d->program_ = std::move(draft);
  d->runner_ = std::move(*runner);
  d->name_ = name;
  d->target_vocab_ = target_vocab;
  d->context_ = info.context_length;
  d->max_rows_ = info.prefill_tokens;
  for (int64_t t : info.step_sizes) d->max_rows_ = std::max(d->max_rows_, t);
  d->tokens_.reserve(static_cast<size_t>(d->context_) + 1);
  d->fed_.reserve(static_cast<size_t>(d->context_) + 1);
  return d;
}

void ProgramDraft::commit(std::span<const int32_t> tokens) {
  // Past the draft's context nothing more is kept: it proposes nothing from then on.
  const size_t room = static_cast<size_t>(context_ + 1) - std::min(tokens_.size(), static_cast<size_t>(context_ + 1));
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(std::min(room, tokens.size())));
}

void ProgramDraft::rollback(int64_t length) {
  if (length < static_cast<int64_t>(tokens_.size())) tokens_.resize(static_cast<size_t>(std::max<int64_t>(length, 0)));
}

Status ProgramDraft::feed_to(const int32_t* extra) {
  if (runner_->io().needs_reset()) {  // a draft step failed earlier: start its caches over
    runner_->reset();
    fed_.clear();
  }
  const size_t n = tokens_.size() + (extra ? 1 : 0);
  auto at = [&](size_t i) { return i < tokens_.size() ? tokens_[i] : *extra; };
  size_t keep = 0;
  while (keep < std::min(n, fed_.size()) && fed_[keep] == at(keep)) ++keep;
  // Proposing reads the logits after the last token: it is fed again if the caches already hold it.
  if (extra && keep == n) --keep;
  if (keep == n) return Ok{};
  if (static_cast<int64_t>(keep) < runner_->position()) HFS_TRY(runner_->truncate(static_cast<int64_t>(keep)));
  fed_.resize(keep);
  for (size_t i = keep; i < n; ++i) fed_.push_back(at(i));
  const auto t0 = Clock::now();
  Status st = Ok{};
  if (n - keep <= kDecodeFeed) {
    // After a verification: the new pending token, and the last draft when all were accepted. Decode steps:
    // the runner's tail plan would pad them into a prefill method before it has timed a decode step here.
    for (size_t i = keep; i < n && st; ++i, ++steps_) {
      auto r = runner_->decode_step(fed_[i]);
      if (!r) st = r.error();
    }
  } else {
    st = runner_->prefill(std::span<const int32_t>(fed_).subspan(keep));
    ++steps_;
  }
  ms_ += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!st) {
    fed_.resize(static_cast<size_t>(std::min<int64_t>(runner_->position(), static_cast<int64_t>(keep))));
    return st.error().with_context("draft program " + name_);
  }
  return Ok{};
}

Status ProgramDraft::catch_up() {
  if (static_cast<int64_t>(tokens_.size()) > context_) return Ok{};
  return feed_to(nullptr);
}

Result<size_t> ProgramDraft::propose(int32_t last, size_t k, int32_t* out) {
  // The pending token and drafts 1..k−1 are fed; draft k is read from the logits after draft k − 1.
  const int64_t fits = context_ - static_cast<int64_t>(tokens_.size());  // positions left after the committed
  const size_t n_max = std::min<size_t>(k, static_cast<size_t>(std::max<int64_t>(0, std::min(fits, max_rows_))));
  if (n_max == 0) return size_t{0};
  HFS_TRY(feed_to(&last));
  size_t n = 0;
  for (;;) {
    const std::span<const float> logits = runner_->logits();
    if (logits.empty()) break;
    int32_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    if (best >= target_vocab_) break;  // an id the target cannot verify (a larger embedding's padding)
    out[n++] = best;
    if (n == n_max) break;
    const auto t0 = Clock::now();
    auto step = runner_->decode_step(best);
    ms_ += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ++steps_;
    if (!step) return step.error().with_context("draft program " + name_);
    fed_.push_back(best);
  }
  return n;
}

}  // namespace hfs
