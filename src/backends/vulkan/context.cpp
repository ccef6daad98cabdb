#include "backends/vulkan/context.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/vulkan/device_buffer.h"

namespace hfs::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
std::atomic<uint64_t> g_validation_messages{0};

bool validation_requested() {
  const char* v = std::getenv(kValidationEnv);
  return v && *v && std::strcmp(v, "0") != 0;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  g_validation_messages.fetch_add(1);
  std::fprintf(stderr, "vulkan validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// An instance for compute (Vulkan 1.1), with the validation layer and its messenger when requested.
Status create_instance(VkApi& vk, VkInstance* instance, VkDebugUtilsMessengerEXT* messenger) {
  const bool validate = validation_requested();
  if (validate) {
    uint32_t n = 0;
    vk.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> layers(n);
    vk.vkEnumerateInstanceLayerProperties(&n, layers.data());
    bool found = false;
    for (const auto& l : layers) found = found || std::strcmp(l.layerName, kValidationLayer) == 0;
    if (!found)
      return make_error(ErrorCode::kUnsupported, std::string("vulkan backend: ") + kValidationEnv + " is set but " +
                                                     kValidationLayer +
                                                     " is not installed (Debian: apt-get install vulkan-validationlayers)");
  }
  auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "hfstatic";
  app.apiVersion = VK_API_VERSION_1_1;
  auto ci = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ci.pApplicationInfo = &app;
  const char* layer = kValidationLayer;
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  auto mi = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = &on_validation_message;
  if (validate) {
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = &ext;
    ci.pNext = &mi;  // also reports on instance creation and destruction
  }
  if (VkResult r = vk.vkCreateInstance(&ci, nullptr, instance); r != VK_SUCCESS) {
    Error e = vk_error(r, "creating an instance");
    return make_error(ErrorCode::kUnsupported, "vulkan backend: " + e.message() +
                                                   " (is a Vulkan driver installed? Debian: apt-get install "
                                                   "mesa-vulkan-drivers)");
  }
  HFS_TRY(load_instance_fns(vk, *instance));
  if (validate && vk.vkCreateDebugUtilsMessengerEXT) {
    if (VkResult r = vk.vkCreateDebugUtilsMessengerEXT(*instance, &mi, nullptr, messenger); r != VK_SUCCESS)
      return vk_error(r, "creating the validation messenger");
  }
  return Ok{};
}

Result<std::vector<VkPhysicalDevice>> physical_devices(const VkApi& vk, VkInstance instance) {
  uint32_t n = 0;
  if (VkResult r = vk.vkEnumeratePhysicalDevices(instance, &n, nullptr); r != VK_SUCCESS)
    return vk_error(r, "listing devices");
  std::vector<VkPhysicalDevice> devs(n);
  if (n) vk.vkEnumeratePhysicalDevices(instance, &n, devs.data());
  if (devs.empty())
    return make_error(ErrorCode::kUnsupported,
                      "vulkan backend: the Vulkan loader reports no device (install a driver: Debian "
                      "mesa-vulkan-drivers for lavapipe on the CPU, or your GPU vendor's)");
  return devs;
}

// The device's subgroup properties, where device and loader are Vulkan 1.1 or later.
SubgroupInfo query_subgroups(const VkApi& vk, VkPhysicalDevice dev, uint32_t api_version) {
  SubgroupInfo info;
  if (!vk.vkGetPhysicalDeviceProperties2 || api_version < VK_API_VERSION_1_1) return info;
  auto sub = vk_struct<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto props = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props.pNext = &sub;
  vk.vkGetPhysicalDeviceProperties2(dev, &props);
  info.size = sub.subgroupSize;
  info.stages = sub.supportedStages;
  info.operations = sub.supportedOperations;
  return info;
}

}  // namespace

bool SubgroupInfo::arithmetic_in_compute() const {
  const VkSubgroupFeatureFlags needed = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  return size >= 4 && (stages & VK_SHADER_STAGE_COMPUTE_BIT) && (operations & needed) == needed;
}

uint64_t validation_message_count() { return g_validation_messages.load(); }

Result<std::shared_ptr<Context>> Context::get(int device) {
  static std::mutex mu;
  static std::map<int, std::weak_ptr<Context>> open;
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<Context>& slot = open[device];
  if (auto ctx = slot.lock()) return ctx;
  std::shared_ptr<Context> ctx(new Context());
  HFS_TRY(ctx->open(device));
  slot = ctx;
  return ctx;
}

Status Context::open(int device) {
  HFS_ASSIGN_OR_RETURN(const VkApi* global, load_vk_api());
  vk_ = *global;
  HFS_TRY(create_instance(vk_, &instance_, &messenger_));
  HFS_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> devs, physical_devices(vk_, instance_));
  std::vector<VkPhysicalDeviceProperties> props(devs.size());
  for (size_t i = 0; i < devs.size(); ++i) vk_.vkGetPhysicalDeviceProperties(devs[i], &props[i]);
  if (device < 0) {
    device = 0;
    for (size_t i = 0; i < devs.size(); ++i)
      if (props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
        device = static_cast<int>(i);
        break;
      }
  }
  if (device >= static_cast<int>(devs.size())) {
    std::string list;
    for (size_t i = 0; i < devs.size(); ++i)
      list += (i ? ", " : "") + std::to_string(i) + ": " + props[i].deviceName + " (" +
              device_type_name(props[i].deviceType) + ")";
    return make_error(ErrorCode::kInvalidArgument, "vulkan backend: device " + std::to_string(device) +
                                                       " does not exist; the devices are " + list);
  }
  index_ = device;
  physical_ = devs[static_cast<size_t>(device)];
  name_ = props[static_cast<size_t>(device)].deviceName;
  limits_ = props[static_cast<size_t>(device)].limits;
  vk_.vkGetPhysicalDeviceMemoryProperties(physical_, &mem_);
  subgroups_ = query_subgroups(vk_, physical_, props[static_cast<size_t>(device)].apiVersion);

  uint32_t nq = 0;
  vk_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  vk_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, families.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      queue_family_ = i;
      timestamp_bits_ = families[i].timestampValidBits;
      found = true;
    }
  if (!found) return make_error(ErrorCode::kUnsupported, "vulkan backend: device '" + name_ + "' has no compute queue");
  const float priority = 1.0f;
  auto qi = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  auto di = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  if (VkResult r = vk_.vkCreateDevice(physical_, &di, nullptr, &device_); r != VK_SUCCESS)
    return vk_error(r, "opening device '" + name_ + "'");
  HFS_TRY(load_device_fns(vk_, device_));
  vk_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  auto pi = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pi.queueFamilyIndex = queue_family_;
  if (VkResult r = vk_.vkCreateCommandPool(device_, &pi, nullptr, &once_pool_); r != VK_SUCCESS)
    return vk_error(r, "creating a command pool");
  pipelines_.resize(static_cast<size_t>(Kernel::kCount));
  return Ok{};
}

