#include "backends/cpu_fast/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/elementwise.h"
#include "backends/cpu_fast/huge_slab.h"
#include "backends/cpu_fast/linear.h"
#include "backends/cpu_fast/step_profile.h"
#include "backends/cpu_fast/thread_pool.h"
#include "hfstatic/method.h"
#include "hfstatic/ops.h"

namespace hfs::cpu_fast {
namespace {

bool is_float_weight(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }
bool is_kv(DType d) { return d == DType::kF32 || d == DType::kF16; }

enum class Op {
  kLinear, kAttention, kRmsNorm, kSilu, kSiluMul, kGelu, kMul, kAdd, kScale, kSoftcap, kRope, kEmbedding,
  kKvWrite, kReshape
};

const std::map<std::string, Op, std::less<>>& op_table() {
  static const std::map<std::string, Op, std::less<>> t = {
      {"linear", Op::kLinear},   {"attention", Op::kAttention}, {"rms_norm", Op::kRmsNorm},
      {"silu", Op::kSilu},       {"gelu_tanh", Op::kGelu},      {"mul", Op::kMul},
      {"add", Op::kAdd},         {"scale", Op::kScale},         {"softcap", Op::kSoftcap},
      {"rope", Op::kRope},       {"embedding", Op::kEmbedding}, {"kv_cache_write", Op::kKvWrite},
      {"reshape", Op::kReshape}};
  return t;
}

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
};

class FastDelegate : public Delegate {
 public:
  ~FastDelegate() override { profile.report(stderr); }
  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) override;
  size_t scratch_bytes() const override;

