#include "backends/vulkan/delegate.h"
#include "backends/vulkan/slice_view.h"

#include <cstring>
#include <map>

#include "backends/vulkan/step_timer.h"
#include "hfstatic/ext/method.h"
#include "runtime/graph_analysis.h"
#include "runtime/subgraph_storage.h"

namespace hfs::vulkan {
namespace {

// A subgraph output that is not computed in its own buffer (it aliases an input, or another output's
// buffer): copied on the device after the dispatches, as cpu_ref's CopyOut.
struct CopyOut {
  uint32_t output = 0;
  Operand src;
  size_t bytes = 0;
};

// Where one I/O tensor is bound on the device this step.
struct IoBinding {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  DeviceBuffer* shadow = nullptr;  // set when the caller's memory is not Vulkan memory
  void* host = nullptr;
  size_t bytes = 0;
  bool operator==(const IoBinding& o) const { return buffer == o.buffer && offset == o.offset && host == o.host; }
};

class VulkanDelegate final : public Delegate {
 public:
  explicit VulkanDelegate(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  ~VulkanDelegate() override {
    const VkApi& vk = ctx_->vk();
    if (fence_) vk.vkDestroyFence(ctx_->device(), fence_, nullptr);
    if (pool_) vk.vkDestroyCommandPool(ctx_->device(), pool_, nullptr);
    if (descriptor_pool_) vk.vkDestroyDescriptorPool(ctx_->device(), descriptor_pool_, nullptr);
  }

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) override {
    if (inputs.size() != in_types_.size() || outputs.size() != out_types_.size())
      return make_error(ErrorCode::kBadBinding, "vulkan delegate: expected " + std::to_string(in_types_.size()) +
                                                    " inputs and " + std::to_string(out_types_.size()) +
                                                    " outputs, got " + std::to_string(inputs.size()) + " and " +
                                                    std::to_string(outputs.size()));
    const auto start = StepTimer::now();
    HFS_TRY(check_indices(inputs));
    bool changed = !recorded_;
    for (size_t i = 0; i < inputs.size(); ++i) HFS_TRY(bind_io(inputs[i], in_types_[i], bound_in_[i], changed));
    for (size_t j = 0; j < outputs.size(); ++j) HFS_TRY(bind_io(outputs[j], out_types_[j], bound_out_[j], changed));
    if (changed) HFS_TRY(record());
    for (const IoBinding& b : bound_in_)
      if (b.shadow && b.bytes) std::memcpy(b.shadow->mapped(), b.host, b.bytes);
    const auto submit = StepTimer::now();
    HFS_TRY(ctx_->submit_and_wait(cb_, fence_, "running a step of " + std::to_string(dispatches_.size()) + " dispatches"));
    const auto waited = StepTimer::now();
    for (const IoBinding& b : bound_out_)
      if (b.shadow && b.bytes) std::memcpy(b.host, b.shadow->mapped(), b.bytes);
    timer_.add(start, submit, waited);
    return Ok{};
  }

  size_t scratch_bytes() const override { return scratch_ ? scratch_->size() : 0; }

  std::shared_ptr<Context> ctx_;
  std::vector<TensorType> in_types_, out_types_;
  std::vector<std::shared_ptr<DeviceBuffer>> constants_;
  std::unique_ptr<DeviceBuffer> scratch_;
  std::vector<Dispatch> dispatches_;
  std::vector<IndexCheck> checks_;
  std::vector<CopyOut> copies_;
  std::vector<const Pipeline*> pipelines_;  // per dispatch
  std::vector<VkDescriptorSet> sets_;        // per dispatch
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  StepTimer timer_;  // device and host time per step (core/device_timing.h)
  std::vector<IoBinding> bound_in_, bound_out_;

 private:
  Status check_indices(std::span<const TensorView> inputs) const {
    for (const IndexCheck& c : checks_) {
      const int32_t* v = static_cast<const int32_t*>(inputs[c.input].ptr);
      for (int64_t i = 0; i < c.count; ++i)
        if (v[i] < c.lo || v[i] >= c.hi)
          return make_error(ErrorCode::kOutOfRange, "vulkan: " + c.what + "[" + std::to_string(i) + "] = " +
                                                        std::to_string(v[i]) + " is outside [" +
                                                        (c.lo == INT32_MIN ? std::string("-inf") : std::to_string(c.lo)) +
                                                        ", " + std::to_string(c.hi) + ")");
    }
    return Ok{};
  }

