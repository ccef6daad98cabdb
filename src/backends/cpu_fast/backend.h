// cpu_fast/backend.h — the fast CPU backend ("cpu_fast"): SIMD kernels, packed weights, one thread pool.
//
// Registered under "cpu_fast" with settings {"threads": N} (default: the CPUs this process may use) and
// {"deterministic": false} (default true): float weights then run prefill chunks through the panel GEMM,
// whose rows round differently from decode's (linear.h FloatRows, docs/determinism.md).
// It claims linear (weights f32/f16/bf16/q8_0/q4_0, and i8 with a per-channel f32 scale as optional
// 4th operand), attention, rms_norm, silu, gelu_tanh, mul, add, scale, softcap, rope, embedding,
// kv_cache_write and reshape. compile() packs integer weights once (the Delegate owns them), fuses
// silu→mul into one pass, plans intermediates with hfs::plan_arena into one buffer, and sizes all
// scratch, so execute() never allocates.
//
// Every cpu_fast backend of the same thread count in a process shares one ThreadPool. Each method of a
// program (prefill, decode, the step methods, the LM head) gets its own backend, and methods run one at a
// time, so one pool per method only added threads: after each job a pool's worker spins (thread_pool.h)
// while the next method's pool starts on the same cores, and the pools' contention checks then found
// their workers waiting for a CPU and benched them, leaving steps to one thread for 0.2 s at a time.
// Calls from several threads (two engines) are serialized by the pool, job by job.
//
//   hfs::MethodOptions mo;
//   mo.backends.backends = {"cpu_fast"};
//   mo.backends.settings["cpu_fast"] = hfs::Value::object();
//   mo.backends.settings["cpu_fast"].set("threads", hfs::Value(2));
#pragma once

#include <memory>

#include "hfstatic/ext/backend.h"

namespace hfs::cpu_fast {

class ThreadPool;

class CpuFastBackend : public Backend {
 public:
  explicit CpuFastBackend(int threads, bool deterministic = true);
  ~CpuFastBackend() override;
  std::string_view name() const override { return "cpu_fast"; }
  bool supports(const NodeDef& node, std::span<const TensorType* const> types) const override;
  [[nodiscard]] Result<std::unique_ptr<Delegate>> compile(const Subgraph& subgraph) override;
  // I/O buffers (the K/V caches) on transparent huge pages: huge_slab.h.
  std::shared_ptr<Allocator> allocator() const override;
  int threads() const;
  // The pool this backend's methods run on (shared, see above).
  const ThreadPool* pool() const { return pool_.get(); }

 private:
  std::shared_ptr<ThreadPool> pool_;
  bool deterministic_ = true;
};

// Parses {"threads": N, "deterministic": B}; kInvalidArgument on a non-integer or negative thread count, a
// non-boolean "deterministic" or an unknown key.
[[nodiscard]] Result<std::unique_ptr<Backend>> make_cpu_fast_backend(const Value& settings);

}  // namespace hfs::cpu_fast
