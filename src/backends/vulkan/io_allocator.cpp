#include "backends/vulkan/io_allocator.h"

#include "backends/vulkan/device_buffer.h"

namespace hfs::vulkan {
namespace {

// Keeps the buffer alive as long as the hfs::Buffer that points into it, and unregisters it first.
struct Registered {
  std::unique_ptr<DeviceBuffer> buffer;
  ~Registered() {
    if (buffer) buffer->context().unregister_mapping(buffer->mapped());
  }
};

class VulkanIoAllocator final : public Allocator {
 public:
  explicit VulkanIoAllocator(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  std::string_view name() const override { return "vulkan"; }

  Result<Buffer> allocate(size_t bytes) override {
    if (bytes == 0) return Buffer();
    HFS_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> b,
                         DeviceBuffer::create(ctx_, bytes, Residency::kHostVisible, "an I/O buffer"));
    if (reinterpret_cast<uintptr_t>(b->mapped()) % kBufferAlignment != 0)
      return make_error(ErrorCode::kInternal, "vulkan: mapped memory is not " + std::to_string(kBufferAlignment) +
                                                  "-byte aligned on " + ctx_->device_name());
    void* data = b->mapped();
    ctx_->register_mapping(data, b->size(), b->buffer());
    auto owner = std::make_shared<Registered>();
    owner->buffer = std::move(b);
    return Buffer(data, bytes, std::shared_ptr<void>(owner));
  }

 private:
  std::shared_ptr<Context> ctx_;
};

}  // namespace

std::shared_ptr<Allocator> make_io_allocator(std::shared_ptr<Context> ctx) {
  return std::make_shared<VulkanIoAllocator>(std::move(ctx));
}

}  // namespace hfs::vulkan
