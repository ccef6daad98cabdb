// hfstatic/ext/method.h — an executable method: lowered, partitioned, memory-planned at load.
//
// Lowering is one entry point: caller passes, then each selected backend's passes (priority order),
// then partitioning and compilation. The memory plan gives every intermediate value an offset in one
// arena where values with disjoint lifetimes share bytes. `execute` never allocates.
//
//   auto prog = hfs::Program::load("model.hfs");
//   hfs::MethodOptions mo;                       // backends: {"cpu_fast"} for the fast CPU backend
//   auto m = hfs::Method::load(*prog, "decode", mo);
//   float x[4] = {1, 2, 3, 4}, y[4];             // graph.h's decode(x f32[1,4]) -> y f32[1,4]
//   std::vector<hfs::TensorView> in = {{x, hfs::DType::kF32, {1, 4}}}, out = {{y, hfs::DType::kF32, {1, 4}}};
//   hfs::Status st = (*m)->execute(in, out);     // state outputs come back as the inputs' buffers
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/backend.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/program.h"

namespace hfs {

struct HFS_API MethodOptions {
  BackendOptions backends;
  std::vector<Pass> passes;  // caller passes, run first
};

struct HFS_API MethodPlan {
  size_t arena_bytes = 0;       // intermediate values between/inside partitions, after sharing
  size_t unshared_bytes = 0;    // what the same values would take without sharing
  size_t delegate_scratch = 0;  // sum of Delegate::scratch_bytes()
  std::vector<std::string> partition_backends;  // backend name per partition, execution order
  std::vector<std::vector<size_t>> partition_nodes;  // per partition, its nodes' indices in def().nodes
};

class HFS_API Method {
 public:
  ~Method();
  [[nodiscard]] static Result<std::unique_ptr<Method>> load(std::shared_ptr<const Program> program,
                                                            const std::string& name, const MethodOptions& options = {});
  // For tests and tools that build methods without a file: `constants` must outlive the Method.
  [[nodiscard]] static Result<std::unique_ptr<Method>> create(MethodDef def, std::shared_ptr<ConstantStore> constants,
                                                              const MethodOptions& options = {});

  const MethodDef& def() const;  // after lowering (passes may have rewritten it); I/O signature unchanged
  const MethodPlan& plan() const;
  // The allocator of the highest-priority selected backend (where the caller should put I/O buffers).
  std::shared_ptr<Allocator> io_allocator() const;

  // inputs: one view per def().inputs, same order, exact dtype/shape. outputs: one per def().outputs;
  // for non-state outputs the caller's buffer receives the result; for state outputs (alias_of) the
  // entry is ignored on input and set to the aliased input's view — the update is already in that buffer.
  // A non-state output with a null pointer is not wanted: every partition whose results reach only
  // unwanted outputs (no state update, no wanted output, no needed partition after it) is skipped. That
  // is a kBadBinding error when a partition that still runs would compute the output in its buffer.
  // One call at a time per Method: it reuses binding tables sized at load (that is how it avoids allocating).
  [[nodiscard]] Status execute(std::span<const TensorView> inputs, std::span<TensorView> outputs);
  // True when `output` (an index into def().outputs) alone may be left unbound and that skips at least
  // one partition — e.g. a prompt chunk's logits when the LM head is a partition of its own.
  bool can_skip_output(size_t output) const;

 private:
  struct Impl;
  explicit Method(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A ConstantStore over a Program's tensor table (zero-copy), which can also own added constants.
HFS_API std::shared_ptr<ConstantStore> program_constants(std::shared_ptr<const Program> program);
// An empty store that owns whatever is added (tests, fakes).
HFS_API std::shared_ptr<ConstantStore> owned_constants();

// Memory planning (exposed for tests and backends): values with [first, last] use ranges (node indices)
// and sizes get offsets so that overlapping lifetimes never overlap in bytes. Offsets are 64-aligned.
struct HFS_API PlanItem {
  size_t size = 0;
  size_t first = 0;  // defining step
  size_t last = 0;   // last using step (≥ first)
  size_t offset = 0; // output
};
HFS_API size_t plan_arena(std::span<PlanItem> items);  // returns total bytes

}  // namespace hfs
