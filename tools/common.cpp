#include "common.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <signal.h>
#include <unistd.h>

namespace hfs::cli {

int fail(const Error& e) {
  std::fprintf(stderr, "hfstatic: %s\n", e.to_string().c_str());
  return 1;
}

Result<std::vector<int32_t>> parse_token_list(const std::string& s) {
  std::vector<int32_t> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string part = s.substr(i, j - i);
    char* end = nullptr;
    long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v > INT32_MAX)
      return make_error(ErrorCode::kInvalidArgument, "token list: '" + part + "' is not a token id (expected e.g. 1,2,3)");
    out.push_back(static_cast<int32_t>(v));
    i = j + 1;
  }
  return out;
}

std::optional<std::vector<int32_t>> parse_count_list(const std::string& s) {
  auto list = parse_token_list(s);  // non-negative integers; a trailing comma and "" parse as lists
  if (!list || list->empty() || s.back() == ',' || std::find(list->begin(), list->end(), 0) != list->end())
    return std::nullopt;
  return std::move(*list);
}

Result<TailPolicy> parse_tail_policy(const std::string& s) {
  if (s == "auto") return TailPolicy::kAuto;
  if (s == "pad") return TailPolicy::kPad;
  if (s == "decode") return TailPolicy::kDecode;
  return make_error(ErrorCode::kInvalidArgument, "--tail: expected auto, pad or decode, got '" + s + "'");
}

const char* stop_reason_name(GenerationResult::Stop s) {
  switch (s) {
    case GenerationResult::Stop::kMaxTokens: return "max_tokens";
    case GenerationResult::Stop::kStopToken: return "stop_token";
    case GenerationResult::Stop::kCancelled: return "cancelled";
    case GenerationResult::Stop::kContextFull: return "context_full";
  }
  return "?";
}

nlohmann::json stats_json(const RunnerStats& s) {
  return {{"load_ms", s.load_ms},
          {"prompt_tokens", s.prompt_tokens},
          {"prefill_ms", s.prefill_ms},
          {"prefill_tok_s", s.prefill_tok_s()},
          {"ttft_ms", s.ttft_ms},
          {"generated_tokens", s.generated_tokens},
          {"decode_ms", s.decode_ms},
          {"decode_tok_s", s.decode_tok_s()},
          {"peak_rss_mib", static_cast<double>(s.peak_rss_bytes) / (1 << 20)},
          {"verify_steps", s.verify_steps},
          {"draft_tokens", s.draft_tokens},
          {"draft_accepted", s.draft_accepted},
          {"draft_program_steps", s.draft_program_steps},
          {"draft_program_ms", s.draft_program_ms},
          {"constraint_steps", s.constraint_steps},
          {"constraint_ms", s.constraint_ms}};
}

void print_stats_line(const RunnerStats& s, std::optional<uint64_t> seed) {
  std::fprintf(stderr,
               "load %.1f ms | prompt %lld tok, %.1f tok/s | ttft %.1f ms | generated %lld tok, decode %.1f tok/s | "
               "peak RSS %.1f MiB",
               s.load_ms, static_cast<long long>(s.prompt_tokens), s.prefill_tok_s(), s.ttft_ms,
               static_cast<long long>(s.generated_tokens), s.decode_tok_s(),
               static_cast<double>(s.peak_rss_bytes) / (1 << 20));
  if (seed) std::fprintf(stderr, " | seed %llu", static_cast<unsigned long long>(*seed));
  std::fprintf(stderr, "\n");
  if (s.verify_steps > 0)
    std::fprintf(stderr, "drafts: %lld proposed, %lld accepted (%.0f%%) | %lld verification steps, %.2f tokens each\n",
                 static_cast<long long>(s.draft_tokens), static_cast<long long>(s.draft_accepted),
                 s.draft_tokens > 0 ? 100.0 * static_cast<double>(s.draft_accepted) / static_cast<double>(s.draft_tokens) : 0.0,
                 static_cast<long long>(s.verify_steps),
                 static_cast<double>(s.draft_accepted + s.verify_steps) / static_cast<double>(s.verify_steps));
  if (s.draft_program_steps > 0)
    std::fprintf(stderr, "draft program: %lld steps, %.1f ms (catch-up prefill and drafting)\n",
                 static_cast<long long>(s.draft_program_steps), s.draft_program_ms);
  if (s.constraint_steps > 0)
    std::fprintf(stderr, "constraint: %.1f us per token (token masks and matcher steps, %lld tokens)\n",
                 1e3 * s.constraint_ms / static_cast<double>(s.constraint_steps), static_cast<long long>(s.constraint_steps));
}

std::function<void(int64_t, int64_t)> prefill_progress_bar() {
  if (!isatty(STDERR_FILENO)) return {};
  return [](int64_t done, int64_t total) {
    if (total < 256) return;  // short prompts finish before a bar is worth drawing
    const int width = 30;
    const int filled = static_cast<int>(width * done / total);
    std::fprintf(stderr, "\rprefill [%.*s%*s] %lld/%lld", filled, "##############################", width - filled, "",
                 static_cast<long long>(done), static_cast<long long>(total));
    if (done == total) std::fprintf(stderr, "\r%*s\r", width + 40, "");
    std::fflush(stderr);
  };
}

namespace {
// The temp file to remove: written before it exists, read only by the handler (unlink is async-signal-safe).
char g_cleanup[4096];
volatile std::sig_atomic_t g_cleanup_set = 0;
void on_terminating_signal(int sig) {
  if (g_cleanup_set) ::unlink(g_cleanup);
  _exit(sig == SIGINT ? 130 : 128 + sig);
}
}  // namespace

void exit_on_interrupt() {
  struct sigaction sa {};
  sa.sa_handler = on_terminating_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void remove_on_interrupt(const std::string& path) {
  g_cleanup_set = 0;
  if (path.empty() || path.size() >= sizeof g_cleanup) return;
  std::memcpy(g_cleanup, path.c_str(), path.size() + 1);
  g_cleanup_set = 1;
}

namespace {
std::atomic<bool> g_interrupted{false};
void on_sigint(int) {
  if (g_interrupted.exchange(true)) _exit(130);
}
}  // namespace

const std::atomic<bool>* install_interrupt_flag() {
  std::signal(SIGINT, on_sigint);
  return &g_interrupted;
}

void reset_interrupt_flag() { g_interrupted.store(false); }

}  // namespace hfs::cli
