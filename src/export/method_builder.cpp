// Method building: one hf_static v1 method's inputs, nodes and outputs from a ModelSpec. The graph is the
// same for every architecture; the spec's flags (norm offsets, q/k norms, soft-caps, sliding layers) and
// the stored weight dtypes select its variations.
#include "export/method_builder.h"

#include <initializer_list>
#include <utility>
#include <vector>

#include "hfstatic/ext/metadata_keys.h"

namespace hfs {
namespace {

// Attribute maps written inline at each node.
Attrs attrs(std::initializer_list<std::pair<const std::string, Value>> kv) { return Attrs(kv); }

// Emits the nodes of one method (T tokens). A class so the node helpers share the method being built and
// its token count instead of passing them through every call.
class MethodBuilder {
 public:
  MethodBuilder(const ModelSpec& s, const Geometry& g, const ExportOptions& o, const RopeTables& rope,
                const std::map<std::string, DType>& stored)
      : s_(s), g_(g), o_(o), rope_(rope), stored_(stored) {}

  // Embedding → layers → (last row) → final norm → LM head (→ soft-cap); the node order is the file's.
  MethodDef build(const std::string& name, int64_t T, bool all_rows) {
    m_ = MethodDef{name, {}, {}, {}};
    T_ = T;
    all_rows_ = all_rows;
    declare_inputs();
    std::vector<std::string> embed_in{s_.embed.name, std::string(keys::kInputIds)};
    if (auto it = stored_.find(s_.embed.name); it != stored_.end() && it->second == DType::kI8)
      embed_in.push_back(s_.embed.name + ".scale");  // per-row scale, shared with a tied LM head
    std::string h = node("embedding", std::move(embed_in), {}, "embed");  // [1, T, H]
    if (s_.embed_scale != 0) h = node("scale", {h}, attrs({{"value", Value(s_.embed_scale)}}), "embed.scaled");
    for (size_t i = 0; i < s_.layers.size(); ++i) h = layer(static_cast<int>(i), h);
    if (!all_rows_)  // [1, T, H] -> [1, 1, H]: only the last valid row reaches the head
      h = node("gather", {h, std::string(keys::kLogitsIndex)}, attrs({{"axis", Value(1)}}), "last_hidden");
    const bool softcap = s_.final_softcap > 0;
    h = norm(h, s_.final_norm, s_.norm_unit_offset, "final_norm");
    std::string logits = linear(h, s_.lm_head, WeightRef{}, softcap ? "logits.raw" : std::string(keys::kLogits));
    if (softcap) node("softcap", {logits}, attrs({{"cap", Value(s_.final_softcap)}}), std::string(keys::kLogits));
    declare_outputs();
    return std::move(m_);
  }

 private:
  // Appends one single-output node and returns its output's name, so the graph reads as nested calls.
  std::string node(std::string op, std::vector<std::string> in, Attrs a, std::string out) {
    m_.nodes.push_back({std::move(op), std::move(in), {out}, std::move(a)});
    return out;
  }

  // RMSNorm with the spec's eps; unit_offset for Gemma's norms, which multiply by (1 + w).
  std::string norm(const std::string& x, const WeightRef& w, bool unit_offset, const std::string& out) {
    Attrs a = attrs({{"eps", Value(s_.rms_eps)}});
    if (unit_offset) a["unit_offset"] = Value(true);
    return node("rms_norm", {x, w.name}, std::move(a), out);
  }

  // The linear op's operands are positional (x, weight, bias, scale): an i8 weight without a bias leaves
  // operand 2 empty so its scale lands at 3.
  std::string linear(const std::string& x, const WeightRef& w, const WeightRef& b, const std::string& out) {
    std::vector<std::string> in{x, w.name};
    if (b.present()) in.push_back(b.name);
    auto it = stored_.find(w.name);
    if (it != stored_.end() && it->second == DType::kI8) {  // per-channel int8: scale is operand 3
      if (!b.present()) in.push_back("");
      in.push_back(w.name + ".scale");
    }
    return node("linear", std::move(in), {}, out);
  }

  // Shapes are literal per method (T differs between methods), so reshape carries the full target shape.
  std::string reshape(const std::string& x, std::vector<int64_t> shape, const std::string& out) {
    return node("reshape", {x}, attrs({{"shape", Value::int_array(shape)}}), out);
  }

