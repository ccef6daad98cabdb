#include "backends/cpu_fast/delegate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu_fast/elementwise.h"

namespace hfs::cpu_fast {

const std::map<std::string, Op, std::less<>>& op_table() {
  static const std::map<std::string, Op, std::less<>> t = {
      {"linear", Op::kLinear},   {"attention", Op::kAttention}, {"rms_norm", Op::kRmsNorm},
      {"silu", Op::kSilu},       {"gelu_tanh", Op::kGelu},      {"mul", Op::kMul},
      {"add", Op::kAdd},         {"scale", Op::kScale},         {"softcap", Op::kSoftcap},
      {"rope", Op::kRope},       {"embedding", Op::kEmbedding}, {"kv_cache_write", Op::kKvWrite},
      {"kv_scale_write", Op::kKvScale}, {"reshape", Op::kReshape}, {"moe", Op::kMoe},
      {"sigmoid_gate", Op::kSigmoidGate}};
  return t;
}

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

int64_t rope_kv_rows(const Step& s, const std::vector<Val>& vals) {
  if (s.op == Op::kRope) return vals[static_cast<size_t>(s.in[0])].type.shape[1];
  if (s.op == Op::kKvWrite) {
    const TensorType& src = vals[static_cast<size_t>(s.in[1])].type;
    return src.shape.rank() == 4 ? src.shape[1] : -1;
  }
  return -1;
}

namespace {
float* fp(const std::vector<void*>& p, int id) { return id < 0 ? nullptr : static_cast<float*>(p[static_cast<size_t>(id)]); }
}  // namespace

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
  std::fill(live_scanned.begin(), live_scanned.end(), uint8_t{0});
  acts_value = -1;
  rope_pos_value = rope_freq_value = -1;
  if (profile.on()) profile.count_execute();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (!profile.on()) {
      HFS_TRY_CTX(run_step(s), "cpu_fast: " + s.label);
      continue;
    }
    const ThreadPool::Accounting a0 = pool->accounting();
    const auto t0 = std::chrono::steady_clock::now();
    Status st = run_step(s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    profile.add(i, seconds, pool->accounting() - a0);
    HFS_TRY_CTX(std::move(st), "cpu_fast: " + s.label);
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
  for (const auto& l : live_lists) b += l.bytes();
  for (const auto& m : moes) b += m->bytes();
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
      HFS_TRY_CTX(check_slots(s, &inc), "cpu_fast: " + s.label);
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
        kv_cache_write(y, c.dtype, fp(ptr, s.in[1]) + t0 * H * D, slots + t0, t1 - t0, H, S, D,
                       s.in.size() > 3 ? fp(ptr, s.in[3]) : nullptr);
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
    case Op::kLinear: return run_linear(s);
    case Op::kAttention: {
      const TensorType& q = in_t(0);
      const TensorType& k = in_t(1);
      const int64_t T = q.shape[1], S = k.shape[2];
      const size_t li = static_cast<size_t>(s.live);
      const float* mask = static_cast<const float*>(in_p(3));
      if (!live_scanned[li]) {
        scan_live_slots(mask, live_lists[li]);
        live_scanned[li] = 1;
      }
      AttentionArgs a;
      a.q = static_cast<const float*>(in_p(0));
      a.k = in_p(1);
      a.v = in_p(2);
      a.kv_dtype = k.dtype;
      if (k.dtype == DType::kI8) {  // [1, Hkv, S] row scales
        a.k_scale = static_cast<const float*>(in_p(4));
        a.v_scale = static_cast<const float*>(in_p(5));
      }
      a.mask = mask;
      a.out = y;
      a.t = T;
      a.hq = q.shape[2];
      a.hkv = k.shape[1];
      a.s = S;
      a.d = q.shape[3];
      a.scale = s.f0;
      a.softcap = s.f1;
      attention(a, live_lists[li], attn_scratch, pool.get());
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
      const float* scale = c.dtype == DType::kI8 ? static_cast<const float*>(in_p(3)) : nullptr;  // [Hkv, S]
      auto write = [&](int64_t t0, int64_t t1) { kv_cache_write(y, c.dtype, rows + t0 * H * D, slots + t0, t1 - t0, H, S, D, scale); };
      if (increasing)
        for_rows(T, H * D, write);
      else
        write(0, T);
      return Ok{};
    }
    case Op::kKvScale: {  // an int8 cache's row scales, in place: [1, Hkv, S]
      const TensorType& sc = in_t(0);
      bool increasing = true;
      HFS_TRY(check_slots(s, &increasing));  // S is dim 2 of the scales as of the cache
      kv_scale_write(y, static_cast<const float*>(in_p(1)), static_cast<const int32_t*>(in_p(2)), in_t(2).shape.numel(),
                     sc.shape[1], sc.shape[2], in_t(1).shape[3]);
      return Ok{};
    }
    case Op::kReshape: return Ok{};  // pure view
    case Op::kMoe:
      moes[static_cast<size_t>(s.moe)]->run(static_cast<const float*>(in_p(0)), static_cast<const float*>(in_p(1)), y,
                                             pool.get(), float_rows);
      return Ok{};
    case Op::kSigmoidGate: {
      // As ops/sigmoid_gate.cpp: one f32 sigmoid per row, broadcast over the row.
      const int64_t d = ot.shape[ot.shape.rank() - 1];
      const auto* x = static_cast<const float*>(in_p(0));
      const auto* g = static_cast<const float*>(in_p(1));
      for (int64_t r = 0; r < n / d; ++r) {
        const float sg = 1.0f / (1.0f + std::exp(-g[r]));
        for (int64_t i = 0; i < d; ++i) y[r * d + i] = sg * x[r * d + i];
      }
      return Ok{};
    }
  }
  return Ok{};
}