  std::shared_ptr<ThreadPool> pool;
  std::vector<Val> vals;
  std::vector<Step> steps;
  std::vector<std::shared_ptr<PackedWeight>> weights;  // integer formats shared process-wide (packed once)
  std::vector<int> weight_runtime_value;  // float weights that are not constants: value id, else -1
  Buffer arena;
  LinearScratch lin_scratch;
  AttentionScratch attn_scratch;
  std::vector<std::vector<int32_t>> live_lists;
  std::vector<int64_t> live_count;
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
  Status run_rope_kv_group(const Step& last);
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

template <typename Fn>
void FastDelegate::for_rows(int64_t rows, int64_t row_elems, const Fn& fn) {
  // Below ~16 Ki elements per task a pool job costs more than it saves: SmolLM2's 32-row prefill chunk
  // ([32, 576] adds, RoPE, cache writes) got slower when split in two, so that stays on the caller. The
  // 128-row chunk's float-path residual adds and RMSNorms ([128, 576] / [128, 896]) split 4 ways; at 64 Ki
  // they ran serially. 512-token prefills on 2 threads, 16 Ki against 64 Ki: SmolLM2 f16 +1 to +7 %,
  // Qwen2.5 f16 +5 to +10 %; int8 (adds and norms run inside the quantization job) +-1 %; 1 thread
  // unchanged (docs/cpu-fast-backend.md, "Thread pool").
  constexpr int64_t kPerTask = 16384;
  const int64_t total = rows * row_elems;
  const int64_t tasks =
      pool && pool->size() > 1 && total >= 2 * kPerTask ? std::min<int64_t>({total / kPerTask, 4 * pool->size(), rows}) : 1;
  if (tasks <= 1) {
    fn(int64_t{0}, rows);
    return;
  }
  pool->run(tasks, [&](int64_t t) { fn(rows * t / tasks, rows * (t + 1) / tasks); });
}

// Packing progress → ConstantStore::release_pages of the bytes packing has finished reading.
std::function<void(uint64_t)> page_releaser(const ConstantStore* store, const std::string& name) {
  return [store, name, released = uint64_t{0}](uint64_t bytes) mutable {
    if (store != nullptr && bytes > released) store->release_pages(name, released, bytes - released);
    released = bytes;
  };
}

// The chunk's rows T of a RoPE step ([1, T, H, D] input) or of a K/V cache write ([1, T, H, D] source
// rows, operand 1; operand 0 is the cache), or -1 for any other step: what groups them (run_rope_kv_group).
int64_t rope_kv_rows(const Step& s, const std::vector<Val>& vals) {
  if (s.op == Op::kRope) return vals[static_cast<size_t>(s.in[0])].type.shape[1];
  if (s.op == Op::kKvWrite) {
    const TensorType& src = vals[static_cast<size_t>(s.in[1])].type;
    return src.shape.rank() == 4 ? src.shape[1] : -1;
  }
  return -1;
}

float* fp(const std::vector<void*>& p, int id) { return id < 0 ? nullptr : static_cast<float*>(p[static_cast<size_t>(id)]); }

Status FastDelegate::execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) {
  if (inputs.size() != n_inputs || outputs.size() != n_outputs)
    return make_error(ErrorCode::kBadBinding, "cpu_fast: expected " + std::to_string(n_inputs) + " inputs and " +
                                                  std::to_string(n_outputs) + " outputs, got " +
                                                  std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  for (size_t i = 0; i < vals.size(); ++i) {
    Val& v = vals[i];
    switch (v.kind) {
      case Val::kInput: {
        const TensorView& tv = inputs[static_cast<size_t>(v.input)];
        if (tv.dtype != v.type.dtype || tv.shape != v.type.shape || tv.ptr == nullptr)
          return make_error(ErrorCode::kBadBinding, "cpu_fast: input '" + v.name + "': expected " + v.type.to_string() +
                                                        ", got " + tv.type().to_string());
        ptr[i] = tv.ptr;
        break;
      }
      case Val::kConst: ptr[i] = v.ptr; break;
      case Val::kArena: ptr[i] = static_cast<char*>(arena.data()) + v.offset; break;
      case Val::kAlias: ptr[i] = ptr[static_cast<size_t>(v.root)]; break;
    }
    if (v.output >= 0 && v.kind == Val::kArena) {
      const TensorView& tv = outputs[static_cast<size_t>(v.output)];
      if (tv.dtype != v.type.dtype || tv.shape != v.type.shape || tv.ptr == nullptr)
        return make_error(ErrorCode::kBadBinding, "cpu_fast: output '" + v.name + "': expected " + v.type.to_string() +
                                                      ", got " + tv.type().to_string());
      ptr[i] = tv.ptr;
    }
  }
  std::fill(live_count.begin(), live_count.end(), -1);
  acts_value = -1;
  rope_pos_value = rope_freq_value = -1;
  if (profile.on()) profile.count_execute();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (!profile.on()) {
      Status st = run_step(s);
      if (!st.ok()) return st.error().with_context("cpu_fast: " + s.label);
      continue;
    }
    const ThreadPool::Accounting a0 = pool->accounting();
    const auto t0 = std::chrono::steady_clock::now();
    Status st = run_step(s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    profile.add(i, seconds, pool->accounting() - a0);
    if (!st.ok()) return st.error().with_context("cpu_fast: " + s.label);
  }
  for (auto [v, o] : output_copies) {
    const TensorView& tv = outputs[static_cast<size_t>(o)];
    if (tv.dtype != vals[static_cast<size_t>(v)].type.dtype || tv.shape != vals[static_cast<size_t>(v)].type.shape)
      return make_error(ErrorCode::kBadBinding, "cpu_fast: output '" + vals[static_cast<size_t>(v)].name +
                                                    "': expected " + vals[static_cast<size_t>(v)].type.to_string() +
                                                    ", got " + tv.type().to_string());
    if (tv.ptr != ptr[static_cast<size_t>(v)]) std::memcpy(tv.ptr, ptr[static_cast<size_t>(v)], tv.nbytes());
  }
  return Ok{};
}

size_t FastDelegate::scratch_bytes() const {
  size_t b = arena.size() + lin_scratch.bytes() + attn_scratch.scores.size() * 4 + rope_cs.size() * 4;
  for (const auto& w : weights) b += w->is_integer() || w->copy.size() > 0 ? w->weight_bytes() : 0;  // packed or copied
  for (const auto& l : live_lists) b += l.size() * 4;
  return b;
}

RowPrologue FastDelegate::input_prologue(const Step& l) {
  if (l.pre_add < 0 && l.pre_norm < 0) return {};
  InputPrologue& p = prologue_;
  p = InputPrologue{};
  if (l.pre_add >= 0) {
    const Step& a = steps[static_cast<size_t>(l.pre_add)];
    p.a = fp(ptr, a.in[0]);
    p.b = fp(ptr, a.in[1]);
    p.sum = fp(ptr, a.out);
  }
  if (l.pre_norm >= 0) {
    const Step& nm = steps[static_cast<size_t>(l.pre_norm)];
    p.norm_in = fp(ptr, nm.in[0]);
    p.norm_w = fp(ptr, nm.in[1]);
    p.norm_out = fp(ptr, nm.out);
    p.eps = nm.f0;
    p.unit_offset = nm.flag;
  }
  const Step& last = steps[static_cast<size_t>(l.pre_norm >= 0 ? l.pre_norm : l.pre_add)];
  const TensorType& t = vals[static_cast<size_t>(last.out)].type;
  p.d = t.shape[t.shape.rank() - 1];
  // The same kernels the two steps run, on whole rows: bit-identical to running the steps.
  return {[](void* ctx, int64_t r0, int64_t r1) {
            const auto& q = *static_cast<const InputPrologue*>(ctx);
            const int64_t o = r0 * q.d, n = (r1 - r0) * q.d;
            if (q.sum != nullptr) add(q.a + o, q.b + o, n, q.sum + o);
            if (q.norm_out != nullptr) rms_norm(q.norm_in + o, q.norm_w, r1 - r0, q.d, q.eps, q.unit_offset, q.norm_out + o);
          },
          &p};
}

Status FastDelegate::run_step(const Step& s) {
  if (s.run_by >= 0) return Ok{};  // runs inside a later step (that linear's quantization job, a group)
  if (!s.group.empty()) return run_rope_kv_group(s);
  return run_op(s);
}

void FastDelegate::prepare_rope(const Step& s) {
  const TensorType& x = vals[static_cast<size_t>(s.in[0])].type;
  const int64_t T = x.shape[1], r = 2 * vals[static_cast<size_t>(s.in[2])].type.shape[0];
  if (rope_pos_value != s.in[1] || rope_freq_value != s.in[2] || rope_scaling != s.f0) {
    rope_angles(static_cast<const int32_t*>(ptr[static_cast<size_t>(s.in[1])]),
                static_cast<const float*>(ptr[static_cast<size_t>(s.in[2])]), T, r, s.f0, rope_cs.data());
    rope_pos_value = s.in[1];
    rope_freq_value = s.in[2];
    rope_scaling = s.f0;
  }
}

Status FastDelegate::check_slots(const Step& s, bool* increasing) const {
  const auto* slots = static_cast<const int32_t*>(ptr[static_cast<size_t>(s.in[2])]);
  const int64_t T = vals[static_cast<size_t>(s.in[2])].type.shape.numel();
  const int64_t S = vals[static_cast<size_t>(s.in[0])].type.shape[2];
  for (int64_t i = 0; i < T; ++i)
    if (slots[i] >= S)
      return make_error(ErrorCode::kExecution, "slot " + std::to_string(slots[i]) + " for row " + std::to_string(i) +
                                                   " is outside the cache (" + std::to_string(S) + " slots)");
  // Rows are written in parallel only when no slot repeats (then order cannot matter); the contract's
  // slots always increase, anything else keeps the sequential last-write-wins order.
  *increasing = true;
  for (int64_t i = 0, last = -1; i < T && *increasing; ++i)
    if (slots[i] >= 0) {
      *increasing = slots[i] > last;
      last = slots[i];
    }
  return Ok{};
}

// Every member works on rows of the same chunk, and row t of a member's output depends only on row t
// of its inputs, so one task can run all members on its rows in order: the k it rotates is in its cache
// when it writes it to the K cache, and the four passes are one job instead of four serial ones.
Status FastDelegate::run_rope_kv_group(const Step& last) {
  bool increasing = true;
  for (int m : last.group) {
    const Step& s = steps[static_cast<size_t>(m)];
    if (s.op == Op::kRope) prepare_rope(s);
    if (s.op == Op::kKvWrite) {
      bool inc = true;
      if (Status st = check_slots(s, &inc); !st.ok()) return st.error().with_context("cpu_fast: " + s.label);
      increasing = increasing && inc;
    }
  }
  if (!increasing) {  // a repeated slot: each step on its own, in order
    for (int m : last.group)
      if (Status st = run_op(steps[static_cast<size_t>(m)]); !st.ok()) return st;
    return Ok{};
  }
  const int64_t T = rope_kv_rows(last, vals);  // every member's
  int64_t row_elems = 0;
  for (int m : last.group) {
    const TensorType& x = vals[static_cast<size_t>(steps[static_cast<size_t>(m)].in[steps[static_cast<size_t>(m)].op == Op::kRope ? 0 : 1])].type;
    row_elems += x.shape.numel() / T;
  }
  auto rows = [&](int64_t t0, int64_t t1) {
    for (int m : last.group) {
      const Step& s = steps[static_cast<size_t>(m)];
      float* y = fp(ptr, s.out);
      if (s.op == Op::kRope) {
        const TensorType& x = vals[static_cast<size_t>(s.in[0])].type;
        const int64_t H = x.shape[2], D = x.shape[3], r = 2 * vals[static_cast<size_t>(s.in[2])].type.shape[0];
        rope_apply(fp(ptr, s.in[0]) + t0 * H * D, rope_cs.data() + t0 * r, t1 - t0, H, D, r, y + t0 * H * D);
      } else {
        const TensorType& c = vals[static_cast<size_t>(s.in[0])].type;
        const int64_t H = c.shape[1], S = c.shape[2], D = c.shape[3];
        const auto* slots = static_cast<const int32_t*>(ptr[static_cast<size_t>(s.in[2])]);
        kv_cache_write(y, c.dtype, fp(ptr, s.in[1]) + t0 * H * D, slots + t0, t1 - t0, H, S, D);
      }
    }
  };
  // One task per thread (each its own rows) once a chunk has ≥ 8 rows and the group ≥ 16 Ki elements:
  // the separate steps were each below for_rows' threshold and ran serially.
  const int64_t tasks = pool && pool->size() > 1 && T >= 8 && T * row_elems >= (int64_t{16} << 10)
                            ? std::min<int64_t>(pool->size(), T)
                            : 1;
  if (tasks <= 1)
    rows(0, T);
  else
    pool->run(tasks, [&](int64_t t) { rows(T * t / tasks, T * (t + 1) / tasks); });
  return Ok{};
}

Status FastDelegate::run_op(const Step& s) {
  const TensorType& ot = vals[static_cast<size_t>(s.out)].type;
  float* y = fp(ptr, s.out);
  auto in_t = [&](int k) -> const TensorType& { return vals[static_cast<size_t>(s.in[static_cast<size_t>(k)])].type; };
  auto in_p = [&](int k) -> void* { return s.in[static_cast<size_t>(k)] < 0 ? nullptr : ptr[static_cast<size_t>(s.in[static_cast<size_t>(k)])]; };
  const int64_t n = ot.shape.numel();
  switch (s.op) {
    case Op::kLinear: {
      if (s.batched) return Ok{};
      PackedWeight& w = *weights[static_cast<size_t>(s.weight)];
      if (weight_runtime_value[static_cast<size_t>(s.weight)] >= 0) w.raw = in_p(1);
      const int64_t m = in_t(0).shape.numel() / w.k;
      const float* x = static_cast<const float*>(in_p(0));
      const float* bias = s.in.size() > 2 ? static_cast<const float*>(in_p(2)) : nullptr;
      if (!s.batch.empty()) {
        // q/k/v or gate/up: one pool job for all of them.
        LinearJob jobs[8];
        for (size_t j = 0; j <= s.batch.size(); ++j) {
          const Step& member = j == 0 ? s : steps[static_cast<size_t>(s.batch[j - 1])];
          jobs[j].w = weights[static_cast<size_t>(member.weight)].get();
          jobs[j].bias = member.in.size() > 2 && member.in[2] >= 0 ? fp(ptr, member.in[2]) : nullptr;
          jobs[j].y = fp(ptr, member.out);
        }
        QuantizedActs& a = lin_scratch.acts;
        if (w.is_integer() && (acts_value != s.in[0] || acts_offset != act_offset(w.format) || acts_kp != w.k_padded)) {
          a.k_padded = w.k_padded;
          quantize_acts(x, m, w.k, act_offset(w.format), a, pool.get(), input_prologue(s));
          acts_value = s.in[0];
          acts_offset = act_offset(w.format);
          acts_kp = w.k_padded;
        }
        if (s.glu_out >= 0)
          linear_glu(jobs[s.glu_gate_first ? 0 : 1], jobs[s.glu_gate_first ? 1 : 0], x, &a, m, fp(ptr, s.glu_out), pool.get());
        else
          linear_batch(std::span<const LinearJob>(jobs, s.batch.size() + 1), x, &a, m, pool.get());
      } else if (!w.is_integer()) {
        linear(w, x, m, bias, y, lin_scratch, pool.get());
      } else {
        // Several linears read the same activation (q/k/v, gate/up): quantize it once per step. Values
        // are SSA, so the id identifies the content for the rest of this execute.
        QuantizedActs& a = lin_scratch.acts;
        if (acts_value != s.in[0] || acts_offset != act_offset(w.format) || acts_kp != w.k_padded) {
          a.k_padded = w.k_padded;
          quantize_acts(x, m, w.k, act_offset(w.format), a, pool.get(), input_prologue(s));
          acts_value = s.in[0];
          acts_offset = act_offset(w.format);
          acts_kp = w.k_padded;
        }
        linear_quantized(w, a, m, bias, y, pool.get());
      }
      return Ok{};
    }
    case Op::kAttention: {
      const TensorType& q = in_t(0);
      const TensorType& k = in_t(1);
      const int64_t T = q.shape[1], S = k.shape[2];
      const size_t li = static_cast<size_t>(s.live);
      const float* mask = static_cast<const float*>(in_p(3));
      if (live_count[li] < 0) live_count[li] = live_slots(mask, T, S, live_lists[li].data());
      AttentionArgs a;
      a.q = static_cast<const float*>(in_p(0));
      a.k = in_p(1);
      a.v = in_p(2);
      a.kv_dtype = k.dtype;
      a.mask = mask;
      a.out = y;
      a.t = T;
      a.hq = q.shape[2];
      a.hkv = k.shape[1];
      a.s = S;
      a.d = q.shape[3];
      a.scale = s.f0;
      a.softcap = s.f1;
      attention(a, live_lists[li].data(), live_count[li], attn_scratch, pool.get());
      return Ok{};
    }
    case Op::kRmsNorm: {
      const int64_t d = ot.shape[ot.shape.rank() - 1];
      const auto* x = static_cast<const float*>(in_p(0));
      const auto* w = static_cast<const float*>(in_p(1));
      for_rows(n / d, d, [&](int64_t r0, int64_t r1) { rms_norm(x + r0 * d, w, r1 - r0, d, s.f0, s.flag, y + r0 * d); });
      return Ok{};
    }
    case Op::kSilu: silu(static_cast<const float*>(in_p(0)), n, y); return Ok{};
    case Op::kSiluMul: {
      const auto* g = static_cast<const float*>(in_p(0));
      const auto* u = static_cast<const float*>(in_p(1));
      for_elements(n, [&](int64_t e0, int64_t e1) { silu_mul(g + e0, u + e0, e1 - e0, y + e0); });
      return Ok{};
    }
    case Op::kGelu: gelu_tanh(static_cast<const float*>(in_p(0)), n, y); return Ok{};
    case Op::kMul:
    case Op::kAdd: {
      const auto* a = static_cast<const float*>(in_p(0));
      const auto* b = static_cast<const float*>(in_p(1));
      for_elements(n, [&](int64_t e0, int64_t e1) { (s.op == Op::kAdd ? add : mul)(a + e0, b + e0, e1 - e0, y + e0); });
      return Ok{};
    }
    case Op::kScale: scale(static_cast<const float*>(in_p(0)), s.f0, n, y); return Ok{};
    case Op::kSoftcap: softcap(static_cast<const float*>(in_p(0)), s.f0, n, y); return Ok{};
    case Op::kRope: {
      const TensorType& x = in_t(0);
      const int64_t T = x.shape[1], H = x.shape[2], D = x.shape[3], r = 2 * in_t(2).shape[0];
      prepare_rope(s);
      const auto* xp = static_cast<const float*>(in_p(0));
      for_rows(T, H * D, [&](int64_t t0, int64_t t1) {
        rope_apply(xp + t0 * H * D, rope_cs.data() + t0 * r, t1 - t0, H, D, r, y + t0 * H * D);
      });
      return Ok{};
    }
    case Op::kEmbedding: {
      const TensorType& table = in_t(0);
      const auto* ids = static_cast<const int32_t*>(in_p(1));
      const int64_t T = in_t(1).shape.numel(), V = table.shape[0];
      for (int64_t i = 0; i < T; ++i)
        if (ids[i] < 0 || ids[i] >= V)
          return make_error(ErrorCode::kExecution, "token id " + std::to_string(ids[i]) + " at position " +
                                                       std::to_string(i) + " is outside the vocabulary [0, " +
                                                       std::to_string(V) + ")");
      if (s.weight >= 0) {
        gather_rows(*weights[static_cast<size_t>(s.weight)], ids, T, y);
        return Ok{};
      }
      const float* scale = table.dtype == DType::kI8 ? static_cast<const float*>(in_p(2)) : nullptr;
      embedding(in_p(0), table.dtype, scale, ids, T, table.shape[1], y);
      return Ok{};
    }
    case Op::kKvWrite: {
      const TensorType& c = in_t(0);
      const auto* slots = static_cast<const int32_t*>(in_p(2));
      const int64_t T = in_t(2).shape.numel(), S = c.shape[2];
      bool increasing = true;
      HFS_TRY(check_slots(s, &increasing));
      // The output aliases the cache: writing through it updates the caller's state buffer in place.
      const auto* rows = static_cast<const float*>(in_p(1));
      const int64_t H = c.shape[1], D = c.shape[3];
      auto write = [&](int64_t t0, int64_t t1) { kv_cache_write(y, c.dtype, rows + t0 * H * D, slots + t0, t1 - t0, H, S, D); };
      if (increasing)
        for_rows(T, H * D, write);
      else
        write(0, T);
      return Ok{};
    }
    case Op::kReshape: return Ok{};  // pure view
  }
  return Ok{};
}

std::string label(size_t i, const NodeDef& n) {
  return "node " + std::to_string(i) + " (" + n.op + (n.outputs.empty() ? "" : " '" + n.outputs[0] + "'") + ")";
}

// Output types for the ops this backend runs (the verifier already checked the program; these only
// need to be right for valid graphs, and reject what the kernels cannot do).
Result<TensorType> out_type(Op op, const NodeDef& node, const std::vector<const TensorType*>& in) {
  auto need = [&](size_t i) -> Status {
    if (i >= in.size() || in[i] == nullptr)
      return make_error(ErrorCode::kInvalidArgument, "operand " + std::to_string(i) + " missing");
    return Ok{};
  };
  HFS_TRY(need(0));
  switch (op) {
    case Op::kLinear: {
      HFS_TRY(need(1));
      TensorType t{DType::kF32, in[0]->shape};
      t.shape[t.shape.rank() - 1] = in[1]->shape[0];
      return t;
    }
    case Op::kEmbedding: {
      HFS_TRY(need(1));
      std::vector<int64_t> dims = in[1]->shape.to_vector();
      dims.push_back(in[0]->shape[1]);
      return TensorType{DType::kF32, Shape(std::span<const int64_t>(dims))};
    }
    case Op::kReshape: {
      std::vector<int64_t> dims = attr_ints(node.attrs, "shape");
      int64_t known = 1, neg = -1;
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == -1)
          neg = static_cast<int64_t>(i);
        else
          known *= dims[i];
      }
      if (neg >= 0 && known > 0) dims[static_cast<size_t>(neg)] = in[0]->shape.numel() / known;
      if (dims.size() > static_cast<size_t>(kMaxRank))
        return make_error(ErrorCode::kShapeMismatch, "reshape to rank " + std::to_string(dims.size()));
      TensorType t{in[0]->dtype, Shape(std::span<const int64_t>(dims))};
      if (t.shape.numel() != in[0]->shape.numel())
        return make_error(ErrorCode::kShapeMismatch, "reshape " + in[0]->to_string() + " to " + t.shape.to_string());
      return t;
    }
    default:
      return *in[0];
  }
}

}  // namespace