  // Binds one I/O view: the registry's buffer when the pointer is Vulkan memory, else a shadow buffer
  // (found or, the first time, created) that execute copies through.
  Status bind_io(const TensorView& v, const TensorType& type, IoBinding& b, bool& changed) {
    const size_t bytes = type.nbytes();
    IoBinding nb;
    nb.host = v.ptr;
    nb.bytes = bytes;
    if (v.ptr == nullptr || bytes == 0) {
      if (bytes != 0) return make_error(ErrorCode::kBadBinding, "vulkan delegate: null pointer for " + type.to_string());
    } else if (!ctx_->find_mapping(v.ptr, bytes, &nb.buffer, &nb.offset)) {
      nb.shadow = shadow_for(v.ptr, bytes);
      if (!nb.shadow) {
        HFS_ASSIGN_OR_RETURN(auto s, DeviceBuffer::create(ctx_, bytes, Residency::kHostVisible,
                                                          "a staging copy of a host I/O buffer"));
        shadows_.push_back(Shadow{v.ptr, bytes, std::move(s)});
        nb.shadow = shadows_.back().buffer.get();
      }
      nb.buffer = nb.shadow->buffer();
      nb.offset = 0;
    }
    if (!(nb == b)) changed = true;
    b = nb;
    return Ok{};
  }

  DeviceBuffer* shadow_for(const void* p, size_t bytes) const {
    for (const Shadow& s : shadows_)
      if (s.host == p && s.bytes >= bytes) return s.buffer.get();
    return nullptr;
  }

  Result<std::pair<VkBuffer, VkDeviceSize>> locate(const Operand& o) const {
    switch (o.kind) {
      case Operand::Kind::kInput: return std::make_pair(bound_in_[o.index].buffer, bound_in_[o.index].offset + o.offset);
      case Operand::Kind::kOutput: return std::make_pair(bound_out_[o.index].buffer, bound_out_[o.index].offset + o.offset);
      case Operand::Kind::kConstant: return std::make_pair(constants_[o.index]->buffer(), VkDeviceSize{o.offset});
      case Operand::Kind::kScratch: return std::make_pair(scratch_->buffer(), static_cast<VkDeviceSize>(o.offset));
      case Operand::Kind::kNone: break;
    }
    return make_error(ErrorCode::kInternal, "vulkan delegate: an operand without storage");
  }

