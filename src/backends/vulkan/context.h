// One Vulkan device opened for compute: instance, device, queue, memory types, and what every delegate
// on it shares — the pipelines (created once per device), the uploaded weights (one copy per constant,
// whichever methods read it) and the registry of host-visible I/O buffers the allocator handed out.
//
// Contexts are process-wide, one per device index, and live as long as a backend, delegate or buffer
// holds them (weights and pipelines go with the last holder).
//
//   HFS_ASSIGN_OR_RETURN(std::shared_ptr<Context> ctx, Context::get(-1));   // -1: the default device
//   ctx->device_name();   // "llvmpipe (LLVM 15.0.6, 256 bits)"
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_api.h"
#include "hfstatic/error.h"

namespace hfs::vulkan {

class DeviceBuffer;

// Environment variable that enables VK_LAYER_KHRONOS_validation and counts its messages (tests set it).
inline constexpr const char* kValidationEnv = "HFS_VULKAN_VALIDATION";

// Validation messages (warnings and errors) reported since the process started, when kValidationEnv is set.
uint64_t validation_message_count();

// What the device reports of its subgroups (VkPhysicalDeviceSubgroupProperties; all zero on a Vulkan 1.0
// device or loader, which cannot report them).
struct SubgroupInfo {
  uint32_t size = 0;
  VkShaderStageFlags stages = 0;
  VkSubgroupFeatureFlags operations = 0;
  // Whether linear_gemv_subgroup.comp can run: basic and arithmetic subgroup operations in compute
  // shaders, and subgroups of at least 4 invocations (smaller ones save nothing over the shared tree).
  bool arithmetic_in_compute() const;
};

class Context : public std::enable_shared_from_this<Context> {
 public:
  // `device` < 0: the first discrete GPU, else device 0. Fails naming the backend and what to install
  // when there is no loader or no device, and listing the devices when `device` is out of range.
  [[nodiscard]] static Result<std::shared_ptr<Context>> get(int device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const VkApi& vk() const { return vk_; }
  VkDevice device() const { return device_; }
  const std::string& device_name() const { return name_; }
  int device_index() const { return index_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceLimits& limits() const { return limits_; }
  // Valid bits of the compute queue's timestamps (0: the queue cannot time its commands).
  uint32_t timestamp_bits() const { return timestamp_bits_; }
  const SubgroupInfo& subgroups() const { return subgroups_; }

  // A memory type index among `bits` with `required` flags, preferring those that also have `preferred`.
  [[nodiscard]] Result<uint32_t> memory_type(uint32_t bits, VkMemoryPropertyFlags required,
                                             VkMemoryPropertyFlags preferred) const;
  VkMemoryPropertyFlags memory_flags(uint32_t type) const { return mem_.memoryTypes[type].propertyFlags; }

  // The compute pipeline of `k`, created on first use (at compile time, never in a step).
  [[nodiscard]] Result<const Pipeline*> pipeline(Kernel k);

  // The device copy of a constant's bytes: uploaded through a staging buffer the first time, shared by
  // every delegate that reads the same host bytes afterwards.
  [[nodiscard]] Result<std::shared_ptr<DeviceBuffer>> constant(const void* host, size_t bytes, const std::string& name);

  // Submits `cb` and waits on `fence` (the queue is shared by every delegate, so submission is locked).
  [[nodiscard]] Status submit_and_wait(VkCommandBuffer cb, VkFence fence, const std::string& step);
  // Runs `record` into a one-time command buffer and waits for it (uploads at compile time).
  [[nodiscard]] Status run_once(const std::function<void(VkCommandBuffer)>& record, const std::string& step);

  // The I/O allocator's buffers: host pointer range -> (buffer, offset), so a delegate binds a pointer it
  // is handed without copying.
  void register_mapping(const void* p, size_t bytes, VkBuffer buffer);
  void unregister_mapping(const void* p);
  bool find_mapping(const void* p, size_t bytes, VkBuffer* buffer, VkDeviceSize* offset) const;

 private:
  Context() = default;
  [[nodiscard]] Status open(int device);

  VkApi vk_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t timestamp_bits_ = 0;
  SubgroupInfo subgroups_;
  VkPhysicalDeviceMemoryProperties mem_{};
  VkPhysicalDeviceLimits limits_{};
  std::string name_;
  int index_ = 0;

  std::mutex queue_mu_;
  VkCommandPool once_pool_ = VK_NULL_HANDLE;  // guarded by queue_mu_
  std::mutex pipeline_mu_;
  std::vector<std::unique_ptr<Pipeline>> pipelines_;  // by Kernel
  std::mutex constant_mu_;
  std::map<std::pair<const void*, size_t>, std::weak_ptr<DeviceBuffer>> constants_;
  mutable std::mutex mapping_mu_;
  struct Mapping {
    size_t bytes;
    VkBuffer buffer;
  };
  std::map<uintptr_t, Mapping> mappings_;  // by start address
};

}  // namespace hfs::vulkan
