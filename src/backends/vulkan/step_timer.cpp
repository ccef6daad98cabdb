#include "backends/vulkan/step_timer.h"

#include "core/device_timing.h"

namespace hfs::vulkan {

StepTimer::~StepTimer() {
  if (pool_) ctx_->vk().vkDestroyQueryPool(ctx_->device(), pool_, nullptr);
}

Status StepTimer::create(std::shared_ptr<Context> ctx) {
  ctx_ = std::move(ctx);
  if (ctx_->timestamp_bits() == 0 || ctx_->limits().timestampPeriod <= 0) return Ok{};
  auto qi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  if (VkResult r = ctx_->vk().vkCreateQueryPool(ctx_->device(), &qi, nullptr, &pool_); r != VK_SUCCESS)
    return vk_error(r, "creating the step's timestamp queries");
  return Ok{};
}

void StepTimer::begin(VkCommandBuffer cb) const {
  if (!pool_) return;
  ctx_->vk().vkCmdResetQueryPool(cb, pool_, 0, 2);
  ctx_->vk().vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
}

void StepTimer::end(VkCommandBuffer cb) const {
  if (pool_) ctx_->vk().vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
}

double StepTimer::device_ms() const {
  if (!pool_) return -1;
  uint64_t ts[2] = {0, 0};
  // The fence was waited on, so both timestamps are written: no WAIT bit, a NOT_READY answer only if not.
  if (ctx_->vk().vkGetQueryPoolResults(ctx_->device(), pool_, 0, 2, sizeof(ts), ts, sizeof(uint64_t),
                                       VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
    return -1;
  const uint32_t bits = ctx_->timestamp_bits();
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint64_t ticks = (ts[1] - ts[0]) & mask;  // a counter that wrapped once still subtracts right
  return static_cast<double>(ticks) * static_cast<double>(ctx_->limits().timestampPeriod) / 1e6;
}

void StepTimer::add(Clock::time_point start, Clock::time_point submit, Clock::time_point waited) const {
  const auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  add_device_timing(ms(Clock::now() - start), ms(waited - submit), device_ms());
}

}  // namespace hfs::vulkan