  // Points every descriptor set at this step's buffers and records the dispatches, a barrier after each
  // (the next one may read what it wrote), the output copies and a final barrier that makes the results
  // visible to the host.
  Status record() {
    const VkApi& vk = ctx_->vk();
    std::vector<VkDescriptorBufferInfo> infos(dispatches_.size() * kMaxBindings);
    std::vector<VkWriteDescriptorSet> writes;
    for (size_t di = 0; di < dispatches_.size(); ++di) {
      Dispatch& d = dispatches_[di];
      for (uint32_t b = 0; b < pipelines_[di]->bindings; ++b) {
        HFS_ASSIGN_OR_RETURN(auto loc, locate(d.operands[b]));
        if (loc.second % 4 != 0)
          return make_error(ErrorCode::kBadBinding, "vulkan delegate: operand at byte offset " + std::to_string(loc.second) +
                                                        " is not 4-byte aligned");
        d.push[b] = static_cast<uint32_t>(loc.second / 4);
        VkDescriptorBufferInfo& info = infos[di * kMaxBindings + b];
        info = VkDescriptorBufferInfo{loc.first, 0, VK_WHOLE_SIZE};
        auto w = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
        w.dstSet = sets_[di];
        w.dstBinding = b;
        w.descriptorCount = 1;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w.pBufferInfo = &info;
        writes.push_back(w);
      }
    }
    if (!writes.empty()) vk.vkUpdateDescriptorSets(ctx_->device(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    if (VkResult r = vk.vkResetCommandBuffer(cb_, 0); r != VK_SUCCESS) return vk_error(r, "re-recording a step");
    auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    if (VkResult r = vk.vkBeginCommandBuffer(cb_, &bi); r != VK_SUCCESS) return vk_error(r, "recording a step");
    timer_.begin(cb_);
    auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    for (size_t di = 0; di < dispatches_.size(); ++di) {
      const Dispatch& d = dispatches_[di];
      const Pipeline& p = *pipelines_[di];
      vk.vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
      vk.vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &sets_[di], 0, nullptr);
      vk.vkCmdPushConstants(cb_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushWords * 4, d.push.data());
      vk.vkCmdDispatch(cb_, d.groups[0], d.groups[1], d.groups[2]);
      vk.vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                              nullptr, 0, nullptr);
    }
    for (const CopyOut& c : copies_) {
      HFS_ASSIGN_OR_RETURN(auto src, locate(c.src));
      const IoBinding& dst = bound_out_[c.output];
      if (src.first == dst.buffer && src.second == dst.offset) continue;
      VkBufferCopy region{src.second, dst.offset, c.bytes};
      vk.vkCmdCopyBuffer(cb_, src.first, dst.buffer, 1, &region);
    }
    auto to_host = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
    timer_.end(cb_);
    if (VkResult r = vk.vkEndCommandBuffer(cb_); r != VK_SUCCESS) return vk_error(r, "recording a step");
    recorded_ = true;
    return Ok{};
  }

  struct Shadow {
    const void* host;
    size_t bytes;
    std::unique_ptr<DeviceBuffer> buffer;
  };
  std::vector<Shadow> shadows_;
  bool recorded_ = false;
};

// Descriptor pool, sets, command pool, command buffer and fence: everything a step needs, made here.
Status create_objects(VulkanDelegate& d) {
  Context& ctx = *d.ctx_;
  const VkApi& vk = ctx.vk();
  const uint32_t n = static_cast<uint32_t>(d.dispatches_.size());
  for (const Dispatch& disp : d.dispatches_) {
    HFS_ASSIGN_OR_RETURN(const Pipeline* p, ctx.pipeline(disp.kernel));
    d.pipelines_.push_back(p);
  }
  if (n) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n * kMaxBindings};
    auto pi = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    pi.maxSets = n;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &size;
    if (VkResult r = vk.vkCreateDescriptorPool(ctx.device(), &pi, nullptr, &d.descriptor_pool_); r != VK_SUCCESS)
      return vk_error(r, "creating descriptor sets");
    std::vector<VkDescriptorSetLayout> layouts;
    for (const Pipeline* p : d.pipelines_) layouts.push_back(p->set_layout);
    d.sets_.resize(n);
    auto ai = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    ai.descriptorPool = d.descriptor_pool_;
    ai.descriptorSetCount = n;
    ai.pSetLayouts = layouts.data();
    if (VkResult r = vk.vkAllocateDescriptorSets(ctx.device(), &ai, d.sets_.data()); r != VK_SUCCESS)
      return vk_error(r, "allocating descriptor sets");
  }
  auto ci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = ctx.queue_family();
  if (VkResult r = vk.vkCreateCommandPool(ctx.device(), &ci, nullptr, &d.pool_); r != VK_SUCCESS)
    return vk_error(r, "creating a command pool");
  auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ai.commandPool = d.pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  if (VkResult r = vk.vkAllocateCommandBuffers(ctx.device(), &ai, &d.cb_); r != VK_SUCCESS)
    return vk_error(r, "allocating a command buffer");
  auto fi = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  if (VkResult r = vk.vkCreateFence(ctx.device(), &fi, nullptr, &d.fence_); r != VK_SUCCESS)
    return vk_error(r, "creating a fence");
  return d.timer_.create(d.ctx_);
}

}  // namespace