void FastDelegate::quantize_input(const Step& s, const PackedWeight& w, const float* x, int64_t m) {
  // Several linears read the same activation (q/k/v, gate/up): quantize it once per step. Values are SSA,
  // so the id identifies the content for the rest of this execute.
  if (acts_value == s.in[0] && acts_offset == act_offset(w.format) && acts_kp == w.k_padded) return;
  QuantizedActs& a = lin_scratch.acts;
  a.k_padded = w.k_padded;
  quantize_acts(x, m, w.k, act_offset(w.format), a, pool.get(), input_prologue(s));
  acts_value = s.in[0];
  acts_offset = act_offset(w.format);
  acts_kp = w.k_padded;
}

Status FastDelegate::run_linear(const Step& s) {
  if (s.batched) return Ok{};
  PackedWeight& w = *weights[static_cast<size_t>(s.weight)];
  if (weight_runtime_value[static_cast<size_t>(s.weight)] >= 0) w.raw = fp(ptr, s.in[1]);
  const int64_t m = vals[static_cast<size_t>(s.in[0])].type.shape.numel() / w.k;
  const float* x = fp(ptr, s.in[0]);
  const float* bias = s.in.size() > 2 ? fp(ptr, s.in[2]) : nullptr;
  if (!s.batch.empty()) {
    // q/k/v or gate/up: one pool job for all of them.
    LinearJob jobs[8];
    for (size_t j = 0; j <= s.batch.size(); ++j) {
      const Step& member = j == 0 ? s : steps[static_cast<size_t>(s.batch[j - 1])];
      jobs[j].w = weights[static_cast<size_t>(member.weight)].get();
      jobs[j].bias = member.in.size() > 2 && member.in[2] >= 0 ? fp(ptr, member.in[2]) : nullptr;
      jobs[j].y = fp(ptr, member.out);
    }
    if (w.is_integer()) quantize_input(s, w, x, m);
    QuantizedActs& a = lin_scratch.acts;
    if (s.glu_out >= 0)
      linear_glu(jobs[s.glu_gate_first ? 0 : 1], jobs[s.glu_gate_first ? 1 : 0], x, &a, m, fp(ptr, s.glu_out), pool.get(), float_rows);
    else
      linear_batch(std::span<const LinearJob>(jobs, s.batch.size() + 1), x, &a, m, pool.get(), float_rows);
  } else if (!w.is_integer()) {
    linear(w, x, m, bias, fp(ptr, s.out), lin_scratch, pool.get(), float_rows);
  } else {
    quantize_input(s, w, x, m);
    linear_quantized(w, lin_scratch.acts, m, bias, fp(ptr, s.out), pool.get());
  }
  return Ok{};
}

void FastDelegate::enable_profile(ThreadPool& threads) {
  std::vector<std::string> kinds;
  for (const Step& s : steps) {
    std::string k = s.op == Op::kSiluMul ? "silu_mul" : s.label.substr(s.label.find('(') + 1);
    k = k.substr(0, k.find(' '));
    if (s.op == Op::kLinear) k += s.batched ? "_batched" : s.glu_out >= 0 ? "_glu" : !s.batch.empty() ? "_batch" : "";
    if (s.op == Op::kReshape) k = s.label.find("(reshape") != std::string::npos ? "reshape" : "fused_away";
    if (s.run_by >= 0) k = "fused_away";
    if (!s.group.empty()) k = "rope_kv_write";
    kinds.push_back(std::move(k));
  }
  profile.enable(std::move(kinds));
  profile.set_threads(threads.size());
  threads.set_accounting(true);
}

}  // namespace hfs::cpu_fast
