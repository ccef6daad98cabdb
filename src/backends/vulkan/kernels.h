// The compute kernels (one GLSL shader each, shaders/<name>.comp, compiled to SPIR-V at build time) and
// their pipelines.
//
// Every kernel binds whole storage buffers (binding b = operand b) and receives, as its first push
// constants, the offset of each operand inside its buffer in 4-byte words, followed by the kernel's own
// parameters. Binding whole buffers keeps descriptors valid whatever offset an I/O pointer has (no
// minStorageBufferOffsetAlignment to meet), and re-pointing a delegate only rewrites push constants.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

namespace hfs::vulkan {

enum class Kernel : uint8_t {
  kEltwise,       // a, b -> y: add, mul, silu, scale, softcap, gelu_tanh, copy
  kRmsNorm,       // x, w -> y
  kLinearGemv,    // x, w, bias, scale -> y: a workgroup per output column, rows in registers (few rows)
  // x, w, bias, scale -> y: kLinearGemv summed by subgroupAdd and one shared step (subgroup arithmetic)
  kLinearGemvSubgroup,
  kLinearTiled,   // x, w, bias, scale -> y: 32 × 32 output tiles through shared memory (many rows)
  kEmbedding,     // table, ids, scale -> y
  kGather,        // x, index -> y
  kSlice,         // x -> y
  kTranspose,     // x -> y (rank <= 4)
  kRope,          // x, positions, inv_freq -> y
  kKvCacheWrite,  // cache, rows, slots
  kAttention,     // q, k_cache, v_cache, mask -> y
  kCount
};

inline constexpr uint32_t kMaxBindings = 5;
inline constexpr uint32_t kPushWords = 32;  // 128 bytes: the minimum maxPushConstantsSize

struct KernelInfo {
  std::string_view shader;  // shaders/<shader>.comp
  uint32_t bindings;
};
const KernelInfo& kernel_info(Kernel k);

// The SPIR-V of a shader embedded in the library (empty when unknown).
std::span<const uint32_t> shader_spirv(std::string_view name);

struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
};

}  // namespace hfs::vulkan