Result<std::unique_ptr<Delegate>> build_delegate(std::shared_ptr<Context> ctx, const Subgraph& sg,
                                                 const LowerOptions& options) {
  const std::string where = "vulkan: subgraph";
  if (!sg.constants) return make_error(ErrorCode::kInvalidArgument, where + ": no constant store");
  HFS_ASSIGN_OR_RETURN(detail::TypeMap types, detail::infer_value_types(sg.inputs, sg.nodes, *sg.constants, where));
  // Slice views (slice_view.h): a slice that is a byte range of its source binds the source's storage.
  const auto aliases = detail::alias_info(sg.nodes);
  const detail::ValueViews views = slice_views(sg, types, [&](const std::string& v) {
    auto it = aliases.find(v);
    return it == aliases.end() ? v : it->second.root;
  });
  HFS_ASSIGN_OR_RETURN(detail::SubgraphStorage plan, detail::plan_subgraph_storage(sg, types, where, views));
  auto d = std::make_unique<VulkanDelegate>(ctx);
  for (const IOSpec& s : sg.inputs) d->in_types_.push_back(s.type);
  for (const IOSpec& s : sg.outputs) d->out_types_.push_back(s.type);
  d->bound_in_.resize(sg.inputs.size());
  d->bound_out_.resize(sg.outputs.size());

  // Storage per root value (runtime/subgraph_storage.h, as cpu_ref): constants uploaded once per device,
  // intermediate values in one device-local scratch buffer.
  std::map<std::string, Operand, std::less<>> storage;
  for (const auto& [root, s] : plan.roots) {
    using K = detail::ValueStorage::Kind;
    switch (s.kind) {
      case K::kInput: storage.emplace(root, Operand{Operand::Kind::kInput, static_cast<uint32_t>(s.index), 0}); break;
      case K::kOutput: storage.emplace(root, Operand{Operand::Kind::kOutput, static_cast<uint32_t>(s.index), 0}); break;
      case K::kScratch: storage.emplace(root, Operand{Operand::Kind::kScratch, 0, s.offset}); break;
      case K::kConstant: {
        HFS_ASSIGN_OR_RETURN(auto buf, ctx->constant(s.constant->ptr, s.constant->nbytes(), root));
        storage.emplace(root, Operand{Operand::Kind::kConstant, static_cast<uint32_t>(d->constants_.size()), 0});
        d->constants_.push_back(std::move(buf));
        break;
      }
    }
  }
  if (plan.scratch_bytes) {
    HFS_ASSIGN_OR_RETURN(d->scratch_,
                         DeviceBuffer::create(ctx, plan.scratch_bytes, Residency::kDevice, "intermediate values"));
  }

  // One dispatch per node (none for views); the host checks of ids/index/slots inputs.
  for (size_t i = 0; i < sg.nodes.size(); ++i) {
    const NodeDef& node = sg.nodes[i];
    if (node.outputs.size() == 1 && plan.views.count(node.outputs[0])) continue;  // a view: no dispatch
    std::vector<Operand> in, out;
    std::vector<const TensorType*> it, ot;
    auto operand = [&](const std::string& v) {
      auto [root, offset] = plan.place(v);
      Operand o = storage.at(root);
      o.offset += offset;
      return o;
    };
    for (const std::string& v : node.inputs) {
      in.push_back(v.empty() ? Operand{} : operand(v));
      it.push_back(v.empty() ? nullptr : &types.at(v));
    }
    for (const std::string& v : node.outputs) {
      out.push_back(operand(v));
      ot.push_back(&types.at(v));
    }
    HFS_ASSIGN_OR_RETURN(Lowered l, lower_node(i, node, in, it, out, ot, options));
    if (l.dispatch) d->dispatches_.push_back(*l.dispatch);
    if (l.check) d->checks_.push_back(*l.check);
  }
  for (size_t j = 0; j < sg.outputs.size(); ++j) {
    auto [root, offset] = plan.place(sg.outputs[j].name);
    Operand src = storage.at(root);
    src.offset += offset;
    if (src.kind == Operand::Kind::kOutput && src.index == j && src.offset == 0) continue;
    d->copies_.push_back(CopyOut{static_cast<uint32_t>(j), src, sg.outputs[j].type.nbytes()});
  }
  HFS_TRY(create_objects(*d));
  return std::unique_ptr<Delegate>(std::move(d));
}

}  // namespace hfs::vulkan
