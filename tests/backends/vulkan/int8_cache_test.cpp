// int8 KV caches (io contract minor 1) have no Vulkan kernels: the backend names them as unsupported, so the
// partitioner places those nodes on the CPU backend after it, instead of running an f32/f16 kernel over
// int8 bytes. The f32/f16 forms stay claimed. No device needed (the rule is vulkan_supports alone).
#include <gtest/gtest.h>

#include "backends/vulkan/lowering.h"

namespace hfs::vulkan {
namespace {

TEST(VulkanInt8Cache, KernelsForInt8CachesAreNamedUnsupported) {
  const TensorType q{DType::kF32, {1, 2, 4, 16}}, rows{DType::kF32, {1, 2, 2, 16}}, slots{DType::kI32, {2}};
  const TensorType mask{DType::kF32, {1, 1, 2, 32}}, scale{DType::kF32, {1, 2, 32}};
  const TensorType c8{DType::kI8, {1, 2, 32, 16}}, c16{DType::kF16, {1, 2, 32, 16}};
  auto check = [](const char* op, std::vector<const TensorType*> t, bool want) {
    std::string why;
    EXPECT_EQ(vulkan_supports(NodeDef{op, {}, {}, {}}, t, &why), want) << op;
    if (!want) {
      EXPECT_NE(why.find("int8"), std::string::npos) << op << ": " << why;
    }
  };
  check("kv_scale_write", {&scale, &rows, &slots}, false);
  check("kv_cache_write", {&c8, &rows, &slots, &scale}, false);
  check("attention", {&q, &c8, &c8, &mask, &scale, &scale}, false);
  check("kv_cache_write", {&c16, &rows, &slots}, true);
  check("attention", {&q, &c16, &c16, &mask}, true);
}

}  // namespace
}  // namespace hfs::vulkan
