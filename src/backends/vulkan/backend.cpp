#include "backends/vulkan/backend.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "backends/vulkan/delegate.h"
#include "backends/vulkan/fuse_linear_pass.h"
#include "backends/vulkan/io_allocator.h"
#include "backends/vulkan/lowering.h"

namespace hfs::vulkan {
namespace {

// One line per distinct (op, reason) per process: what the partitioner leaves to the next backend.
void notice_unclaimed(const NodeDef& node, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> said;
  const std::string key = node.op + ": " + why;
  std::lock_guard<std::mutex> lock(mu);
  if (!said.insert(key).second) return;
  std::fprintf(stderr, "vulkan: op '%s' runs on the next backend (cpu_ref unless another is listed): %s\n",
               node.op.c_str(), why.c_str());
}

}  // namespace

VulkanBackend::VulkanBackend(std::shared_ptr<Context> ctx, bool passes, bool subgroups)
    : ctx_(std::move(ctx)), allocator_(make_io_allocator(ctx_)), passes_(passes) {
  lower_.subgroup_gemv = subgroups && ctx_->subgroups().arithmetic_in_compute();
}

bool VulkanBackend::supports(const NodeDef& node, std::span<const TensorType* const> types) const {
  std::string why;
  // Kernels bind whole buffers: a tensor past the device's largest storage binding stays on the CPU.
  const uint64_t range = ctx_->limits().maxStorageBufferRange;
  for (const TensorType* t : types)
    if (t && t->nbytes() > range) {
      notice_unclaimed(node, "a tensor of " + std::to_string(t->nbytes()) + " bytes, over this device's " +
                                 "maxStorageBufferRange of " + std::to_string(range));
      return false;
    }
  if (vulkan_supports(node, types, &why)) return true;
  notice_unclaimed(node, why);
  return false;
}

Result<std::unique_ptr<Delegate>> VulkanBackend::compile(const Subgraph& sg) {
  return build_delegate(ctx_, sg, lower_);
}

std::vector<Pass> VulkanBackend::passes() const {
  if (!passes_) return {};
  return {fuse_linear_pass(ctx_->limits().maxStorageBufferRange)};
}

Result<std::unique_ptr<Backend>> make_vulkan_backend(const Value& settings) {
  int device = -1;
  // HFS_VULKAN_PASSES=0 turns the backend's passes off where no setting can be given (the CLI), to
  // compare with the unfused graph; the "passes" setting wins over it.
  const char* env = std::getenv("HFS_VULKAN_PASSES");
  bool passes = !(env && std::strcmp(env, "0") == 0);
  // HFS_VULKAN_SUBGROUPS=0 likewise forces the shared-memory GEMV on a device with subgroup arithmetic.
  const char* sub_env = std::getenv("HFS_VULKAN_SUBGROUPS");
  bool subgroups = !(sub_env && std::strcmp(sub_env, "0") == 0);
  if (settings.is_object()) {
    for (const auto& [key, v] : settings.as_object()) {
      // `threads`, the host threads a CPU backend may use, is accepted and has nothing to size here (the
      // device runs the work): options written for any backend, such as a draft program's runner asking
      // for one thread, apply unchanged.
      if (key == "threads") {
        if (!v.is_int() || v.as_int() < 1)
          return make_error(ErrorCode::kInvalidArgument,
                            "vulkan: setting 'threads' must be an integer >= 1, got " + v.to_json());
        continue;
      }
      if (key == "passes") {
        if (!v.is_bool())
          return make_error(ErrorCode::kInvalidArgument, "vulkan: setting 'passes' must be a bool, got " + v.to_json());
        passes = v.as_bool();
        continue;
      }
      if (key == "subgroups") {
        if (!v.is_bool())
          return make_error(ErrorCode::kInvalidArgument,
                            "vulkan: setting 'subgroups' must be a bool, got " + v.to_json());
        subgroups = v.as_bool();
        continue;
      }
      if (key != "device")
        return make_error(ErrorCode::kInvalidArgument,
                          "vulkan: unknown setting '" + key + "' (known: device, passes, subgroups, threads)");
      if (!v.is_int() || v.as_int() < 0 || v.as_int() > 1024)
        return make_error(ErrorCode::kInvalidArgument,
                          "vulkan: setting 'device' must be a device index in [0, 1024], got " + v.to_json());
      device = static_cast<int>(v.as_int());
    }
  } else if (!settings.is_null()) {
    return make_error(ErrorCode::kInvalidArgument, "vulkan: settings must be an object, got " + settings.to_json());
  }
  HFS_ASSIGN_OR_RETURN(std::shared_ptr<Context> ctx, Context::get(device));
  return std::unique_ptr<Backend>(std::make_unique<VulkanBackend>(std::move(ctx), passes, subgroups));
}

namespace {
const bool kRegistered = register_backend("vulkan", [](const Value& s) { return make_vulkan_backend(s); });
}  // namespace

}  // namespace hfs::vulkan
