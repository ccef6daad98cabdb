// The architecture-neutral model description (ModelSpec) that each src/export/models/<arch>.cpp fills from
// its config, the architecture registry, and the config helpers the architectures share (common
// dimensions, RoPE inv_freq with scaling, layer kinds, standard tensor naming). plan_assembly.h turns a
// ModelSpec into the hf_static v1 program.
//
//   namespace { const bool kReg = hfs::register_arch("llama", &build_llama); }   // in models/llama.cpp
//   auto spec = hfs::find_arch("llama")(cfg, ckpt);                               // Result<ModelSpec>
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "export/hf_config.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/ext/safetensors.h"

namespace hfs {

enum class LayerKind : uint8_t { kGlobal, kSliding };
std::string_view layer_kind_name(LayerKind k);

// A weight of the program and where its bytes come from.
struct WeightRef {
  enum class Role : uint8_t { kMatrix, kNorm, kBias };  // norms and biases are always stored f32
  std::string name;      // constant name in the program (canonical HF name, no multimodal prefix)
  std::string source;    // checkpoint tensor name; empty = weight absent
  Shape source_shape;    // expected shape of the checkpoint tensor
  std::string dims;      // the config keys behind source_shape, for messages: "[vocab_size, hidden_size]"
  int64_t row_begin = 0, row_end = 0;  // rows [begin, end) of dim 0 when row_end > 0 (fused tensors)
  Role role = Role::kMatrix;
  // Stacked experts: the constant is these checkpoint tensors (each of `source_shape`) stacked along a new
  // dim 0 in this order; `source` is the first of them.
  std::vector<std::string> stack;

