// "vulkan.fuse_linears": the Vulkan backend's lowering pass. Linears that read the same input with weights
// of one format (a layer's Q/K/V projections, an MLP's gate/up) become one linear over the weights
// concatenated along the output dim, followed by a `slice` per original result (same value names, so the
// consumers are untouched). The result uses only existing ops: any backend, cpu_ref included, runs it.
//
// Why: a decode step reads the normed input once instead of per projection, and the GEMV has as many
// workgroups as the projections together (a wider dispatch fills the device better than three narrow
// ones). docs/vulkan-backend.md#backend-passes has the rules and the memory accounting.
#pragma once

#include <cstdint>

#include "hfstatic/ext/backend.h"

namespace hfs::vulkan {

inline constexpr const char* kFuseLinearsPass = "vulkan.fuse_linears";

// `max_binding_bytes`: the device's maxStorageBufferRange (a fused weight past it is left unfused, so the
// backend still claims it). Fused constants are built once per process for a given set of source
// weights and shared by every method's store (one host copy, one device upload).
Pass fuse_linear_pass(uint64_t max_binding_bytes);

}  // namespace hfs::vulkan
