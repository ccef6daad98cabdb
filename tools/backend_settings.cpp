#include "backend_settings.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "hfstatic/ext/backend_kernels.h"
#include "option_checks.h"

namespace hfs::cli {

void add_device_option(CLI::App& sub, int& device) {
  sub.add_option("--device", device, kDeviceHelp)->transform(integer_in(0, 1024, "a device index in [0, 1024]"));
}

void add_threads_option(CLI::App& sub, int& threads) {
  sub.add_option("-t,--threads", threads,
                 "Threads for the selected CPU backends, an integer in [0, 1024] (0 = their default, one per CPU; more "
                 "than the CPUs this process may use is capped to them)")
      ->capture_default_str()
      ->transform(integer_in(0, 1024, "an integer in [0, 1024]"));
}

int capped_threads(const char* command, int threads) {
  int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  if (threads <= cpus) return threads;
  std::fprintf(stderr, "hfstatic %s: --threads %d is more than the %d CPUs this process may use; using %d\n", command,
               threads, cpus, cpus);
  return cpus;
}

Result<BackendOptions> backend_options(const std::vector<std::string>& backends, int threads, int device,
                                       bool deterministic) {
  BackendOptions o;
  o.backends = backends;
  const bool vulkan = std::find(backends.begin(), backends.end(), "vulkan") != backends.end();
  if (device >= 0 && !vulkan)
    return make_error(ErrorCode::kInvalidArgument, "--device selects the vulkan backend's device: add --backend vulkan");
  for (const std::string& b : backends) {
    if (b == "vulkan") {
      if (device >= 0) o.settings[b].set("device", Value(device));
    } else if (threads > 0) {
      o.settings[b].set("threads", Value(threads));
    }
    if (b == "cpu_fast" && !deterministic) o.settings[b].set("deterministic", Value(false));
  }
  return o;
}

std::map<std::string, std::string> backend_kernels(const BackendOptions& options) {
  std::map<std::string, std::string> out;
  for (const std::string& b : options.backends)
    if (std::string k = hfs::backend_kernels(b); !k.empty()) out[b] = k;
  return out;
}

std::string describe_kernels(const std::map<std::string, std::string>& kernels) {
  std::string s;
  for (const auto& [name, k] : kernels) s += (s.empty() ? "" : ", ") + name + " " + k;
  return s;
}

}  // namespace hfs::cli
