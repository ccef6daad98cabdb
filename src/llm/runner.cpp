// The backend-neutral LLM runner: chunking, tail routing, capacity checks, sampling, statistics.
#include "hfstatic/llm_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

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
  RunnerOptions options;
  RunnerStats stats;
  std::vector<int32_t> history;  // committed tokens (repetition penalty), reserved to capacity at load
  // Measured mean step times drive TailPolicy::kAuto; before any measurement, assume a prefill chunk
  // costs as much as C/4 decode steps (batched matmuls amortize weight reads).
  double prefill_step_ms = 0, decode_step_ms = 0;
  int64_t prefill_steps = 0, decode_steps = 0;

  bool tail_via_decode(int64_t tail) const {
    switch (options.tail) {
      case TailPolicy::kPad: return false;
      case TailPolicy::kDecode: return true;
      case TailPolicy::kAuto: break;
    }
    const int64_t C = io->info().prefill_tokens;
    if (prefill_steps == 0 || decode_steps == 0) return tail * 4 < C;
    return static_cast<double>(tail) * decode_step_ms < prefill_step_ms;
  }

  Status run_prefill_chunk(std::span<const int32_t> chunk) {
    auto t0 = Clock::now();
    HFS_TRY(io->run_prefill(chunk));
    double ms = ms_since(t0);
    prefill_step_ms = (prefill_step_ms * static_cast<double>(prefill_steps) + ms) / static_cast<double>(prefill_steps + 1);
    ++prefill_steps;
    history.insert(history.end(), chunk.begin(), chunk.end());
    return Ok{};
  }
  Status run_decode(int32_t token) {
    auto t0 = Clock::now();
    HFS_TRY(io->run_decode(token));
    double ms = ms_since(t0);
    decode_step_ms = (decode_step_ms * static_cast<double>(decode_steps) + ms) / static_cast<double>(decode_steps + 1);
    ++decode_steps;
    history.push_back(token);
    return Ok{};
  }

  Error capacity_error(int64_t n) const {
    return make_error(ErrorCode::kCapacityExceeded,
                      std::to_string(n) + " tokens do not fit: position " + std::to_string(io->position()) + " + " +
                          std::to_string(n) + " > context length " + std::to_string(io->info().context_length) +
                          " (state unchanged; reset() or use a program exported with a longer --context)");
  }

  Status prefill(std::span<const int32_t> tokens) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) return Ok{};
    if (!io->can_accept(n)) return capacity_error(n);  // checked before any write
    const int64_t C = io->info().prefill_tokens;
    auto t0 = Clock::now();
    int64_t done = 0;
    while (n - done >= C) {
      HFS_TRY(run_prefill_chunk(tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(C))));
      done += C;
    }
    const int64_t tail = n - done;
    if (tail > 0) {
      auto rest = tokens.subspan(static_cast<size_t>(done));
      if (tail_via_decode(tail)) {
        for (int32_t t : rest) HFS_TRY(run_decode(t));
      } else {
        HFS_TRY(run_prefill_chunk(rest));
      }
    }
    stats.prompt_tokens += n;
    stats.prefill_ms += ms_since(t0);
    stats.peak_rss_bytes = peak_rss_bytes();
    return Ok{};
  }
};

Runner::Runner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runner::~Runner() = default;

Result<std::unique_ptr<Runner>> Runner::load(const std::string& path, const RunnerOptions& options) {
  auto t0 = Clock::now();
  auto program = Program::load(path, options.load);
  if (!program) return program.error();
  auto r = create(std::move(*program), options);
  if (r) (*r)->impl_->stats.load_ms = ms_since(t0);
  return r;
}

Result<std::unique_ptr<Runner>> Runner::create(std::shared_ptr<const Program> program, const RunnerOptions& options) {
  auto t0 = Clock::now();
  auto io = create_io_manager(std::move(program), options.io);
  if (!io) return io.error();
  auto r = create(std::move(*io), options);
  if (r) (*r)->impl_->stats.load_ms = ms_since(t0);
  return r;
}

Result<std::unique_ptr<Runner>> Runner::create(std::unique_ptr<IOManager> io, const RunnerOptions& options) {
  if (!io) return make_error(ErrorCode::kInvalidArgument, "Runner::create: null IOManager");
  auto impl = std::make_unique<Impl>();
  impl->history.reserve(static_cast<size_t>(io->info().context_length));
  impl->io = std::move(io);
  impl->options = options;
  impl->stats.peak_rss_bytes = peak_rss_bytes();
  return std::unique_ptr<Runner>(new Runner(std::move(impl)));
}

const ModelInfo& Runner::info() const { return impl_->io->info(); }
IOManager& Runner::io() { return *impl_->io; }
Status Runner::prefill(std::span<const int32_t> tokens) { return impl_->prefill(tokens); }

Result<std::span<const float>> Runner::decode_step(int32_t token) {
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

void Runner::reset() {
  impl_->io->reset();
  impl_->history.clear();
}

Result<GenerationResult> Runner::generate(std::span<const int32_t> prompt, const GenerationConfig& config,
                                          const TokenCallback& on_token) {
  Impl& m = *impl_;
  const ModelInfo& info = m.io->info();
  if (prompt.empty() && m.io->last_logits().empty())
    return make_error(ErrorCode::kInvalidArgument, "generate: empty prompt and nothing to continue from");
  if (config.max_new_tokens < 0)
    return make_error(ErrorCode::kInvalidArgument, "generate: max_new_tokens must be ≥ 0, got " +
                                                       std::to_string(config.max_new_tokens));
  auto t0 = Clock::now();
  HFS_TRY(m.prefill(prompt));
  Sampler sampler(config.sampling, info.vocab_size);
  GenerationResult out;
  out.tokens.reserve(static_cast<size_t>(config.max_new_tokens));
  auto is_stop = [&](int32_t t) {
    if (!config.ignore_eos &&
        std::find(info.eos_token_ids.begin(), info.eos_token_ids.end(), t) != info.eos_token_ids.end())
      return true;
    return std::find(config.stop_tokens.begin(), config.stop_tokens.end(), t) != config.stop_tokens.end();
  };
  double decode_ms = 0;
  for (int32_t i = 0; i < config.max_new_tokens; ++i) {
    if (config.cancel && config.cancel->load(std::memory_order_relaxed)) {
      out.stop = GenerationResult::Stop::kCancelled;
      break;
    }
    int32_t tok = sampler.sample(m.io->last_logits(), m.history);
    if (i == 0) m.stats.ttft_ms = ms_since(t0);
    out.tokens.push_back(tok);
    bool go_on = on_token ? on_token(tok) : true;
    if (is_stop(tok)) {
      out.stop = GenerationResult::Stop::kStopToken;
      break;
    }
    if (!go_on) {
      out.stop = GenerationResult::Stop::kCancelled;
      break;
    }
    if (i + 1 == config.max_new_tokens) break;
    if (!m.io->can_accept(1)) {
      out.stop = GenerationResult::Stop::kContextFull;
      break;
    }
    auto td = Clock::now();
    HFS_TRY(m.run_decode(tok));
    decode_ms += ms_since(td);
    m.stats.decode_steps += 1;
  }
  m.stats.generated_tokens += static_cast<int64_t>(out.tokens.size());
  m.stats.decode_ms += decode_ms;
  m.stats.peak_rss_bytes = peak_rss_bytes();
  return out;
}

}  // namespace hfs