  bool present() const { return !source.empty(); }
  Shape shape() const;  // constant shape: source_shape with dim 0 narrowed to the row range, [E] prepended when stacked
  std::vector<std::string> sources() const { return stack.empty() ? std::vector<std::string>{source} : stack; }
};

// A sparse mixture-of-experts MLP (the `moe` op): router linear, then the experts' stacked projections.
struct MoeSpec {
  int64_t experts = 0, top_k = 0;  // experts == 0: the layer's MLP is dense
  bool norm_topk_prob = false;
  WeightRef router;                // [E, H]
  WeightRef gate, up, down;        // stacked [E, I, H], [E, I, H], [E, H, I]
  WeightRef shared_gate, shared_up, shared_down, shared_expert_gate;  // qwen2_moe: gated MLP + [1, H] gate
};

struct LayerSpec {
  LayerKind kind = LayerKind::kGlobal;
  WeightRef attn_norm, q, k, v, o, q_bias, k_bias, v_bias, o_bias;
  WeightRef q_norm, k_norm;         // per-head rms_norm before RoPE (qwen3, gemma3)
  WeightRef post_attn_norm;         // gemma: norm of the attention output before the residual add
  WeightRef ff_norm;                // pre-MLP norm (llama: post_attention_layernorm)
  WeightRef post_ff_norm;           // gemma: norm of the MLP output before the residual add
  WeightRef gate, up, down, gate_bias, up_bias, down_bias;
  bool qk_norm_full = false;        // olmoe: q_norm/k_norm over the whole projection, before the head split
  MoeSpec moe;                      // experts > 0: a sparse MoE MLP instead of gate/up/down
};

struct ModelSpec {
  std::string arch;  // model_type
  int64_t hidden = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  int64_t max_positions = 0;
  double rms_eps = 1e-6;
  bool norm_unit_offset = false;     // gemma: y * (1 + w)
  bool qk_norm_unit_offset = false;
  double embed_scale = 0;            // 0 = none; gemma: sqrt(hidden)
  std::string act = "silu";          // "silu" | "gelu_tanh"
  double attn_scale = 0;             // scores scale (head_dim^-0.5 unless the arch says otherwise)
  double attn_softcap = 0, final_softcap = 0;
  int64_t sliding_window = 0;        // W; 0 = no sliding layers
  std::vector<float> inv_freq_global, inv_freq_sliding;  // [rotary_dim / 2]
  double rope_attention_scaling = 1.0;
  WeightRef embed, final_norm, lm_head;  // lm_head == embed (same name) when tied
  std::vector<LayerSpec> layers;
};

// --- architecture registry ---------------------------------------------------------------------------
using ArchBuilder = Result<ModelSpec> (*)(const HfConfig& cfg, const Checkpoint& ckpt);
bool register_arch(std::string model_type, ArchBuilder builder);
ArchBuilder find_arch(std::string_view model_type);  // nullptr when unsupported
std::vector<std::string> supported_archs();

// --- shared config blocks ----------------------------------------------------------------------------
// hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default heads), head_dim
// (default hidden/heads), intermediate_size, vocab_size, max_position_embeddings, rms_norm_eps,
// attention scale head_dim^-0.5. Layers are created (all global) with no weights yet. Every value is
// range-checked first, against the checkpoint where it sizes tensors (a dimension no tensor has, more layers
// than the tensor names number) and against the runtime's limits (keys::kMax*): the error names the key,
// the value and the accepted range.
[[nodiscard]] Status read_common_dims(const HfConfig& cfg, const Checkpoint& ck, ModelSpec* spec);

// A RoPE base frequency (rope_theta, rope_local_base_freq): finite, > 0 and within float32, where the
// tables are computed.
[[nodiscard]] Result<double> rope_base(const HfConfig& cfg, std::string_view key, double def);

// HF default RoPE: inv_freq[i] = 1 / base^(2i/dim) in float32, i < dim/2.
std::vector<float> rope_default_inv_freq(double base, int64_t dim);
// Applies `rope_scaling` (null, or rope_type|type "default" | "linear" | "llama3" when allow_llama3).
// Anything else → kUnsupportedModel naming the value.
[[nodiscard]] Status apply_rope_scaling(const HfConfig& cfg, const Value* rope_scaling, bool allow_llama3,
                                        std::vector<float>* inv_freq);

// Per-layer kinds from "layer_types" ("full_attention" | "sliding_attention"); nullopt when absent.
[[nodiscard]] Result<std::optional<std::vector<LayerKind>>> layer_kinds_from_config(const HfConfig& cfg, int64_t n_layers);

// The standard decoder-layer tensor names under `prefix` ("model." normally):
//   <prefix>layers.i.input_layernorm / self_attn.{q,k,v,o}_proj / post_attention_layernorm / mlp.{gate,up,down}_proj.
struct LayerNaming {
  bool qkv_bias = false, o_bias = false, mlp_bias = false, qk_norm = false;
  bool gemma_norms = false;  // post_attention_layernorm is the post-attn norm; pre/post_feedforward_layernorm
};
LayerSpec standard_layer(const ModelSpec& spec, const std::string& prefix, int64_t i, const LayerNaming& naming);
// Embedding, final norm (under `prefix`) and lm_head (tied → the embedding table itself, else `lm_head_source`).
void standard_head(ModelSpec* spec, const std::string& prefix, bool tied, const std::string& lm_head_source = "lm_head.weight");

// The llama-family skeleton shared by llama/qwen2/qwen3/mistral: common dims, rope_theta (default 10000)
// with rope_scaling, hidden_act (default silu), tie_word_embeddings (default `tie_default`), standard layers
// under "model." (all global; the caller sets sliding kinds).
[[nodiscard]] Status decoder_skeleton(const HfConfig& cfg, const Checkpoint& ck, const LayerNaming& naming,
                                      bool allow_llama3, bool tie_default, ModelSpec* spec);
// Sets each layer's kind from `kinds`; when any is sliding, W comes from "sliding_window" (required, > 0).
[[nodiscard]] Status set_sliding_layers(const HfConfig& cfg, const std::vector<LayerKind>& kinds, ModelSpec* spec);
// A matrix/norm/bias reference: constant named `name`, read from `prefix + name`.
WeightRef weight_ref(const std::string& prefix, const std::string& name, Shape shape, WeightRef::Role role,
                     std::string dims);

// qwen2/qwen3: layer_types, else layer i slides iff use_sliding_window && i >= max_window_layers.
[[nodiscard]] Status qwen_sliding_layers(const HfConfig& cfg, ModelSpec* spec);

// gemma2/gemma3 skeleton: common dims; four norms per layer (+ q/k norms when `qk_norm`), all with
// unit_offset; embeddings scaled by sqrt(hidden_size); attention scale query_pre_attn_scalar^-0.5;
// attn_logit_softcapping / final_logit_softcapping; hidden_activation (default gelu_pytorch_tanh);
// tie_word_embeddings default true. Weights under `prefix`. RoPE and layer kinds are left to the caller.
[[nodiscard]] Status gemma_skeleton(const HfConfig& cfg, const Checkpoint& ck, const std::string& prefix, bool qk_norm,
                                    ModelSpec* spec);

// --- mixtures of experts ------------------------------------------------------------------------------
// Where a sparse block's tensors are: <prefix>layers.i.<module>gate.weight (router) and
// <module>experts.<e>.<gate|up|down>.weight, plus <module>shared_expert.* and shared_expert_gate when shared.
struct MoeNaming {
  std::string module = "mlp.";
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
  int64_t shared_inter = 0;  // > 0: a shared expert of this width (qwen2_moe)
};
// Layer `i`'s MLP becomes a sparse block of `experts` experts of width `inter` (dense weights cleared). Experts
// are stacked by numeric index: experts.10 follows experts.9.
void set_moe_layer(ModelSpec* spec, const std::string& prefix, int64_t i, int64_t experts, int64_t top_k, int64_t inter,
                   bool norm_topk_prob, const MoeNaming& naming);
// qwen2_moe / qwen3_moe: num_experts, num_experts_per_tok, moe_intermediate_size, norm_topk_prob (default
// false); layer i is sparse iff num_experts > 0, i is not in mlp_only_layers and (i + 1) % decoder_sparse_step
// == 0 (HF's rule).
[[nodiscard]] Status qwen_moe_layers(const HfConfig& cfg, const Checkpoint& ck, int64_t shared_inter, ModelSpec* spec);
// Experts per token and expert count checked: top_k in [1, experts], experts bounded by the checkpoint's tensors.
[[nodiscard]] Result<int64_t> expert_count(const HfConfig& cfg, const Checkpoint& ck, std::string_view key, int64_t def);

// "silu" / "swish" → "silu"; "gelu_pytorch_tanh" / "gelu_tanh" / "gelu" (gemma's) → "gelu_tanh"; else unsupported.
[[nodiscard]] Result<std::string> activation_from_config(const HfConfig& cfg, std::string_view key, const std::string& value);

}  // namespace hfs
