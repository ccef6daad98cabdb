#include "core/device_timing.h"

#include <atomic>

namespace hfs {
namespace {

// Nanoseconds, so the totals are lock-free integers; a step is microseconds to seconds.
std::atomic<uint64_t> g_submits{0}, g_timed{0}, g_execute_ns{0}, g_wait_ns{0}, g_device_ns{0};

uint64_t to_ns(double ms) { return ms > 0 ? static_cast<uint64_t>(ms * 1e6 + 0.5) : 0; }

}  // namespace

DeviceTiming device_timing() {
  DeviceTiming t;
  t.submits = g_submits.load(std::memory_order_relaxed);
  t.timed_submits = g_timed.load(std::memory_order_relaxed);
  t.execute_ms = static_cast<double>(g_execute_ns.load(std::memory_order_relaxed)) / 1e6;
  t.submit_wait_ms = static_cast<double>(g_wait_ns.load(std::memory_order_relaxed)) / 1e6;
  t.device_ms = static_cast<double>(g_device_ns.load(std::memory_order_relaxed)) / 1e6;
  return t;
}

void add_device_timing(double execute_ms, double submit_wait_ms, double device_ms) {
  g_submits.fetch_add(1, std::memory_order_relaxed);
  g_execute_ns.fetch_add(to_ns(execute_ms), std::memory_order_relaxed);
  g_wait_ns.fetch_add(to_ns(submit_wait_ms), std::memory_order_relaxed);
  if (device_ms >= 0) {
    g_timed.fetch_add(1, std::memory_order_relaxed);
    g_device_ns.fetch_add(to_ns(device_ms), std::memory_order_relaxed);
  }
}

}  // namespace hfs
