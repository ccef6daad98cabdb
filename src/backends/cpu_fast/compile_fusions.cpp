// Fusions: steps that run together, so a pass over an activation or a pool job is saved (compile_steps.h).
// A fused step keeps its place and output; only who runs its work, and when, changes.
#include <algorithm>
#include <vector>

#include "backends/cpu_fast/compile_steps.h"

namespace hfs::cpu_fast {
namespace {

// How many non-dead steps read each value.
std::vector<int> use_counts(const FastDelegate& d, const std::vector<bool>& dead) {
  std::vector<int> uses(d.vals.size(), 0);
  for (size_t i = 0; i < d.steps.size(); ++i)
    if (!dead[i])
      for (int v : d.steps[i].in)
        if (v >= 0) ++uses[static_cast<size_t>(v)];
  return uses;
}

// The nearest step before i that does work (not a reshape), -1 if none.
int prev_step(const FastDelegate& d, size_t i) {
  for (size_t j = i; j-- > 0;)
    if (d.steps[j].op != Op::kReshape) return static_cast<int>(j);
  return -1;
}

}  // namespace

// Linears with the same input and constant weights of one kind (all float, or all integer quantizing the
// activation the same way) run as one pool job, at the first one's place. Only reshapes (pure views, no
// work at execute) may sit between them, so moving the later linears up changes nothing else; steps are
// SSA, so no member reads another's output.
void batch_linears(FastDelegate& d) {
  for (size_t i = 0; i < d.steps.size(); ++i) {
    Step& lead = d.steps[i];
    if (lead.op != Op::kLinear || lead.batched || d.weight_runtime_value[static_cast<size_t>(lead.weight)] >= 0) continue;
    const PackedWeight& lw = *d.weights[static_cast<size_t>(lead.weight)];
    for (size_t j = i + 1; j < d.steps.size() && lead.batch.size() < 7; ++j) {
      const Step& s = d.steps[j];
      if (s.op == Op::kReshape) continue;
      if (s.op != Op::kLinear || s.in[0] != lead.in[0] || d.weight_runtime_value[static_cast<size_t>(s.weight)] >= 0) break;
      const PackedWeight& w = *d.weights[static_cast<size_t>(s.weight)];
      if (w.is_integer() != lw.is_integer() || w.k != lw.k) break;
      if (w.is_integer() && (act_offset(w.format) != act_offset(lw.format) || w.k_padded != lw.k_padded)) break;
      lead.batch.push_back(static_cast<int>(j));
    }
    for (int b : lead.batch) d.steps[static_cast<size_t>(b)].batched = true;
  }
}

// silu(a) → b, mul(b, c) → y becomes silu_mul(a, c) → y when b has no other reader: one pass over the
// activation instead of two, and b is never written.
std::vector<bool> fuse_silu_mul(FastDelegate& d) {
  const std::vector<int> uses = use_counts(d, std::vector<bool>(d.steps.size(), false));
  std::vector<bool> dead(d.steps.size(), false);
  for (size_t i = 0; i + 1 < d.steps.size(); ++i) {
    Step& a = d.steps[i];
    if (a.op != Op::kSilu) continue;
    const int b = a.out;
    if (uses[static_cast<size_t>(b)] != 1 || d.vals[static_cast<size_t>(b)].output >= 0) continue;
    for (size_t j = i + 1; j < d.steps.size(); ++j) {
      Step& m = d.steps[j];
      if (m.op != Op::kMul || (m.in[0] != b && m.in[1] != b)) continue;
      const int other = m.in[0] == b ? m.in[1] : m.in[0];
      m.op = Op::kSiluMul;
      m.in = {a.in[0], other};
      a.op = Op::kReshape;  // now dead: a no-op
      a.in = {a.in[0]};
      dead[i] = true;
      d.vals[static_cast<size_t>(b)].kind = Val::kAlias;
      d.vals[static_cast<size_t>(b)].root = a.in[0];
      break;
    }
  }
  return dead;
}

// When silu_mul reads exactly the two outputs of a two-linear batch (gate and up of one MLP, nobody else
// reading them), each task of the batch applies silu·up to the columns it just produced, while they are
// in its cache — no separate pass over [T, I], no pool job, and no reads of the other core's columns. The
// silu_mul step becomes a no-op; its output is born at the batch.
void fuse_glu(FastDelegate& d, const std::vector<bool>& dead) {
  const std::vector<int> uses = use_counts(d, dead);
  for (size_t i = 0; i < d.steps.size(); ++i) {
    Step& lead = d.steps[i];
    if (lead.op != Op::kLinear || lead.batch.size() != 1) continue;
    const Step& member = d.steps[static_cast<size_t>(lead.batch[0])];
    const PackedWeight& lw = *d.weights[static_cast<size_t>(lead.weight)];
    const PackedWeight& mw = *d.weights[static_cast<size_t>(member.weight)];
    if (lw.n != mw.n) continue;
    for (size_t j = static_cast<size_t>(lead.batch[0]) + 1; j < d.steps.size(); ++j) {
      Step& sm = d.steps[j];
      if (sm.op != Op::kSiluMul) continue;
      const bool gate_first = sm.in[0] == lead.out && sm.in[1] == member.out;
      if (!gate_first && !(sm.in[0] == member.out && sm.in[1] == lead.out)) continue;
      bool ok = true;
      for (int v : {lead.out, member.out})
        ok = ok && uses[static_cast<size_t>(v)] == 1 && d.vals[static_cast<size_t>(v)].output < 0;
      if (!ok) break;
      lead.glu_out = sm.out;
      lead.glu_gate_first = gate_first;
      sm.op = Op::kReshape;  // now a no-op; its inputs stay listed so gate/up live until here
      d.vals[static_cast<size_t>(sm.out)].def = static_cast<int>(i);
      break;
    }
  }
}

// [add →] rms_norm → integer linear: when an RMSNorm's output is read first by the integer linear (or
// batch) right after it, and maybe its input is the residual add right before it, both run row by row
// inside the linear's activation quantization job (RowPrologue): on the pool instead of as two serial
// passes, each core normalizing and quantizing the same rows while they are in its cache. Their outputs
// are still written (the residual stream and later readers need them); only where and when changes.
// Only reshapes (views) may sit between the three steps.
void fuse_norms_into_linears(FastDelegate& d) {
  for (size_t i = 0; i < d.steps.size(); ++i) {
    Step& l = d.steps[i];
    if (l.op != Op::kLinear || l.batched || !d.weights[static_cast<size_t>(l.weight)]->is_integer()) continue;
    const int ni = prev_step(d, i);
    if (ni < 0) continue;
    Step& nm = d.steps[static_cast<size_t>(ni)];
    const TensorType& nt = d.vals[static_cast<size_t>(nm.out)].type;
    if (nm.op != Op::kRmsNorm || nm.out != l.in[0] || nm.run_by >= 0 ||
        nt.shape[nt.shape.rank() - 1] != d.weights[static_cast<size_t>(l.weight)]->k)
      continue;
    l.pre_norm = ni;
    nm.run_by = static_cast<int>(i);
    const int ai = prev_step(d, static_cast<size_t>(ni));
    if (ai < 0) continue;
    Step& ad = d.steps[static_cast<size_t>(ai)];
    if (ad.op != Op::kAdd || ad.out != nm.in[0] || ad.run_by >= 0) continue;
    const int64_t n_out = d.vals[static_cast<size_t>(ad.out)].type.shape.numel();
    if (d.vals[static_cast<size_t>(ad.in[0])].type.shape.numel() != n_out ||
        d.vals[static_cast<size_t>(ad.in[1])].type.shape.numel() != n_out)
      continue;
    l.pre_add = ai;
    ad.run_by = static_cast<int>(i);
  }
}

}  // namespace hfs::cpu_fast