Context::~Context() {
  if (device_) {
    vk_.vkDeviceWaitIdle(device_);
    for (auto& p : pipelines_) {
      if (!p) continue;
      vk_.vkDestroyPipeline(device_, p->pipeline, nullptr);
      vk_.vkDestroyPipelineLayout(device_, p->layout, nullptr);
      vk_.vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
    }
    if (once_pool_) vk_.vkDestroyCommandPool(device_, once_pool_, nullptr);
    vk_.vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) vk_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) vk_.vkDestroyInstance(instance_, nullptr);
}

Result<uint32_t> Context::memory_type(uint32_t bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i) {
    if (!(bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = mem_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  if (fallback < 0)
    return make_error(ErrorCode::kUnsupported, "vulkan: device '" + name_ + "' has no memory type with flags " +
                                                   std::to_string(required));
  return static_cast<uint32_t>(fallback);
}

Result<const Pipeline*> Context::pipeline(Kernel k) {
  std::lock_guard<std::mutex> lock(pipeline_mu_);
  std::unique_ptr<Pipeline>& slot = pipelines_[static_cast<size_t>(k)];
  if (slot) return slot.get();
  const KernelInfo& info = kernel_info(k);
  const std::string step = "creating the '" + std::string(info.shader) + "' pipeline";
  std::span<const uint32_t> code = shader_spirv(info.shader);
  if (code.empty()) return make_error(ErrorCode::kInternal, "vulkan: no embedded SPIR-V for shader '" + std::string(info.shader) + "'");
  auto p = std::make_unique<Pipeline>();
  p->bindings = info.bindings;
  VkDescriptorSetLayoutBinding b[kMaxBindings]{};
  for (uint32_t i = 0; i < info.bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  auto li = vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  li.bindingCount = info.bindings;
  li.pBindings = b;
  if (VkResult r = vk_.vkCreateDescriptorSetLayout(device_, &li, nullptr, &p->set_layout); r != VK_SUCCESS)
    return vk_error(r, step);
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushWords * 4};
  auto pli = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &p->set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &range;
  if (VkResult r = vk_.vkCreatePipelineLayout(device_, &pli, nullptr, &p->layout); r != VK_SUCCESS) {
    vk_.vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
    return vk_error(r, step);
  }
  auto si = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  si.codeSize = code.size() * 4;
  si.pCode = code.data();
  VkShaderModule module = VK_NULL_HANDLE;
  VkResult r = vk_.vkCreateShaderModule(device_, &si, nullptr, &module);
  if (r == VK_SUCCESS) {
    auto ci = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    ci.stage = vk_struct<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.layout = p->layout;
    r = vk_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &ci, nullptr, &p->pipeline);
    vk_.vkDestroyShaderModule(device_, module, nullptr);
  }
  if (r != VK_SUCCESS) {
    vk_.vkDestroyPipelineLayout(device_, p->layout, nullptr);
    vk_.vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
    return vk_error(r, step);
  }
  slot = std::move(p);
  return slot.get();
}

Result<std::shared_ptr<DeviceBuffer>> Context::constant(const void* host, size_t bytes, const std::string& name) {
  std::lock_guard<std::mutex> lock(constant_mu_);
  auto key = std::make_pair(host, bytes);
  if (auto it = constants_.find(key); it != constants_.end())
    if (auto b = it->second.lock()) return b;
  HFS_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> b,
                       DeviceBuffer::create(shared_from_this(), bytes, Residency::kDevice, "constant '" + name + "'"));
  HFS_TRY(upload(*this, *b, 0, host, bytes, "constant '" + name + "'"));
  std::shared_ptr<DeviceBuffer> shared(std::move(b));
  constants_[key] = shared;
  return shared;
}

