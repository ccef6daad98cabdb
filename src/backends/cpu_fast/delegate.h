// cpu_fast/delegate.h — a compiled subgraph: its values, its steps, and what executes them (internal).
//
// CpuFastBackend::compile (backend.cpp) builds a FastDelegate in named steps (compile_steps.h); execute()
// (delegate.cpp) binds the values to this call's buffers and runs the steps in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/moe.h"
#include "backends/cpu_fast/step_profile.h"
#include "backends/cpu_fast/thread_pool.h"
#include "hfstatic/ext/backend.h"

namespace hfs::cpu_fast {

inline bool is_float_weight(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }
inline bool is_kv(DType d) { return d == DType::kF32 || d == DType::kF16; }

enum class Op {
  kLinear, kAttention, kRmsNorm, kSilu, kSiluMul, kGelu, kMul, kAdd, kScale, kSoftcap, kRope, kEmbedding,
  kKvWrite, kKvScale, kReshape, kMoe, kSigmoidGate
};

// The ops this backend runs, by their program name (silu_mul is only made by fusion).
const std::map<std::string, Op, std::less<>>& op_table();

// Where a value's bytes are at execute time.
struct Val {
  std::string name;
  TensorType type;
  enum Kind { kInput, kConst, kArena, kAlias } kind = kArena;
  int input = -1;           // kInput
  void* ptr = nullptr;      // kConst
  size_t offset = 0;        // kArena
  int root = -1;            // kAlias: the value whose buffer this one is
  int output = -1;          // ≥ 0: also subgraph output `output` (written straight into that buffer)
  int def = -1, last = -1;  // defining / last using step
};

struct Step {
  Op op;
  std::string label;  // "node 7 (linear 'q_0')" for errors
  std::vector<int> in;  // value ids, -1 for absent optional operands
  int out = -1;
  float f0 = 0, f1 = 0;  // eps / scale / cap / attention_scaling ...
  bool flag = false;     // unit_offset
  int weight = -1;       // linear: index into packed weights; i8 embedding: its table's packed copy
  int live = -1;         // attention: index into live-slot lists
  std::vector<int> batch;  // linear: later linear steps that read the same input and run with this one
  bool batched = false;    // linear: run by an earlier step's batch
  int glu_out = -1;        // linear batch of gate + up: also writes silu(gate)·up to this value
  bool glu_gate_first = true;  // the lead is the gate (else the up projection)
  // Integer linear (lead or single): the residual add and/or RMSNorm steps right before it that make its
  // input run row by row inside its activation quantization job (indices into steps, -1: none).
  int pre_add = -1, pre_norm = -1;
  int run_by = -1;  // a step that step run_by runs instead (its pre_add / pre_norm, or a group member)
  // The last step of a run of RoPE and K/V-cache-write steps (q, k rotated, k and v written): all of
  // them, in order, run as one pool job over the chunk's rows (members, this one included).
  std::vector<int> group;
  int moe = -1;  // moe: index into FastDelegate::moes
};

// The chunk's rows T of a RoPE step ([1, T, H, D] input) or of a K/V cache write ([1, T, H, D] source
// rows, operand 1; operand 0 is the cache), or -1 for any other step: what groups them (group_rope_kv_writes
// forms the groups, FastDelegate::run_rope_kv_group runs them).
int64_t rope_kv_rows(const Step& s, const std::vector<Val>& vals);

class FastDelegate : public Delegate {
 public:
  ~FastDelegate() override { profile.report(stderr); }
  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) override;
  size_t scratch_bytes() const override;
  // HFS_PROFILE: names every step's kind and turns on the pool's accounting.
  void enable_profile(ThreadPool& threads);

  std::shared_ptr<ThreadPool> pool;
  // How float linears run prefill-sized row counts (linear.h); the backend's "deterministic" setting.
  FloatRows float_rows = FloatRows::kRowInvariant;
  std::vector<Val> vals;
  std::vector<Step> steps;
  std::vector<std::shared_ptr<PackedWeight>> weights;  // integer formats shared process-wide (packed once)
  std::vector<int> weight_runtime_value;  // float weights that are not constants: value id, else -1
  std::vector<std::unique_ptr<MoeLayer>> moes;  // per moe step: its packed experts and scratch
  Buffer arena;
  LinearScratch lin_scratch;
  AttentionScratch attn_scratch;
  std::vector<LiveSlots> live_lists;  // per distinct mask value, scanned by its first attention step
  std::vector<uint8_t> live_scanned;   // per list: scanned in this execute
  std::vector<int> live_mask_value;
  std::vector<void*> ptr;  // per value, filled per execute
  size_t n_inputs = 0, n_outputs = 0;
  std::vector<std::pair<int, int>> output_copies;  // (value, output index) copied at the end
  StepProfile profile;  // HFS_PROFILE: per-kind step times, printed when the delegate goes
  // Which activation lin_scratch holds (value id, storage offset, padded k); reset every execute.
  int acts_value = -1, acts_offset = -1;
  int64_t acts_kp = -1;
  // RoPE angles [T, r] of the step (the same positions and inv_freq for the q and k of every layer:
  // computed once per execute, keyed by the two value ids and the scaling; reset every execute).
  std::vector<float> rope_cs;
  int rope_pos_value = -1, rope_freq_value = -1;
  float rope_scaling = 0;

 private:
  // The add / RMSNorm a linear's input quantization runs first (fills prologue_; RowPrologue{} if none).
  RowPrologue input_prologue(const Step& linear);
  struct InputPrologue {
    const float *a = nullptr, *b = nullptr;  // add: sum = a + b
    float* sum = nullptr;
    const float *norm_in = nullptr, *norm_w = nullptr;  // rms_norm: out = norm(norm_in) · w
    float* norm_out = nullptr;
    int64_t d = 0;  // row length
    float eps = 0;
    bool unit_offset = false;
  } prologue_;
  Status run_step(const Step& s);
  Status run_op(const Step& s);  // s's own work, whether or not another step runs it
  Status run_linear(const Step& s);
  Status run_rope_kv_group(const Step& last);
  // Quantizes a linear's input into lin_scratch.acts unless it holds that activation already.
  void quantize_input(const Step& s, const PackedWeight& w, const float* x, int64_t m);
  // Fills rope_cs for a RoPE step's positions and inv_freq unless it holds them already.
  void prepare_rope(const Step& s);
  // A cache write's slots: an error for a slot outside the cache; *increasing = no slot repeats.
  Status check_slots(const Step& s, bool* increasing) const;
  // Runs fn(r0, r1) over [0, rows) on the pool when rows × row_elems is worth splitting (prefill's
  // [T, H] activations), on the calling thread otherwise (decode's single row).
  template <typename Fn>
  void for_rows(int64_t rows, int64_t row_elems, const Fn& fn);
  // for_rows over n elements of a flat tensor: fn(e0, e1), split in runs of whole 64-float blocks.
  template <typename Fn>
  void for_elements(int64_t n, const Fn& fn) {
    constexpr int64_t kRun = 64;
    for_rows((n + kRun - 1) / kRun, kRun, [&](int64_t r0, int64_t r1) { fn(r0 * kRun, std::min(n, r1 * kRun)); });
  }
};

}  // namespace hfs::cpu_fast
