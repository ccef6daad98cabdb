#include "backends/vulkan/device_buffer.h"

#include <algorithm>
#include <cstring>

namespace hfs::vulkan {

Result<std::unique_ptr<DeviceBuffer>> DeviceBuffer::create(std::shared_ptr<Context> ctx, size_t bytes,
                                                           Residency residency, const std::string& what) {
  const VkApi& vk = ctx->vk();
  std::unique_ptr<DeviceBuffer> b(new DeviceBuffer());
  b->ctx_ = ctx;
  // Whole 16-byte units: shaders read storage as 4-byte words, so a tensor of 2-byte or 1-byte elements
  // whose size is not a multiple of 4 still has its last word inside the buffer (a zero-sized VkBuffer
  // is invalid besides).
  b->size_ = std::max<size_t>((bytes + 15) / 16 * 16, 16);
  const std::string step = "allocating " + what + " (" + std::to_string(bytes) + " bytes) on " + ctx->device_name();
  auto bi = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = b->size_;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (VkResult r = vk.vkCreateBuffer(ctx->device(), &bi, nullptr, &b->buffer_); r != VK_SUCCESS) return vk_error(r, step);
  VkMemoryRequirements req{};
  vk.vkGetBufferMemoryRequirements(ctx->device(), b->buffer_, &req);
  const bool host = residency == Residency::kHostVisible;
  const VkMemoryPropertyFlags required =
      host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
  HFS_ASSIGN_OR_RETURN_CTX(uint32_t type,
                           (ctx->memory_type(req.memoryTypeBits, required, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)), step);
  auto ai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  if (VkResult r = vk.vkAllocateMemory(ctx->device(), &ai, nullptr, &b->memory_); r != VK_SUCCESS) return vk_error(r, step);
  if (VkResult r = vk.vkBindBufferMemory(ctx->device(), b->buffer_, b->memory_, 0); r != VK_SUCCESS) return vk_error(r, step);
  if (host) {
    if (VkResult r = vk.vkMapMemory(ctx->device(), b->memory_, 0, VK_WHOLE_SIZE, 0, &b->mapped_); r != VK_SUCCESS)
      return vk_error(r, step);
    std::memset(b->mapped_, 0, b->size_);  // the Allocator contract: zero-filled
  }
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (!ctx_) return;
  const VkApi& vk = ctx_->vk();
  if (mapped_) vk.vkUnmapMemory(ctx_->device(), memory_);
  if (buffer_) vk.vkDestroyBuffer(ctx_->device(), buffer_, nullptr);
  if (memory_) vk.vkFreeMemory(ctx_->device(), memory_, nullptr);
}

Status upload(Context& ctx, DeviceBuffer& dst, size_t offset, const void* src, size_t bytes, const std::string& what) {
  if (bytes == 0) return Ok{};
  constexpr size_t kChunk = size_t{64} << 20;
  const size_t chunk = std::min(bytes, kChunk);
  HFS_ASSIGN_OR_RETURN(auto staging, DeviceBuffer::create(ctx.shared_from_this(), chunk, Residency::kHostVisible,
                                                          "staging for " + what));
  for (size_t done = 0; done < bytes; done += chunk) {
    const size_t n = std::min(chunk, bytes - done);
    std::memcpy(staging->mapped(), static_cast<const std::byte*>(src) + done, n);
    VkBufferCopy region{0, offset + done, n};
    HFS_TRY(ctx.run_once([&](VkCommandBuffer cb) { ctx.vk().vkCmdCopyBuffer(cb, staging->buffer(), dst.buffer(), 1, &region); },
                         "uploading " + what));
  }
  return Ok{};
}

}  // namespace hfs::vulkan
