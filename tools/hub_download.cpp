// `-m ORG/NAME[@REVISION]`: a checkpoint by Hugging Face Hub name, downloaded into huggingface_hub's cache
// with progress on stderr (a bar on a terminal, one line per file otherwise).
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "common.h"
#include "hfstatic/hub.h"

namespace hfs::cli {
namespace {

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// Draws one file's bar, rewritten in place; a newline when the file is done.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::string repo) : repo_(std::move(repo)), tty_(isatty(STDERR_FILENO) == 1) {}
  void operator()(const hub::DownloadProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (p.done == p.resumed_from && !p.finished) start_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? mib(p.done - p.resumed_from) / secs : 0;
    const std::string resumed = p.resumed_from > 0 ? " (resumed at " + fmt(p.resumed_from) + ")" : "";
    if (!tty_) {
      if (p.finished) std::fprintf(stderr, "hfstatic: downloaded %s/%s, %s%s\n", repo_.c_str(), p.file.c_str(), fmt(p.done).c_str(), resumed.c_str());
      return;
    }
    constexpr int kWidth = 30;
    const double frac = p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0;
    std::string bar(kWidth, ' ');
    for (int i = 0; i < static_cast<int>(frac * kWidth) && i < kWidth; ++i) bar[i] = '#';
    std::fprintf(stderr, "\r%-28.28s [%s] %3d%% %s / %s  %.1f MiB/s\033[K%s", p.file.c_str(), bar.c_str(), static_cast<int>(frac * 100),
                 fmt(p.done).c_str(), p.total >= 0 ? fmt(p.total).c_str() : "?", rate, p.finished ? "\n" : "");
    std::fflush(stderr);
    bar_open_ = !p.finished;
  }
  // A note on a line of its own: a bar being drawn is cleared first and redrawn by the next update.
  void note(const std::string& text) {
    if (bar_open_) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "hfstatic: note: %s\n", text.c_str());
  }

 private:
  static std::string fmt(int64_t bytes) {
    char buf[32];
    if (bytes < (1 << 20))
      std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
    else
      std::snprintf(buf, sizeof buf, "%.1f MiB", mib(bytes));
    return buf;
  }
  std::string repo_;
  bool tty_;
  bool bar_open_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

bool is_hub_name(const std::string& model) {
  std::error_code ec;
  return !std::filesystem::exists(model, ec) && hub::looks_like_repo_ref(model);
}

Result<std::string> hub_checkpoint(const std::string& name) {
  HFS_ASSIGN_OR_RETURN(hub::RepoRef ref, hub::parse_repo_ref(name));
  hub::HubOptions opt = hub::HubOptions::from_env();
  auto printer = std::make_shared<ProgressPrinter>(ref.repo_id);
  opt.on_progress = [printer](const hub::DownloadProgress& p) { (*printer)(p); };
  opt.on_note = [printer](const std::string& text) { printer->note(text); };
  auto dir = hub::download_checkpoint(ref, opt);
  // A mistyped local path reads as a Hub name too: say both, so a 404 from the Hub does not hide the typo.
  if (!dir && dir.error().code() == ErrorCode::kNotFound && !opt.offline)
    return Error(ErrorCode::kNotFound, "'" + name + "' is no file or directory here, and as a Hub name: " + dir.error().message());
  return dir;
}

}  // namespace hfs::cli
