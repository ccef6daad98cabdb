#include "backends/cpu_fast/step_profile.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace hfs::cpu_fast {

bool StepProfile::requested() { return std::getenv("HFS_PROFILE") != nullptr; }

void StepProfile::enable(std::vector<std::string> kinds) {
  kinds_ = std::move(kinds);
  seconds_.assign(kinds_.size(), 0.0);
  calls_.assign(kinds_.size(), 0);
  jobs_.assign(kinds_.size(), ThreadPool::Accounting{});
}

void StepProfile::report(std::FILE* out) const {
  if (!on()) return;
  struct Row {
    double seconds = 0;
    int64_t calls = 0;
    ThreadPool::Accounting jobs;
  };
  std::map<std::string, Row> by_kind;
  double total = 0;
  for (size_t i = 0; i < kinds_.size(); ++i) {
    Row& r = by_kind[kinds_[i]];
    r.seconds += seconds_[i];
    r.calls += calls_[i];
    r.jobs += jobs_[i];
    total += seconds_[i];
  }
  std::vector<std::pair<std::string, Row>> rows(by_kind.begin(), by_kind.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  std::fprintf(out, "cpu_fast profile: %zu steps, %lld executes, %.1f ms in steps, %d thread%s\n", kinds_.size(),
               static_cast<long long>(executes_), total * 1e3, threads_, threads_ == 1 ? "" : "s");
  std::fprintf(out, "  %-20s %10s %6s %7s %6s %8s %9s %5s\n", "kind", "ms", "%", "calls", "jobs", "in jobs", "busy/job",
               "woke");
  for (const auto& [kind, r] : rows) {
    std::fprintf(out, "  %-20s %10.2f %5.1f%% %7lld %6lld", kind.c_str(), r.seconds * 1e3,
                 total > 0 ? 100.0 * r.seconds / total : 0.0, static_cast<long long>(r.calls),
                 static_cast<long long>(r.jobs.jobs));
    if (r.jobs.jobs > 0 && r.seconds > 0 && r.jobs.wall_ns > 0)
      std::fprintf(out, " %7.1f%% %9.2f %5lld\n", 100.0 * 1e-9 * static_cast<double>(r.jobs.wall_ns) / r.seconds,
                   static_cast<double>(r.jobs.busy_ns) / static_cast<double>(r.jobs.wall_ns),
                   static_cast<long long>(r.jobs.woke_workers));
    else
      std::fprintf(out, " %8s %9s %5s\n", "-", "-", "-");
  }
}

}  // namespace hfs::cpu_fast
