// "vulkan": the Vulkan compute backend. Claims the nodes it has shaders for (lowering.h), compiles each
// partition into a delegate that replays one recorded command buffer per step (delegate.h), and hands
// out host-visible device memory for the method's I/O (io_allocator.h). docs/vulkan-backend.md has the
// design.
//
// Settings: {"device": N} picks the N-th device the loader lists (default: the first discrete GPU, else
// device 0); {"passes": false} (or env HFS_VULKAN_PASSES=0) turns off the backend's lowering passes
// (fuse_linear_pass.h), leaving the caller's graph as it is; {"subgroups": false} (or env
// HFS_VULKAN_SUBGROUPS=0) runs few-row linears on the shared-memory GEMV even where the device has
// subgroup arithmetic (by default the subgroup GEMV is chosen there, once, when the backend is made).
//
//   hfs::MethodOptions mo;
//   mo.backends.backends = {"vulkan"};
//   mo.backends.settings["vulkan"] = hfs::Value::object();
//   mo.backends.settings["vulkan"].set("device", hfs::Value(0));
#pragma once

#include <memory>

#include "backends/vulkan/context.h"
#include "backends/vulkan/lowering.h"
#include "hfstatic/ext/backend.h"

namespace hfs::vulkan {

class VulkanBackend final : public Backend {
 public:
  // `subgroups`: use the subgroup GEMV where the device supports it (Context::subgroups()).
  VulkanBackend(std::shared_ptr<Context> ctx, bool passes = true, bool subgroups = true);
  std::string_view name() const override { return "vulkan"; }
  bool supports(const NodeDef& node, std::span<const TensorType* const> types) const override;
  Result<std::unique_ptr<Delegate>> compile(const Subgraph& subgraph) override;
  std::shared_ptr<Allocator> allocator() const override { return allocator_; }
  std::vector<Pass> passes() const override;
  Context& context() const { return *ctx_; }
  // The kernel choices every partition this backend compiles is lowered with.
  const LowerOptions& lower_options() const { return lower_; }

 private:
  std::shared_ptr<Context> ctx_;
  std::shared_ptr<Allocator> allocator_;
  bool passes_ = true;
  LowerOptions lower_;
};

[[nodiscard]] Result<std::unique_ptr<Backend>> make_vulkan_backend(const Value& settings);

}  // namespace hfs::vulkan
