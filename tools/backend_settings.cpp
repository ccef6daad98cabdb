#include "backend_settings.h"

#include <algorithm>

#include "option_checks.h"

namespace hfs::cli {

void add_device_option(CLI::App& sub, int& device) {
  sub.add_option("--device", device, kDeviceHelp)->transform(integer_in(0, 1024, "a device index in [0, 1024]"));
}

Result<BackendOptions> backend_options(const std::vector<std::string>& backends, int threads, int device) {
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
  }
  return o;
}

}  // namespace hfs::cli
