// The Vulkan entry points the backend uses, resolved at run time from the system loader.
//
// The library never links libvulkan: `load_vk_api()` dlopens "libvulkan.so.1" on first use, so hfstatic
// loads and runs on machines without Vulkan, and choosing the `vulkan` backend there is an error that says
// what to install instead of a failed program start.
//
//   HFS_ASSIGN_OR_RETURN(const VkApi* vk, load_vk_api());
//   vk->vkCreateInstance(&info, nullptr, &instance);
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "hfstatic/error.h"

namespace hfs::vulkan {

// Every function the backend calls: global ones first, then instance, then device level.
#define HFS_VK_GLOBAL_FNS(X) X(vkCreateInstance) X(vkEnumerateInstanceLayerProperties)
#define HFS_VK_INSTANCE_FNS(X)                                                                            \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                     \
  X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice)    \
  X(vkGetDeviceProcAddr)
#define HFS_VK_DEVICE_FNS(X)                                                                              \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                             \
  X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)              \
  X(vkMapMemory) X(vkUnmapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)                        \
  X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout)               \
  X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateDescriptorPool)  \
  X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreateCommandPool) \
  X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers) X(vkResetCommandBuffer) X(vkBeginCommandBuffer)    \
  X(vkEndCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants)             \
  X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCreateFence) X(vkDestroyFence)          \
  X(vkResetFences) X(vkWaitForFences) X(vkQueueSubmit) X(vkDeviceWaitIdle)                              \
  X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp)              \
  X(vkGetQueryPoolResults)

// Environment variable naming the loader to dlopen instead of "libvulkan.so.1" (a loader outside the
// library path, or a test of the missing-loader error).
inline constexpr const char* kLoaderEnv = "HFS_VULKAN_LOADER";

struct VkApi {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define HFS_VK_MEMBER(name) PFN_##name name = nullptr;
  HFS_VK_GLOBAL_FNS(HFS_VK_MEMBER)
  HFS_VK_INSTANCE_FNS(HFS_VK_MEMBER)
  HFS_VK_DEVICE_FNS(HFS_VK_MEMBER)
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;    // only with validation
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
  PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2 = nullptr;  // Vulkan 1.1 loaders
#undef HFS_VK_MEMBER
};

// The loader's global functions (process-wide, loaded once). Fails with kUnsupported naming what to
// install when the loader is missing.
[[nodiscard]] Result<const VkApi*> load_vk_api();
// Resolves the instance- and device-level functions into `api` (a copy per device).
[[nodiscard]] Status load_instance_fns(VkApi& api, VkInstance instance);
[[nodiscard]] Status load_device_fns(VkApi& api, VkDevice device);

// A zeroed Vulkan struct with its sType set.
template <class T>
T vk_struct(VkStructureType type) {
  T t{};
  t.sType = type;
  return t;
}

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc., for messages.
const char* vk_result_name(VkResult r);
// An Error for a failed call: "vulkan: <step>: <result name>", kResourceExhausted for out-of-memory,
// kInternal otherwise (device lost included).
Error vk_error(VkResult r, const std::string& step);

}  // namespace hfs::vulkan
