#include "backends/vulkan/kernels.h"

namespace hfs::vulkan {

const KernelInfo& kernel_info(Kernel k) {
  static const KernelInfo kInfo[] = {
      {"eltwise", 3},      {"rms_norm", 3},  {"linear_gemv", 5},    {"linear_gemv_subgroup", 5},
      {"linear_tiled", 5}, {"embedding", 4}, {"gather", 3},         {"slice", 2},
      {"transpose", 2},    {"rope", 4},      {"kv_cache_write", 3}, {"attention", 5},
  };
  static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == static_cast<size_t>(Kernel::kCount));
  return kInfo[static_cast<size_t>(k)];
}

}  // namespace hfs::vulkan
