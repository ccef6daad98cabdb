// hfstatic/ext/ops.h — the operator registry: schemas, shape/dtype rules, reference kernels.
//
// Each op lives in its own file under src/ops/ and registers itself at static-initialization time:
//
//   namespace {
//   const bool kRegistered = hfs::register_op({
//       .name = "silu", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .attrs = {},
//       .infer = &infer_unary_f32, .reference = &silu_kernel});
//   }
//   (compiled and run, under another op name, by tests/api/usage_examples_test.cpp: keep the two in
//   step; src/ops/silu.cpp is the real one)
//
// Verification uses `infer` (never the kernel); backends look up `reference` for the portable path.
//
// Built-in ops (all activations f32; "w" dtypes f32|f16|bf16 unless said; T = tokens in the step):
//   embedding      (table [V,H] w, ids [1,T] i32, scale? [V] f32) -> [1,T,H]; table f32|f16|bf16 or i8
//                  (per-row: row v = scale[v] · q[v], scale required), the layout of an i8 linear weight
//   rms_norm       (x [...,D], weight [D] f32; eps:float, unit_offset:bool=false) -> [...,D]
//                  y = x / sqrt(mean(x²) + eps) * (unit_offset ? 1 + w : w); also used per head.
//   linear         (x [...,K], weight [N,K], bias? [N] f32, scale? [N] f32) -> [...,N]; weight f32|f16|bf16,
//                  i8 (per-output-channel: w = scale[n] · q, scale required) or q4_0 (blocks of 32 along K)
//   add, mul       (a, b same shape) -> same
//   silu, gelu_tanh (x) -> same
//   softcap        (x; cap:float) -> tanh(x / cap) * cap
//   scale          (x; value:float) -> x * value
//   rope           (x [1,T,H,D], positions [1,T] i32, inv_freq [R/2] f32; attention_scaling:float=1)
//                  -> [1,T,H,D]. HF half-rotation on the first R dims (R ≤ D), the rest pass through.
//   kv_cache_write (cache [1,Hkv,S,D] f32|f16|i8, rows [1,T,Hkv,D] f32, slots [T] i32, scale? [1,Hkv,S] f32)
//                  -> cache, IN PLACE: row t goes to slot slots[t]; slots[t] < 0 means "do not write";
//                  other slots untouched. i8 (scale required): q = clamp(rne(x / scale[h, slot]), ±127).
//   kv_scale_write (scale [1,Hkv,S] f32, rows [1,T,Hkv,D] f32, slots [T] i32) -> scale, IN PLACE:
//                  scale[h, slots[t]] = max|rows[t, h, :]| / 127 (an i8 cache's symmetric row scale).
//   attention      (q [1,T,Hq,D], k_cache [1,Hkv,S,D] f32|f16|i8, v_cache same, mask [1,1,T,S] f32,
//                  k_scale? v_scale? [1,Hkv,S] f32 (i8 caches: required); scale:float, softcap:float=0)
//                  -> [1,T,Hq,D]; Hq % Hkv == 0 (grouped-query); an i8 row is scale · q;
//                  scores = q·k*scale, softcap if > 0, + mask, softmax over S (f32), then · v.
//   reshape        (x; shape:[int]) -> view of x (numel equal)
//   transpose      (x; perm:[int]) -> permuted copy
//   slice          (x; axis:int, start:int, end:int) -> copy of x[..., start:end, ...]
//   gather         (x, index [n] i32; axis:int) -> x with dim `axis` replaced by n (rows picked)
//   moe            (x [...,H], router_logits [...,E], gate [E,I,H], up [E,I,H], down [E,H,I], gate_scale? [E,I],
//                  up_scale? [E,I], down_scale? [E,H]; top_k:int, norm_topk_prob:bool=false) -> [...,H]
//                  softmax over E (f32), top_k (ties: lower index), optional renormalization, then
//                  Σ_e (ascending e) down_e(silu(gate_e x) * up_e x) * w_e. Expert weights are stacked linear
//                  weights (any linear dtype; i8 needs its scale). docs/program-format.md §3.
//   sigmoid_gate   (x [...,D], gate [...,1]) -> x * sigmoid(gate), one gate per row (Qwen2-MoE shared expert)
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/tensor.h"
#include "hfstatic/value.h"

namespace hfs {

struct HFS_API KernelArgs {
  std::span<const TensorView> inputs;   // absent optional operands have ptr == nullptr
  std::span<const TensorView> outputs;  // caller-provided storage (for aliasing ops: the input's buffer)
  const Attrs& attrs;
};
using KernelFn = Status (*)(const KernelArgs&);

// Shape/dtype rule. `inputs[i]` is nullptr for an absent optional operand. Messages name the operand
// and say expected vs got; the verifier prefixes method and node.
using InferFn = Result<std::vector<TensorType>> (*)(std::span<const TensorType* const> inputs, const Attrs& attrs);

struct HFS_API AttrSpec {
  std::string_view name;
  Value::Kind kind;  // kFloat accepts ints too; kArray means an array of ints
  bool required = false;
};

struct HFS_API OpSchema {
  std::string_view name;
  int min_inputs = 1;  // operands beyond min_inputs are optional
  int max_inputs = 1;
  int num_outputs = 1;
  std::vector<AttrSpec> attrs;
  InferFn infer = nullptr;
  KernelFn reference = nullptr;
  // For output 0: index of the input whose buffer it reuses, or -1. `in_place` = the op writes into that
  // buffer (the input may not be read after this node); otherwise it is a pure view (e.g. reshape).
  int alias_input = -1;
  bool in_place = false;
};

// Registers a schema; returns true (for `static const bool` registration). A duplicate name aborts:
// it is a programming error caught by every test binary at start-up.
HFS_API bool register_op(OpSchema schema);
HFS_API const OpSchema* find_op(std::string_view name);
HFS_API std::vector<const OpSchema*> all_ops();  // sorted by name

// Checks node attributes against the schema: unknown names, missing required, wrong kinds.
HFS_API Status check_attrs(const OpSchema& schema, const Attrs& attrs);

// Attribute readers for kernels and rules (defaults when absent; no validation — check_attrs did it).
HFS_API double attr_float(const Attrs& a, std::string_view name, double def = 0.0);
HFS_API int64_t attr_int(const Attrs& a, std::string_view name, int64_t def = 0);
HFS_API bool attr_bool(const Attrs& a, std::string_view name, bool def = false);
HFS_API std::vector<int64_t> attr_ints(const Attrs& a, std::string_view name);

// Runs one node with the reference kernel (tests and the cpu reference backend).
HFS_API Status run_reference(const NodeDef& node, std::span<const TensorView> inputs,
                             std::span<const TensorView> outputs);

}  // namespace hfs