  // The I/O contract (docs/io-contract-v1.md): token and position ids, the logits row, per layer kind
  // the cache slots and mask, then every layer's K/V cache as state.
  void declare_inputs() {
    auto in = [&](std::string n, DType t, Shape s, IORole r = IORole::kInput) { m_.inputs.push_back({std::move(n), {t, s}, r, ""}); };
    in(std::string(keys::kInputIds), DType::kI32, {1, T_});
    in(std::string(keys::kPositionIds), DType::kI32, {1, T_});
    if (!all_rows_) in(std::string(keys::kLogitsIndex), DType::kI32, {1});
    for (LayerKind k : {LayerKind::kGlobal, LayerKind::kSliding}) {
      if (!(k == LayerKind::kGlobal ? g_.has_global : g_.has_sliding)) continue;
      in(keys::cache_slots_name(layer_kind_name(k)), DType::kI32, {T_});
      in(keys::attn_mask_name(layer_kind_name(k)), DType::kF32, {1, 1, T_, g_.cache_len(k)});
    }
    for (size_t i = 0; i < s_.layers.size(); ++i) {
      const Shape cache{1, s_.n_kv_heads, g_.cache_len(s_.layers[i].kind), s_.head_dim};
      in(keys::k_cache_name(static_cast<int>(i)), o_.cache_dtype, cache, IORole::kState);
      in(keys::v_cache_name(static_cast<int>(i)), o_.cache_dtype, cache, IORole::kState);
    }
  }

  // Logits, then each layer's updated caches, each naming the state input it replaces after a step.
  void declare_outputs() {
    const int64_t rows = all_rows_ ? T_ : 1;
    m_.outputs.push_back({std::string(keys::kLogits), {DType::kF32, {1, rows, s_.vocab}}, IORole::kOutput, ""});
    for (size_t i = 0; i < s_.layers.size(); ++i) {
      const int li = static_cast<int>(i);
      const Shape cache{1, s_.n_kv_heads, g_.cache_len(s_.layers[i].kind), s_.head_dim};
      m_.outputs.push_back({keys::k_cache_out_name(li), {o_.cache_dtype, cache}, IORole::kState, keys::k_cache_name(li)});
      m_.outputs.push_back({keys::v_cache_out_name(li), {o_.cache_dtype, cache}, IORole::kState, keys::v_cache_name(li)});
    }
  }

  // One decoder layer: attention block then MLP block, each with its residual add.
  std::string layer(int i, const std::string& h_in) {
    const std::string p = "l" + std::to_string(i) + ".";
    const std::string h = attention_block(i, h_in, p);
    return mlp_block(s_.layers[static_cast<size_t>(i)], h, p);
  }

  // x: [1, T, H]. Write-first: the chunk's K/V rows land in the cache, then attention reads the whole cache
  // under the mask, so prefill chunks and decode steps share one attention op.
  std::string attention_block(int i, const std::string& h_in, const std::string& p) {
    const LayerSpec& L = s_.layers[static_cast<size_t>(i)];
    const std::string_view kind = layer_kind_name(L.kind);
    const std::string& rope = L.kind == LayerKind::kSliding ? rope_.sliding : rope_.global;
    const int64_t Hq = s_.n_heads, Hkv = s_.n_kv_heads, D = s_.head_dim;
    std::string x = norm(h_in, L.attn_norm, s_.norm_unit_offset, p + "attn_norm");
    // olmoe normalizes the whole projection ([1, T, H·D]) before the head split; qwen3/gemma3 each head, below.
    std::string q = linear(x, L.q, L.q_bias, p + "q_proj");
    if (L.qk_norm_full) q = norm(q, L.q_norm, s_.qk_norm_unit_offset, p + "q_normed");
    q = reshape(q, {1, T_, Hq, D}, p + "q");    // [1, T, Hq, D]
    std::string k = linear(x, L.k, L.k_bias, p + "k_proj");
    if (L.qk_norm_full) k = norm(k, L.k_norm, s_.qk_norm_unit_offset, p + "k_normed");
    k = reshape(k, {1, T_, Hkv, D}, p + "k");   // [1, T, Hkv, D]
    std::string v = reshape(linear(x, L.v, L.v_bias, p + "v_proj"), {1, T_, Hkv, D}, p + "v");   // [1, T, Hkv, D]
    if (L.q_norm.present() && !L.qk_norm_full) q = norm(q, L.q_norm, s_.qk_norm_unit_offset, p + "q_normed");
    if (L.k_norm.present() && !L.qk_norm_full) k = norm(k, L.k_norm, s_.qk_norm_unit_offset, p + "k_normed");
    Attrs rope_attrs;
    if (s_.rope_attention_scaling != 1.0) rope_attrs["attention_scaling"] = Value(s_.rope_attention_scaling);
    q = node("rope", {q, std::string(keys::kPositionIds), rope}, rope_attrs, p + "q_rot");
    k = node("rope", {k, std::string(keys::kPositionIds), rope}, rope_attrs, p + "k_rot");
    const std::string slots = keys::cache_slots_name(kind);
    std::string kc = node("kv_cache_write", {keys::k_cache_name(i), k, slots}, {}, keys::k_cache_out_name(i));
    std::string vc = node("kv_cache_write", {keys::v_cache_name(i), v, slots}, {}, keys::v_cache_out_name(i));
    Attrs att = attrs({{"scale", Value(s_.attn_scale)}});
    if (s_.attn_softcap > 0) att["softcap"] = Value(s_.attn_softcap);
    std::string a = node("attention", {q, kc, vc, keys::attn_mask_name(kind)}, std::move(att), p + "attn");  // [1, T, Hq, D]
    a = reshape(a, {1, T_, Hq * D}, p + "attn_flat");
    std::string o = linear(a, L.o, L.o_bias, p + "o_proj");  // [1, T, H]
    if (L.post_attn_norm.present()) o = norm(o, L.post_attn_norm, s_.norm_unit_offset, p + "post_attn_norm");
    return node("add", {h_in, o}, {}, p + "h_attn");
  }