CpuFastBackend::CpuFastBackend(int threads) : pool_(std::make_shared<ThreadPool>(threads)) {}
CpuFastBackend::~CpuFastBackend() = default;
int CpuFastBackend::threads() const { return pool_->size(); }
std::shared_ptr<Allocator> CpuFastBackend::allocator() const { return huge_page_allocator(); }

bool CpuFastBackend::supports(const NodeDef& node, std::span<const TensorType* const> types) const {
  auto it = op_table().find(node.op);
  if (it == op_table().end()) return false;
  auto in = [&](size_t i) -> const TensorType* { return i < types.size() ? types[i] : nullptr; };
  auto is = [&](size_t i, DType d) { return in(i) != nullptr && in(i)->dtype == d; };
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] != nullptr && types[i]->shape.rank() == 0 && node.op != "reshape") return false;
  switch (it->second) {
    case Op::kLinear: {
      if (!is(0, DType::kF32) || in(1) == nullptr || in(1)->shape.rank() != 2) return false;
      if (in(2) != nullptr && !is(2, DType::kF32)) return false;
      const DType w = in(1)->dtype;
      if (w == DType::kI8) return is(3, DType::kF32);
      if (types.size() > 3 && in(3) != nullptr) return false;
      if (w == DType::kQ8_0 || w == DType::kQ4_0) return in(1)->shape[1] % 32 == 0;
      return is_float_weight(w);
    }
    case Op::kAttention:
      return is(0, DType::kF32) && in(1) && is_kv(in(1)->dtype) && is(2, in(1)->dtype) && is(3, DType::kF32) &&
             in(0)->shape.rank() == 4 && in(1)->shape.rank() == 4;
    case Op::kRope: return is(0, DType::kF32) && is(1, DType::kI32) && is(2, DType::kF32) && in(0)->shape.rank() == 4;
    case Op::kEmbedding:
      return in(0) && in(0)->shape.rank() == 2 && is(1, DType::kI32) &&
             (is_float_weight(in(0)->dtype) ? in(2) == nullptr : in(0)->dtype == DType::kI8 && is(2, DType::kF32));
    case Op::kKvWrite:
      return in(0) && is_kv(in(0)->dtype) && in(0)->shape.rank() == 4 && is(1, DType::kF32) && is(2, DType::kI32);
    case Op::kReshape: return in(0) != nullptr;
    default:
      for (size_t i = 0; i < types.size(); ++i)
        if (types[i] != nullptr && types[i]->dtype != DType::kF32) return false;
      return in(0) != nullptr;
  }
}

