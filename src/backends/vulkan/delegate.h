// A compiled vulkan partition: its dispatches recorded once into a command buffer and replayed every
// step (one submit and one fence wait per execute).
//
// compile (build_delegate): value storage like cpu_ref's (subgraph inputs and outputs are the caller's
// buffers, views and in-place updates share their source's buffer), constants uploaded once per device
// (Context::constant), intermediates planned with plan_arena into one device-local scratch buffer, one
// descriptor set per dispatch, the command pool, command buffer and fence.
// execute: maps each I/O pointer back to (VkBuffer, offset) through the I/O allocator's registry; when
// they differ from the recorded ones (the first step, or a caller that moved its buffers), rewrites the
// descriptor sets and re-records; checks ids/index/slot inputs on the host; submits and waits. A pointer
// that is not Vulkan memory (a caller with its own allocator) is staged through a host-visible shadow
// buffer the delegate allocates the first time it sees that pointer.
#pragma once

#include <memory>
#include <vector>

#include "backends/vulkan/context.h"
#include "backends/vulkan/device_buffer.h"
#include "backends/vulkan/lowering.h"
#include "hfstatic/ext/backend.h"

namespace hfs::vulkan {

// `options`: the backend's kernel choices (lowering.h), the same for every partition it compiles.
[[nodiscard]] Result<std::unique_ptr<Delegate>> build_delegate(std::shared_ptr<Context> ctx, const Subgraph& sg,
                                                               const LowerOptions& options);

}  // namespace hfs::vulkan
