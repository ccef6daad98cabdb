#include "backend_settings.h"

#include <algorithm>

#include "hfstatic/ext/backend_kernels.h"
#include "option_checks.h"

namespace hfs::cli {

void add_device_option(CLI::App& sub, int& device) {
  sub.add_option("--device", device, kDeviceHelp)->transform(integer_in(0, 1024, "a device index in [0, 1024]"));
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
