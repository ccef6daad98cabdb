// tools/backend_settings.h — the CLI's backend options (--backend, --threads, --device) as BackendOptions.
//
// --threads goes to every listed backend that runs on CPU threads (not to vulkan, which has no thread
// count); --device N picks the vulkan backend's device and is a usage error without --backend vulkan.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "hfstatic/ext/backend.h"

namespace hfs::cli {

inline constexpr const char* kDeviceHelp =
    "Device index for the vulkan backend (default: the first discrete GPU, else device 0; `vulkaninfo "
    "--summary` lists them)";

// Adds --device to `sub`, storing into `device` (-1 when not given).
void add_device_option(CLI::App& sub, int& device);
// Adds -t/--threads to `sub` (run, chat, serve), storing into `threads` (0 = the backends' default).
void add_threads_option(CLI::App& sub, int& threads);
// `threads` capped to the CPUs this process may use (more only contend, and thousands exhaust memory or the
// thread limit), with a note on stderr naming `command` when it was capped.
int capped_threads(const char* command, int threads);
// The settings for `backends`: threads (> 0) for the CPU backends, device (>= 0) for vulkan. Fails with
// kInvalidArgument when --device is given without the vulkan backend.
// deterministic = false (--nondeterministic) sets cpu_fast's "deterministic": false.
[[nodiscard]] Result<BackendOptions> backend_options(const std::vector<std::string>& backends, int threads, int device,
                                                     bool deterministic = true);
// Each listed backend's kernels on this machine (hfstatic/ext/backend_kernels.h, e.g. {"cpu_fast":
// "avx512"}), those with something to say.
std::map<std::string, std::string> backend_kernels(const BackendOptions& options);
// The same as one line for reports: "cpu_fast avx512" (comma-separated; "" when none).
std::string describe_kernels(const std::map<std::string, std::string>& kernels);
// --nondeterministic's help, shared by the commands that take it.
inline constexpr const char* kNondeterministicHelp =
    "Trade bit-reproducibility for speed: cpu_fast runs f32/f16/bf16 prefill chunks through its panel GEMM, "
    "so prompt rows round differently from decode rows and a prompt's bits depend on how it is chunked "
    "(docs/determinism.md)";

}  // namespace hfs::cli