Result<std::unique_ptr<Delegate>> CpuFastBackend::compile(const Subgraph& sg) {
  auto d = std::make_unique<FastDelegate>();
  d->pool = pool_;
  d->n_inputs = sg.inputs.size();
  d->n_outputs = sg.outputs.size();
  // Float constants are copied onto huge pages only where the originals' pages can be dropped (a file
  // mapping): decode reads the copy faster, and RSS still holds one copy (docs/cpu-fast-backend.md).
  const bool copy_floats = sg.constants != nullptr && sg.constants->releases_pages();
  std::map<std::string, int, std::less<>> ids;
  // Steps hold pointers to value types while later values are added: reserve so vals never moves.
  size_t max_vals = sg.inputs.size();
  for (const NodeDef& n : sg.nodes) max_vals += n.inputs.size() + n.outputs.size();
  d->vals.reserve(max_vals);
  auto add_val = [&](Val v) {
    ids[v.name] = static_cast<int>(d->vals.size());
    d->vals.push_back(std::move(v));
    return static_cast<int>(d->vals.size()) - 1;
  };
  for (size_t i = 0; i < sg.inputs.size(); ++i) {
    Val v;
    v.name = sg.inputs[i].name;
    v.type = sg.inputs[i].type;
    v.kind = Val::kInput;
    v.input = static_cast<int>(i);
    add_val(std::move(v));
  }
  auto lookup = [&](const std::string& name, const std::string& where) -> Result<int> {
    if (auto it = ids.find(name); it != ids.end()) return it->second;
    const TensorView* c = sg.constants ? sg.constants->find(name) : nullptr;
    if (c == nullptr)
      return make_error(ErrorCode::kUndefinedValue, "cpu_fast: " + where + ": value '" + name +
                                                        "' is neither a subgraph input, a constant nor defined earlier");
    Val v;
    v.name = name;
    v.type = c->type();
    v.kind = Val::kConst;
    v.ptr = c->ptr;
    return add_val(std::move(v));
  };

  // Pass 1: resolve nodes into steps.
  for (size_t ni = 0; ni < sg.nodes.size(); ++ni) {
    const NodeDef& node = sg.nodes[ni];
    const std::string where = label(ni, node);
    auto it = op_table().find(node.op);
    if (it == op_table().end() || node.outputs.size() != 1)
      return make_error(ErrorCode::kUnsupported, "cpu_fast: " + where + ": op not supported by this backend");
    Step s;
    s.op = it->second;
    s.label = where;
    std::vector<const TensorType*> types;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        s.in.push_back(-1);
        types.push_back(nullptr);
        continue;
      }
      auto id = lookup(name, where);
      if (!id.ok()) return id.error();
      s.in.push_back(*id);
      types.push_back(&d->vals[static_cast<size_t>(*id)].type);
    }
    if (!supports(node, types))
      return make_error(ErrorCode::kUnsupported, "cpu_fast: " + where + ": operand types not supported");
    auto ot = out_type(s.op, node, types);
    if (!ot.ok()) return ot.error().with_context("cpu_fast: " + where);
    Val out;
    out.name = node.outputs[0];
    out.type = *ot;
    out.def = static_cast<int>(d->steps.size());
    if (s.op == Op::kReshape || s.op == Op::kKvWrite) {
      out.kind = Val::kAlias;
      int root = s.in[0];
      while (d->vals[static_cast<size_t>(root)].kind == Val::kAlias) root = d->vals[static_cast<size_t>(root)].root;
      out.root = root;
    }
    if (ids.count(out.name))
      return make_error(ErrorCode::kValueRedefined, "cpu_fast: " + where + ": value '" + out.name + "' defined twice");
    s.out = add_val(std::move(out));
    switch (s.op) {
      case Op::kRmsNorm:
        s.f0 = static_cast<float>(attr_float(node.attrs, "eps", 1e-6));
        s.flag = attr_bool(node.attrs, "unit_offset", false);
        break;
      case Op::kScale: s.f0 = static_cast<float>(attr_float(node.attrs, "value", 1.0)); break;
      case Op::kSoftcap: s.f0 = static_cast<float>(attr_float(node.attrs, "cap", 1.0)); break;
      case Op::kRope: s.f0 = static_cast<float>(attr_float(node.attrs, "attention_scaling", 1.0)); break;
      case Op::kAttention: {
        s.f0 = static_cast<float>(attr_float(node.attrs, "scale", 1.0));
        s.f1 = static_cast<float>(attr_float(node.attrs, "softcap", 0.0));
        const int mask = s.in[3];
        auto lm = std::find(d->live_mask_value.begin(), d->live_mask_value.end(), mask);
        if (lm == d->live_mask_value.end()) {
          d->live_mask_value.push_back(mask);
          d->live_lists.emplace_back(static_cast<size_t>(d->vals[static_cast<size_t>(s.in[1])].type.shape[2]));
          lm = d->live_mask_value.end() - 1;
        }
        s.live = static_cast<int>(lm - d->live_mask_value.begin());
        break;
      }
      case Op::kLinear: {
        const Val& wv = d->vals[static_cast<size_t>(s.in[1])];
        const int64_t n = wv.type.shape[0], k = wv.type.shape[1];
        const float* scale = nullptr;
        if (wv.type.dtype == DType::kI8) {
          const Val& sv = d->vals[static_cast<size_t>(s.in[3])];
          if (sv.kind != Val::kConst || sv.type.shape.numel() != n)
            return make_error(ErrorCode::kUnsupported, "cpu_fast: " + where + ": i8 weight scale '" + sv.name +
                                                           "' must be a constant of " + std::to_string(n) + " floats");
          scale = static_cast<const float*>(sv.ptr);
        }
        const bool is_const = wv.kind == Val::kConst;
        if (!is_const && !is_float_weight(wv.type.dtype))
          return make_error(ErrorCode::kUnsupported, "cpu_fast: " + where + ": " + std::string(dtype_name(wv.type.dtype)) +
                                                         " weight '" + wv.name + "' must be a constant (packed at load)");
        std::shared_ptr<PackedWeight> packed;
        if (!is_const || (is_float_weight(wv.type.dtype) && !copy_floats)) {
          // Float weights read in place: a runtime one gets its pointer per execute (a placeholder keeps
          // pack_weight happy); a constant whose pages would stay resident is not worth a second copy.
          static const float kPlaceholder = 0;
          auto pw = pack_weight(wv.type.dtype, is_const ? wv.ptr : &kPlaceholder, n, k, scale);
          if (!pw.ok()) return pw.error().with_context("cpu_fast: " + where);
          packed = std::make_shared<PackedWeight>(std::move(*pw));
        } else {
          // Only the packed copy (for float weights: the copy on huge pages) is read from now on: a
          // file-mapped program drops the original's pages as packing moves through it, so peak RSS holds
          // one copy of the weights, not two.
          auto pw = shared_packed_weight(wv.type.dtype, wv.ptr, n, k, scale, page_releaser(sg.constants, wv.name), pool_.get());
          if (!pw.ok()) return pw.error().with_context("cpu_fast: " + where);
          packed = std::move(*pw);
        }
        s.weight = static_cast<int>(d->weights.size());
        d->weights.push_back(std::move(packed));
        d->weight_runtime_value.push_back(is_const ? -1 : s.in[1]);
        break;
      }
      default: break;
    }
    d->steps.push_back(std::move(s));
  }

  // An i8 or float embedding gathers its rows from the table's packed copy — the one a tied LM head uses
  // (packing is shared process-wide, whichever delegate comes first packs): packing releases the table's
  // pages, and gathering from the original would fault them back in (~20 µs per new token's page, and RSS
  // creeping toward a second copy of the table over a long generation).
  for (Step& s : d->steps) {
    if (s.op != Op::kEmbedding || s.in.empty()) continue;
    const Val& table = d->vals[static_cast<size_t>(s.in[0])];
    if (table.kind != Val::kConst || table.type.shape.rank() != 2) continue;
    const float* scale_ptr = nullptr;
    if (table.type.dtype == DType::kI8) {
      if (s.in.size() < 3 || s.in[2] < 0) continue;
      const Val& scale = d->vals[static_cast<size_t>(s.in[2])];
      if (scale.kind != Val::kConst || scale.type.shape.numel() != table.type.shape[0]) continue;
      scale_ptr = static_cast<const float*>(scale.ptr);
    } else if (!is_float_weight(table.type.dtype) || !copy_floats) {
      continue;
    }
    auto pw = shared_packed_weight(table.type.dtype, table.ptr, table.type.shape[0], table.type.shape[1], scale_ptr,
                                   page_releaser(sg.constants, table.name), pool_.get());
    if (!pw.ok()) return pw.error().with_context("cpu_fast: " + s.label);
    s.weight = static_cast<int>(d->weights.size());
    d->weights.push_back(std::move(*pw));
    d->weight_runtime_value.push_back(-1);
  }

  // Batches: linears with the same input and constant weights of one kind (all float, or all integer
  // quantizing the activation the same way) run as one pool job, at the first one's place. Only
  // reshapes (pure views, no work at execute) may sit between them, so moving the later linears up
  // changes nothing else; steps are SSA, so no member reads another's output.
  for (size_t i = 0; i < d->steps.size(); ++i) {
    Step& lead = d->steps[i];
    if (lead.op != Op::kLinear || lead.batched || d->weight_runtime_value[static_cast<size_t>(lead.weight)] >= 0) continue;
    const PackedWeight& lw = *d->weights[static_cast<size_t>(lead.weight)];
    for (size_t j = i + 1; j < d->steps.size() && lead.batch.size() < 7; ++j) {
      const Step& s = d->steps[j];
      if (s.op == Op::kReshape) continue;
      if (s.op != Op::kLinear || s.in[0] != lead.in[0] || d->weight_runtime_value[static_cast<size_t>(s.weight)] >= 0) break;
      const PackedWeight& w = *d->weights[static_cast<size_t>(s.weight)];
      if (w.is_integer() != lw.is_integer() || w.k != lw.k) break;
      if (w.is_integer() && (act_offset(w.format) != act_offset(lw.format) || w.k_padded != lw.k_padded)) break;
      lead.batch.push_back(static_cast<int>(j));
    }
    for (int b : lead.batch) d->steps[static_cast<size_t>(b)].batched = true;
  }

  // Subgraph outputs.
  for (size_t o = 0; o < sg.outputs.size(); ++o) {
    auto it = ids.find(sg.outputs[o].name);
    if (it == ids.end())
      return make_error(ErrorCode::kOutputNotProduced, "cpu_fast: subgraph output '" + sg.outputs[o].name +
                                                           "' is not produced by the subgraph");
    Val& v = d->vals[static_cast<size_t>(it->second)];
    if (v.kind == Val::kArena && v.output < 0)
      v.output = static_cast<int>(o);
    else
      d->output_copies.emplace_back(it->second, static_cast<int>(o));
  }

  // Use counts (for fusion) and last uses (for planning; uses of an alias keep its root alive).
  std::vector<int> uses(d->vals.size(), 0);
  for (const Step& s : d->steps)
    for (int v : s.in)
      if (v >= 0) ++uses[static_cast<size_t>(v)];
  // Fuse silu(a) → b, mul(b, c) → y into silu_mul(a, c) → y when b has no other reader.
  std::vector<bool> dead(d->steps.size(), false);  // steps fusion turned into no-ops
  for (size_t i = 0; i + 1 < d->steps.size(); ++i) {
    Step& a = d->steps[i];
    if (a.op != Op::kSilu) continue;
    const int b = a.out;
    if (uses[static_cast<size_t>(b)] != 1 || d->vals[static_cast<size_t>(b)].output >= 0) continue;
    for (size_t j = i + 1; j < d->steps.size(); ++j) {
      Step& m = d->steps[j];
      if (m.op != Op::kMul || (m.in[0] != b && m.in[1] != b)) continue;
      const int other = m.in[0] == b ? m.in[1] : m.in[0];
      m.op = Op::kSiluMul;
      m.in = {a.in[0], other};
      a.op = Op::kReshape;  // now dead: a no-op
      a.in = {a.in[0]};
      dead[i] = true;
      d->vals[static_cast<size_t>(b)].kind = Val::kAlias;
      d->vals[static_cast<size_t>(b)].root = a.in[0];
      break;
    }
  }
  // Fuse gate/up + silu·mul: when silu_mul reads exactly the two outputs of a two-linear batch (gate and
  // up of one MLP, nobody else reading them), each task of the batch applies silu·up to the columns it
  // just produced, while they are in its cache — no separate pass over [T, I], no pool job, and no reads
  // of the other core's columns. The silu_mul step becomes a no-op; its output is born at the batch.
  std::fill(uses.begin(), uses.end(), 0);
  for (size_t i = 0; i < d->steps.size(); ++i)
    if (!dead[i])
      for (int v : d->steps[i].in)
        if (v >= 0) ++uses[static_cast<size_t>(v)];
  for (size_t i = 0; i < d->steps.size(); ++i) {
    Step& lead = d->steps[i];
    if (lead.op != Op::kLinear || lead.batch.size() != 1) continue;
    const Step& member = d->steps[static_cast<size_t>(lead.batch[0])];
    const PackedWeight& lw = *d->weights[static_cast<size_t>(lead.weight)];
    const PackedWeight& mw = *d->weights[static_cast<size_t>(member.weight)];
    if (lw.n != mw.n) continue;
    for (size_t j = static_cast<size_t>(lead.batch[0]) + 1; j < d->steps.size(); ++j) {
      Step& sm = d->steps[j];
      if (sm.op != Op::kSiluMul) continue;
      const bool gate_first = sm.in[0] == lead.out && sm.in[1] == member.out;
      if (!gate_first && !(sm.in[0] == member.out && sm.in[1] == lead.out)) continue;
      bool ok = true;
      for (int v : {lead.out, member.out})
        ok = ok && uses[static_cast<size_t>(v)] == 1 && d->vals[static_cast<size_t>(v)].output < 0;
      if (!ok) break;
      lead.glu_out = sm.out;
      lead.glu_gate_first = gate_first;
      sm.op = Op::kReshape;  // now a no-op; its inputs stay listed so gate/up live until here
      d->vals[static_cast<size_t>(sm.out)].def = static_cast<int>(i);
      break;
    }
  }
  // Fuse [add →] rms_norm → integer linear: when an RMSNorm's output is read first by the integer linear
  // (or batch) right after it, and maybe its input is the residual add right before it, both run row by
  // row inside the linear's activation quantization job (RowPrologue): on the pool instead of as two
  // serial passes, each core normalizing and quantizing the same rows while they are in its cache.
  // Their outputs are still written (the residual stream and later readers need them); only where
  // and when changes. Only reshapes (views) may sit between the three steps.
  auto prev_step = [&](size_t i) -> int {  // the nearest earlier step that does work, -1 if none
    for (size_t j = i; j-- > 0;)
      if (d->steps[j].op != Op::kReshape) return static_cast<int>(j);
    return -1;
  };
  for (size_t i = 0; i < d->steps.size(); ++i) {
    Step& l = d->steps[i];
    if (l.op != Op::kLinear || l.batched || !d->weights[static_cast<size_t>(l.weight)]->is_integer()) continue;
    const int ni = prev_step(i);
    if (ni < 0) continue;
    Step& nm = d->steps[static_cast<size_t>(ni)];
    const TensorType& nt = d->vals[static_cast<size_t>(nm.out)].type;
    if (nm.op != Op::kRmsNorm || nm.out != l.in[0] || nm.run_by >= 0 ||
        nt.shape[nt.shape.rank() - 1] != d->weights[static_cast<size_t>(l.weight)]->k)
      continue;
    l.pre_norm = ni;
    nm.run_by = static_cast<int>(i);
    const int ai = prev_step(static_cast<size_t>(ni));
    if (ai < 0) continue;
    Step& ad = d->steps[static_cast<size_t>(ai)];
    if (ad.op != Op::kAdd || ad.out != nm.in[0] || ad.run_by >= 0) continue;
    const int64_t n_out = d->vals[static_cast<size_t>(ad.out)].type.shape.numel();
    if (d->vals[static_cast<size_t>(ad.in[0])].type.shape.numel() != n_out ||
        d->vals[static_cast<size_t>(ad.in[1])].type.shape.numel() != n_out)
      continue;
    l.pre_add = ai;
    ad.run_by = static_cast<int>(i);
  }
  // Group runs of RoPE / K/V-cache-write steps (only reshapes between them) over the same rows: the
  // last one runs them all (run_rope_kv_group). Members read values made before the run or by earlier
  // members, so running them at the last member's place reads nothing that is not ready yet.
  for (size_t i = 0; i < d->steps.size();) {
    std::vector<int> run;
    const int64_t T = rope_kv_rows(d->steps[i], d->vals);
    size_t j = i;
    for (; j < d->steps.size() && T > 0; ++j) {
      const Step& s = d->steps[j];
      if (s.op == Op::kReshape && s.run_by < 0) continue;
      if (s.run_by >= 0 || rope_kv_rows(s, d->vals) != T) break;
      run.push_back(static_cast<int>(j));
    }
    if (run.size() >= 2) {
      Step& last = d->steps[static_cast<size_t>(run.back())];
      last.group = run;
      for (size_t k = 0; k + 1 < run.size(); ++k) d->steps[static_cast<size_t>(run[k])].run_by = run.back();
    }
    i = std::max(j, i + 1);
  }
  // Lifetimes: a step that a later step runs (a linear's prologue, a group member) uses its inputs there
  // (a value planned over them after their old last use would be written while that job still reads them).
  const int end = static_cast<int>(d->steps.size());
  for (size_t si = 0; si < d->steps.size(); ++si)
    for (int v : d->steps[si].in) {
      if (v < 0) continue;
      const int at = d->steps[si].run_by >= 0 ? d->steps[si].run_by : static_cast<int>(si);
      int r = v;
      while (d->vals[static_cast<size_t>(r)].kind == Val::kAlias) {
        d->vals[static_cast<size_t>(r)].last = std::max(d->vals[static_cast<size_t>(r)].last, at);
        r = d->vals[static_cast<size_t>(r)].root;
      }
      d->vals[static_cast<size_t>(r)].last = std::max(d->vals[static_cast<size_t>(r)].last, at);
    }
  for (auto [v, o] : d->output_copies) {
    int r = v;
    while (d->vals[static_cast<size_t>(r)].kind == Val::kAlias) r = d->vals[static_cast<size_t>(r)].root;
    d->vals[static_cast<size_t>(r)].last = end;
  }
  std::vector<PlanItem> items;
  std::vector<int> item_val;
  for (size_t i = 0; i < d->vals.size(); ++i) {
    const Val& v = d->vals[i];
    if (v.kind != Val::kArena || v.output >= 0) continue;
    PlanItem it;
    it.size = v.type.nbytes();
    it.first = static_cast<size_t>(v.def);
    it.last = static_cast<size_t>(std::max(v.def, v.last));
    items.push_back(it);
    item_val.push_back(static_cast<int>(i));
  }
  const size_t arena_bytes = plan_arena(items);
  for (size_t i = 0; i < items.size(); ++i) d->vals[static_cast<size_t>(item_val[i])].offset = items[i].offset;
  auto arena = huge_page_allocator()->allocate(arena_bytes);
  if (!arena.ok()) return arena.error().with_context("cpu_fast: arena");
  d->arena = std::move(*arena);

  // Scratch sized for the largest integer linear and attention.
  int64_t kp = 0, rows = 0, attn = 0, attn_group = 0, attn_d = 0, rope = 0, block_d = 0;
  bool mixed_attn = false;  // layers with different group sizes or D: no split scratch (decode never splits)
  for (const Step& s : d->steps) {
    if (s.op == Op::kLinear && d->weights[static_cast<size_t>(s.weight)]->is_integer()) {
      const PackedWeight& w = *d->weights[static_cast<size_t>(s.weight)];
      kp = std::max(kp, w.k_padded);
      rows = std::max(rows, d->vals[static_cast<size_t>(s.in[0])].type.shape.numel() / w.k);
    }
    if (s.op == Op::kRope)
      rope = std::max(rope, d->vals[static_cast<size_t>(s.in[0])].type.shape[1] * 2 *
                                d->vals[static_cast<size_t>(s.in[2])].type.shape[0]);
    if (s.op == Op::kAttention) {
      const TensorType& q = d->vals[static_cast<size_t>(s.in[0])].type;
      const TensorType& k = d->vals[static_cast<size_t>(s.in[1])].type;
      if (q.shape[2] % k.shape[1] != 0)
        return make_error(ErrorCode::kShapeMismatch, "cpu_fast: " + s.label + ": Hq = " + std::to_string(q.shape[2]) +
                                                         " is not a multiple of Hkv = " + std::to_string(k.shape[1]));
      if (attn_group != 0 && (attn_group != q.shape[2] / k.shape[1] || attn_d != q.shape[3])) mixed_attn = true;
      attn_group = std::max(attn_group, q.shape[2] / k.shape[1]);
      attn_d = std::max(attn_d, q.shape[3]);
      attn = std::max(attn, q.shape[2] / k.shape[1] * k.shape[2]);
      if (q.shape[1] > 1) block_d = std::max(block_d, q.shape[3]);  // prefill rows: the blocked kernel's buffer
    }
  }
  try {
    if (kp > 0) d->lin_scratch = LinearScratch(kp, rows);
    d->rope_cs.assign(static_cast<size_t>(rope), 0.0f);
    if (attn > 0) d->attn_scratch = AttentionScratch(pool_->size(), attn_group, (attn + attn_group - 1) / attn_group, mixed_attn ? 0 : attn_d, block_d);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted, "cpu_fast: cannot allocate kernel scratch");
  }
  d->live_count.assign(d->live_lists.size(), -1);
  d->ptr.assign(d->vals.size(), nullptr);
  if (StepProfile::requested()) {
    std::vector<std::string> kinds;
    for (const Step& s : d->steps) {
      std::string k = s.op == Op::kSiluMul ? "silu_mul" : s.label.substr(s.label.find('(') + 1);
      k = k.substr(0, k.find(' '));
      if (s.op == Op::kLinear) k += s.batched ? "_batched" : s.glu_out >= 0 ? "_glu" : !s.batch.empty() ? "_batch" : "";
      if (s.op == Op::kReshape) k = s.label.find("(reshape") != std::string::npos ? "reshape" : "fused_away";
      if (s.run_by >= 0) k = "fused_away";
      if (!s.group.empty()) k = "rope_kv_write";
      kinds.push_back(std::move(k));
    }
    d->profile.enable(std::move(kinds));
    d->profile.set_threads(pool_->size());
    pool_->set_accounting(true);
  }
  return std::unique_ptr<Delegate>(std::move(d));
}

Result<std::unique_ptr<Backend>> make_cpu_fast_backend(const Value& settings) {
  int threads = 0;
  if (settings.is_object()) {
    for (const auto& [key, v] : settings.as_object()) {
      if (key != "threads")
        return make_error(ErrorCode::kInvalidArgument, "cpu_fast: unknown setting '" + key + "' (known: threads)");
      if (!v.is_int() || v.as_int() < 0 || v.as_int() > 1024)
        return make_error(ErrorCode::kInvalidArgument,
                          "cpu_fast: setting 'threads' must be an integer in [0, 1024] (0 = one per CPU), got " + v.to_json());
      threads = static_cast<int>(v.as_int());
    }
  } else if (!settings.is_null()) {
    return make_error(ErrorCode::kInvalidArgument, "cpu_fast: settings must be an object, got " + settings.to_json());
  }
  return std::unique_ptr<Backend>(std::make_unique<CpuFastBackend>(threads));
}

namespace {
const bool kRegistered = register_backend("cpu_fast", [](const Value& s) { return make_cpu_fast_backend(s); });
}  // namespace

}  // namespace hfs::cpu_fast
