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
}

void StepProfile::report(std::FILE* out) const {
  if (!on()) return;
  std::map<std::string, std::pair<double, int64_t>> by_kind;
  double total = 0;
  for (size_t i = 0; i < kinds_.size(); ++i) {
    auto& e = by_kind[kinds_[i]];
    e.first += seconds_[i];
    e.second += calls_[i];
    total += seconds_[i];
  }
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(by_kind.begin(), by_kind.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::fprintf(out, "cpu_fast profile: %zu steps, %lld executes, %.1f ms in steps\n", kinds_.size(),
               static_cast<long long>(executes_), total * 1e3);
  for (const auto& [kind, e] : rows)
    std::fprintf(out, "  %-20s %9.2f ms %5.1f%% %6lld calls\n", kind.c_str(), e.first * 1e3,
                 total > 0 ? 100.0 * e.first / total : 0.0, static_cast<long long>(e.second));
}

}  // namespace hfs::cpu_fast
