// Memory (compile_steps.h): every intermediate gets an offset in one arena, reused once its last reader
// has run, and the kernels' scratch is sized once, so execute() never allocates.
#include <algorithm>
#include <new>
#include <vector>

#include "backends/cpu_fast/compile_steps.h"
#include "backends/cpu_fast/huge_slab.h"
#include "hfstatic/ext/method.h"

namespace hfs::cpu_fast {
namespace {

// The last step that reads each value (through aliases: a view keeps its root alive). A step that a
// later step runs (a linear's prologue, a group member) uses its inputs there: a value planned over them
// after their old last use would be written while that job still reads them. Outputs copied out at the
// end live to the end.
void mark_last_uses(FastDelegate& d) {
  const int end = static_cast<int>(d.steps.size());
  for (size_t si = 0; si < d.steps.size(); ++si)
    for (int v : d.steps[si].in) {
      if (v < 0) continue;
      const int at = d.steps[si].run_by >= 0 ? d.steps[si].run_by : static_cast<int>(si);
      int r = v;
      while (d.vals[static_cast<size_t>(r)].kind == Val::kAlias) {
        d.vals[static_cast<size_t>(r)].last = std::max(d.vals[static_cast<size_t>(r)].last, at);
        r = d.vals[static_cast<size_t>(r)].root;
      }
      d.vals[static_cast<size_t>(r)].last = std::max(d.vals[static_cast<size_t>(r)].last, at);
    }
  for (auto [v, o] : d.output_copies) {
    int r = v;
    while (d.vals[static_cast<size_t>(r)].kind == Val::kAlias) r = d.vals[static_cast<size_t>(r)].root;
    d.vals[static_cast<size_t>(r)].last = end;
  }
}

}  // namespace

Status plan_lifetimes(FastDelegate& d) {
  mark_last_uses(d);
  std::vector<PlanItem> items;
  std::vector<int> item_val;
  for (size_t i = 0; i < d.vals.size(); ++i) {
    const Val& v = d.vals[i];
    if (v.kind != Val::kArena || v.output >= 0) continue;
    PlanItem it;
    it.size = v.type.nbytes();
    it.first = static_cast<size_t>(v.def);
    it.last = static_cast<size_t>(std::max(v.def, v.last));
    items.push_back(it);
    item_val.push_back(static_cast<int>(i));
  }
  const size_t arena_bytes = plan_arena(items);
  for (size_t i = 0; i < items.size(); ++i) d.vals[static_cast<size_t>(item_val[i])].offset = items[i].offset;
  HFS_ASSIGN_OR_RETURN_CTX(Buffer arena, huge_page_allocator()->allocate(arena_bytes), "cpu_fast: arena");
  d.arena = std::move(arena);
  return Ok{};
}

// Scratch sized for the largest integer linear (its quantized activations), RoPE (its angles) and
// attention (scores, split partials, the blocked prefill kernel's buffers).
Status size_scratch(FastDelegate& d, int threads) {
  int64_t kp = 0, rows = 0, attn = 0, attn_group = 0, attn_d = 0, rope = 0, block_d = 0, attn_rows = 1;
  bool mixed_attn = false;  // layers with different group sizes or D: no split scratch (decode never splits)
  for (const Step& s : d.steps) {
    if (s.op == Op::kLinear && d.weights[static_cast<size_t>(s.weight)]->is_integer()) {
      const PackedWeight& w = *d.weights[static_cast<size_t>(s.weight)];
      kp = std::max(kp, w.k_padded);
      rows = std::max(rows, d.vals[static_cast<size_t>(s.in[0])].type.shape.numel() / w.k);
    }
    if (s.op == Op::kRope)
      rope = std::max(rope, d.vals[static_cast<size_t>(s.in[0])].type.shape[1] * 2 *
                                d.vals[static_cast<size_t>(s.in[2])].type.shape[0]);
    if (s.op == Op::kAttention) {
      const TensorType& q = d.vals[static_cast<size_t>(s.in[0])].type;
      const TensorType& k = d.vals[static_cast<size_t>(s.in[1])].type;
      if (q.shape[2] % k.shape[1] != 0)
        return make_error(ErrorCode::kShapeMismatch, "cpu_fast: " + s.label + ": Hq = " + std::to_string(q.shape[2]) +
                                                         " is not a multiple of Hkv = " + std::to_string(k.shape[1]));
      if (attn_group != 0 && (attn_group != q.shape[2] / k.shape[1] || attn_d != q.shape[3])) mixed_attn = true;
      attn_group = std::max(attn_group, q.shape[2] / k.shape[1]);
      attn_d = std::max(attn_d, q.shape[3]);
      attn = std::max(attn, q.shape[2] / k.shape[1] * k.shape[2]);
      if (q.shape[1] > 1) block_d = std::max(block_d, q.shape[3]);
      attn_rows = std::max(attn_rows, q.shape[1]);  // prefill rows: the blocked kernel's buffer
    }
  }
  try {
    if (kp > 0) d.lin_scratch = LinearScratch(kp, rows);
    d.rope_cs.assign(static_cast<size_t>(rope), 0.0f);
    if (attn > 0) d.attn_scratch = AttentionScratch(threads, attn_group, (attn + attn_group - 1) / attn_group, mixed_attn ? 0 : attn_d, block_d,
                                                attn_rows);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted, "cpu_fast: cannot allocate kernel scratch");
  }
  return Ok{};
}

}  // namespace hfs::cpu_fast
