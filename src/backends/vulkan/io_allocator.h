// The vulkan backend's I/O allocator: every buffer is its own host-visible, coherent, mapped VkBuffer
// (device-local too where the device offers that combination: integrated GPUs, resizable BAR, lavapipe),
// registered with the Context so a delegate binds the pointer it is handed as (VkBuffer, offset) with no
// copy. The runner puts the K/V caches, ids, masks, slots and logits here through Method::io_allocator().
#pragma once

#include <memory>

#include "backends/vulkan/context.h"
#include "hfstatic/ext/allocator.h"

namespace hfs::vulkan {

std::shared_ptr<Allocator> make_io_allocator(std::shared_ptr<Context> ctx);

}  // namespace hfs::vulkan