Status Context::submit_and_wait(VkCommandBuffer cb, VkFence fence, const std::string& step) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    if (VkResult r = vk_.vkQueueSubmit(queue_, 1, &si, fence); r != VK_SUCCESS) return vk_error(r, step + ": submit");
  }
  if (VkResult r = vk_.vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX); r != VK_SUCCESS)
    return vk_error(r, step + ": waiting for the device");
  if (VkResult r = vk_.vkResetFences(device_, 1, &fence); r != VK_SUCCESS) return vk_error(r, step + ": fence reset");
  return Ok{};
}

Status Context::run_once(const std::function<void(VkCommandBuffer)>& record, const std::string& step) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ai.commandPool = once_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (VkResult r = vk_.vkAllocateCommandBuffers(device_, &ai, &cb); r != VK_SUCCESS) return vk_error(r, step);
  VkFence fence = VK_NULL_HANDLE;
  auto fi = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  VkResult r = vk_.vkCreateFence(device_, &fi, nullptr, &fence);
  if (r == VK_SUCCESS) {
    auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk_.vkBeginCommandBuffer(cb, &bi);
    record(cb);
    r = vk_.vkEndCommandBuffer(cb);
    if (r == VK_SUCCESS) {
      auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cb;
      r = vk_.vkQueueSubmit(queue_, 1, &si, fence);
      if (r == VK_SUCCESS) r = vk_.vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX);
    }
    vk_.vkDestroyFence(device_, fence, nullptr);
  }
  vk_.vkFreeCommandBuffers(device_, once_pool_, 1, &cb);
  if (r != VK_SUCCESS) return vk_error(r, step);
  return Ok{};
}

void Context::register_mapping(const void* p, size_t bytes, VkBuffer buffer) {
  std::lock_guard<std::mutex> lock(mapping_mu_);
  mappings_[reinterpret_cast<uintptr_t>(p)] = Mapping{bytes, buffer};
}

void Context::unregister_mapping(const void* p) {
  std::lock_guard<std::mutex> lock(mapping_mu_);
  mappings_.erase(reinterpret_cast<uintptr_t>(p));
}

bool Context::find_mapping(const void* p, size_t bytes, VkBuffer* buffer, VkDeviceSize* offset) const {
  std::lock_guard<std::mutex> lock(mapping_mu_);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = mappings_.upper_bound(a);
  if (it == mappings_.begin()) return false;
  --it;
  if (a + bytes > it->first + it->second.bytes) return false;
  *buffer = it->second.buffer;
  *offset = a - it->first;
  return true;
}

}  // namespace hfs::vulkan
