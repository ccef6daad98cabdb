#include "backends/vulkan/vk_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace hfs::vulkan {
namespace {

constexpr const char* kInstallHint =
    "install a Vulkan loader and driver (Debian/Ubuntu: apt-get install libvulkan1 mesa-vulkan-drivers; "
    "mesa-vulkan-drivers provides lavapipe, a CPU implementation) or pick another backend (--backend cpu_fast)";

struct Loaded {
  VkApi api;
  std::string error;  // empty when loaded
};

Loaded load_once() {
  Loaded l;
  // Never dlclose'd: the loader stays for the process, as every function pointer points into it.
  const char* env = std::getenv(kLoaderEnv);
  const std::string name = env && *env ? env : "libvulkan.so.1";
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    l.error = "vulkan backend: cannot load the Vulkan loader " + name + " (" + (why ? why : "not found") + "): " +
              kInstallHint;
    return l;
  }
  l.api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!l.api.vkGetInstanceProcAddr) {
    l.error = "vulkan backend: libvulkan.so.1 has no vkGetInstanceProcAddr: " + std::string(kInstallHint);
    return l;
  }
#define HFS_VK_LOAD_GLOBAL(name)                                                                          \
  l.api.name = reinterpret_cast<PFN_##name>(l.api.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));          \
  if (!l.api.name) {                                                                                      \
    l.error = "vulkan backend: the Vulkan loader lacks " #name ": " + std::string(kInstallHint);           \
    return l;                                                                                             \
  }
  HFS_VK_GLOBAL_FNS(HFS_VK_LOAD_GLOBAL)
#undef HFS_VK_LOAD_GLOBAL
  return l;
}

}  // namespace

Result<const VkApi*> load_vk_api() {
  static const Loaded loaded = load_once();
  if (!loaded.error.empty()) return make_error(ErrorCode::kUnsupported, loaded.error);
  return &loaded.api;
}

Status load_instance_fns(VkApi& api, VkInstance instance) {
#define HFS_VK_LOAD_INSTANCE(name)                                                                        \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name));                    \
  if (!api.name) return make_error(ErrorCode::kUnsupported, "vulkan backend: the instance lacks " #name);
  HFS_VK_INSTANCE_FNS(HFS_VK_LOAD_INSTANCE)
#undef HFS_VK_LOAD_INSTANCE
  api.vkCreateDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      api.vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  api.vkDestroyDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      api.vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
  api.vkGetPhysicalDeviceProperties2 = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(
      api.vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceProperties2"));
  return Ok{};
}

Status load_device_fns(VkApi& api, VkDevice device) {
#define HFS_VK_LOAD_DEVICE(name)                                                                          \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetDeviceProcAddr(device, #name));                        \
  if (!api.name) return make_error(ErrorCode::kUnsupported, "vulkan backend: the device lacks " #name);
  HFS_VK_DEVICE_FNS(HFS_VK_LOAD_DEVICE)
#undef HFS_VK_LOAD_DEVICE
  return Ok{};
}

const char* vk_result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

Error vk_error(VkResult r, const std::string& step) {
  const bool oom = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
                   r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL;
  std::string msg = "vulkan: " + step + ": " + vk_result_name(r) + " (" + std::to_string(static_cast<int>(r)) + ")";
  if (r == VK_ERROR_DEVICE_LOST) msg += "; the device was lost, reload the program to continue";
  return make_error(oom ? ErrorCode::kResourceExhausted : ErrorCode::kExecution, msg);
}

}  // namespace hfs::vulkan