  // The operands of an expert projection's i8 scale: its name when stored i8, else absent.
  std::string scale_operand(const WeightRef& w) const {
    auto it = stored_.find(w.name);
    return it != stored_.end() && it->second == DType::kI8 ? w.name + ".scale" : std::string();
  }

  // Sparse MoE MLP: router logits from a linear, then the moe op over the stacked experts; a shared expert
  // (qwen2_moe) is a gated MLP scaled per row by sigmoid(shared_expert_gate(x)) and added.
  std::string moe_block(const LayerSpec& L, const std::string& x, const std::string& p) {
    const MoeSpec& m = L.moe;
    std::string logits = linear(x, m.router, WeightRef{}, p + "router");  // [1, T, E]
    std::vector<std::string> in{x, logits, m.gate.name, m.up.name, m.down.name};
    const std::string sg = scale_operand(m.gate), su = scale_operand(m.up), sd = scale_operand(m.down);
    if (!sg.empty() || !su.empty() || !sd.empty()) in.insert(in.end(), {sg, su, sd});
    while (in.back().empty()) in.pop_back();
    Attrs a = attrs({{"top_k", Value(m.top_k)}});
    if (m.norm_topk_prob) a["norm_topk_prob"] = Value(true);
    std::string out = node("moe", std::move(in), std::move(a), p + "experts");  // [1, T, H]
    if (!m.shared_gate.present()) return out;
    std::string g = node(s_.act, {linear(x, m.shared_gate, WeightRef{}, p + "shared.gate_proj")}, {}, p + "shared.act");
    std::string u = linear(x, m.shared_up, WeightRef{}, p + "shared.up_proj");
    std::string d = linear(node("mul", {g, u}, {}, p + "shared.gated"), m.shared_down, WeightRef{}, p + "shared.down_proj");
    std::string gl = linear(x, m.shared_expert_gate, WeightRef{}, p + "shared.gate_logit");  // [1, T, 1]
    return node("add", {out, node("sigmoid_gate", {d, gl}, {}, p + "shared.out")}, {}, p + "moe");
  }

  // Gated MLP: act(gate(x)) * up(x) → down; Gemma adds a norm on its output before the residual add.
  std::string mlp_block(const LayerSpec& L, const std::string& h, const std::string& p) {
    std::string x = norm(h, L.ff_norm, s_.norm_unit_offset, p + "ff_norm");
    if (L.moe.experts > 0) return node("add", {h, moe_block(L, x, p)}, {}, p + "out");
    std::string gate = linear(x, L.gate, L.gate_bias, p + "gate_proj");  // [1, T, I]
    std::string up = linear(x, L.up, L.up_bias, p + "up_proj");
    gate = node(s_.act, {gate}, {}, p + "act");
    std::string m = node("mul", {gate, up}, {}, p + "gated");
    std::string d = linear(m, L.down, L.down_bias, p + "down_proj");  // [1, T, H]
    if (L.post_ff_norm.present()) d = norm(d, L.post_ff_norm, s_.norm_unit_offset, p + "post_ff_norm");
    return node("add", {h, d}, {}, p + "out");
  }

  const ModelSpec& s_;
  const Geometry& g_;
  const ExportOptions& o_;
  const RopeTables& rope_;
  const std::map<std::string, DType>& stored_;  // constant name → stored dtype (i8 linears take a scale)
  MethodDef m_;
  int64_t T_ = 1;
  bool all_rows_ = false;
};

}  // namespace

MethodDef build_method(const std::string& name, int64_t tokens, bool all_rows, const ModelSpec& spec,
                       const Geometry& geometry, const ExportOptions& options, const RopeTables& rope,
                       const std::map<std::string, DType>& stored) {
  return MethodBuilder(spec, geometry, options, rope, stored).build(name, tokens, all_rows);
}

}  // namespace hfs
