// cpu_fast/moe.h — the moe op (ops/moe.cpp defines it): routing, then only the selected experts' weights
// read, with cpu_fast's own linear kernels per expert matrix (internal).
//
// Each expert's gate / up / down matrix ([I, H], [I, H], [H, I] slices of the stacked [E, N, K] constants)
// is packed exactly as a dense linear's weight is (pack_linear_weight: integer formats into the kernel
// layout, float ones read in place or copied onto huge pages), so an expert costs what a dense linear of
// its shape costs, and a step reads no expert that no row chose.
//
// A step of R rows (decode R = 1; a prefill chunk; several sequences) is routed row by row, then run
// expert by expert in ascending index: the rows that chose expert e are gathered, its gate/up (fused with
// silu·up) and down linears run once on all of them — each selected expert's weights are read once per
// step however many rows chose it — and each row's result is added into its output scaled by the row's
// routing weight. Rows therefore receive their experts' contributions in ascending expert order, the
// reference's order, and each per-expert linear gives a row the bits it gives that row alone (integer
// formats: exact block sums; float formats: the row-invariant kernels), so a row's output does not depend
// on which other rows share the step (docs/determinism.md). The linears split each expert's output
// columns over the pool, so threads stay busy however unevenly rows spread over the experts.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu_fast/linear.h"

namespace hfs::cpu_fast {

struct MoeLayer {
  int64_t experts = 0, inter = 0, hidden = 0, rows = 0, top_k = 1;
  bool renorm = false;
  // Per expert, packed as a linear weight is ([I, H], [I, H], [H, I]).
  std::vector<std::shared_ptr<PackedWeight>> gate, up, down;

  // Scratch, sized at compile for `rows` rows (execute never allocates).
  LinearScratch x_acts;     // all rows of x quantized once (integer gate/up)
  LinearScratch sel_acts;   // the rows routed to one expert, gathered from x_acts
  LinearScratch down_acts;  // the expert's hidden activations quantized for down
  std::vector<LinearScratch> decode_down_acts;  // [k] at decode: each selected expert's h quantized
  std::vector<float> x_rows, g, u, h, y;  // [R, H], [R, I] ×3, [R, H]
  std::vector<float> probs;               // [E] one row's softmax
  std::vector<int64_t> order;             // [E] the k picks, in rank order
  std::vector<char> chosen;               // [E]
  std::vector<int32_t> sel_expert;        // [R, k]
  std::vector<float> sel_weight;          // [R, k]
  std::vector<int32_t> first;             // [E + 1] start of each expert's rows in routed_*
  std::vector<int32_t> routed_row;        // [R·k] rows grouped by expert, ascending row within an expert
  std::vector<float> routed_weight;       // [R·k]
  std::vector<int32_t> routed_expert;     // [R·k] the expert of each routed slot

  // Allocates the scratch for the layer's shape (after gate/up/down are packed).
  [[nodiscard]] Status allocate();
  size_t bytes() const;  // scratch plus packed / copied expert weights (FastDelegate::scratch_bytes)
  // out [R, H] = moe(x [R, H], logits [R, E]) as ops/moe.cpp defines it.
  void run(const float* x, const float* logits, float* out, ThreadPool* pool, FloatRows mode);

 private:
  // linear() on down_acts (an integer weight's input quantized there for its k_padded).
  static constexpr int64_t kMaxTopKBatched = 4;  // experts per linear_batch (2 weights each, 8 at most)
  void run_decode(const float* x, float* out, ThreadPool* pool, FloatRows mode);
  // The expert of routed slot j (routed_* are grouped by ascending expert; at decode one slot per expert).
  int64_t routed_row_expert(int64_t j) const;
  void run_linear(const PackedWeight& w, const float* x, int64_t m, float* out, ThreadPool* pool, FloatRows mode);
};

}  // namespace hfs::cpu_fast
