// cpu_fast/compile_steps.h — the steps CpuFastBackend::compile runs, in this order (internal).
//
//   resolve_steps          nodes → steps and values; linear weights packed     compile_resolve.cpp
//                          (and moe steps' experts, expert by expert)          compile_weights.cpp
//   pack_embedding_tables  embeddings gather from the tables' packed copies   compile_weights.cpp
//   batch_linears          linears sharing an input run as one pool job       compile_fusions.cpp
//   bind_outputs           subgraph outputs: written in place or copied out   compile_resolve.cpp
//   fuse_silu_mul          silu → mul becomes one silu_mul pass               compile_fusions.cpp
//   fuse_glu               gate/up batch + silu_mul becomes one job            compile_fusions.cpp
//   fuse_norms_into_linears  [add →] rms_norm runs inside an integer linear   compile_fusions.cpp
//   group_rope_kv_writes   RoPE and cache writes over the same rows: one job  compile_rope_cache.cpp
//   plan_lifetimes         last uses → arena offsets, one arena               compile_lifetimes.cpp
//   size_scratch           kernel scratch for the largest linear / attention  compile_lifetimes.cpp
//   tune_linears           decode GEMV variant per 16-bit weight class, timed  compile_tune.cpp
//
// Each later step reads what the earlier ones decided (a fusion checks `output`, set by bind_outputs;
// plan_lifetimes honours `run_by`, set by the fusions and the grouping), so the order is part of the
// contract. No step changes what a value holds: the delegate's results are the same as running the
// nodes one by one.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/cpu_fast/delegate.h"

namespace hfs::cpu_fast {

// What the steps share while one subgraph compiles.
struct CompileState {
  const Subgraph& sg;
  FastDelegate& d;
  ThreadPool* pool;  // packs large weights on the backend's threads
  // Float constants are copied onto huge pages only where the originals' pages can be dropped (a file
  // mapping): decode reads the copy faster, and RSS still holds one copy (docs/cpu-fast-backend.md).
  bool copy_floats = false;
  std::map<std::string, int, std::less<>> ids;  // value name → index into d.vals
};

// Whether the backend runs `node` with these operand types (CpuFastBackend::supports).
bool supports_node(const NodeDef& node, std::span<const TensorType* const> types);

[[nodiscard]] Status resolve_steps(CompileState& c);
// A linear step's weight (operand 1) packed, or read in place, as d.weights[step.weight].
[[nodiscard]] Status pack_linear_weight(CompileState& c, Step& step);
// A moe step's stacked expert weights (operands 2-4, scales 5-7) packed expert by expert as linear weights
// are, and its scratch, as d.moes[step.moe].
[[nodiscard]] Status pack_moe_experts(CompileState& c, const NodeDef& node, Step& step);
[[nodiscard]] Status pack_embedding_tables(CompileState& c);
void batch_linears(FastDelegate& d);
[[nodiscard]] Status bind_outputs(CompileState& c);
// Returns which steps it turned into no-ops (their inputs no longer count as uses).
std::vector<bool> fuse_silu_mul(FastDelegate& d);
void fuse_glu(FastDelegate& d, const std::vector<bool>& dead);
void fuse_norms_into_linears(FastDelegate& d);
void group_rope_kv_writes(FastDelegate& d);
[[nodiscard]] Status plan_lifetimes(FastDelegate& d);
[[nodiscard]] Status size_scratch(FastDelegate& d, int threads);
// Picks (measures, or takes from HFS_CPU_FAST_HALF_GEMV) the decode GEMV variant of the f16 / bf16 weights
// that one-row linears read (linear_half.h); an error for a forced variant that cannot run.
[[nodiscard]] Status tune_linears(FastDelegate& d);

}  // namespace hfs::cpu_fast
