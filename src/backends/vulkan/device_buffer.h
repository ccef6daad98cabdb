// A VkBuffer with its own memory (RAII). Host-visible buffers stay mapped for their lifetime.
//
//   HFS_ASSIGN_OR_RETURN(auto b, DeviceBuffer::create(ctx, 4096, Residency::kHostVisible, "logits"));
//   std::memcpy(b->mapped(), src, 4096);
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backends/vulkan/context.h"

namespace hfs::vulkan {

enum class Residency : uint8_t {
  kDevice,       // device-local where the device has it; the host reaches it only through copies
  kHostVisible,  // host-visible, coherent and mapped; device-local too where the device offers both
};

class DeviceBuffer {
 public:
  // Fails with kResourceExhausted naming `what` and the bytes when the device cannot hold it.
  [[nodiscard]] static Result<std::unique_ptr<DeviceBuffer>> create(std::shared_ptr<Context> ctx, size_t bytes,
                                                                    Residency residency, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  VkBuffer buffer() const { return buffer_; }
  size_t size() const { return size_; }
  void* mapped() const { return mapped_; }  // nullptr unless host-visible
  Context& context() const { return *ctx_; }

 private:
  DeviceBuffer() = default;
  std::shared_ptr<Context> ctx_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  size_t size_ = 0;
};

// Copies `bytes` host bytes into `dst` at `offset` through a host-visible staging buffer of at most
// 64 MiB, one chunk at a time (the way to reach memory the host cannot map).
[[nodiscard]] Status upload(Context& ctx, DeviceBuffer& dst, size_t offset, const void* src, size_t bytes,
                            const std::string& what);

}  // namespace hfs::vulkan
