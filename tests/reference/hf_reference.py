"""Independent PyTorch reference for HuggingFace decoder-only LLMs (float32, full sequence, no KV cache).

Written from the semantics of HF transformers' modeling_<arch>.py / configuration_<arch>.py (read, not copied)
so that hfstatic's C++ runtime can be checked against something that shares none of its code. Deliberately
simple: every call recomputes the whole sequence from position 0 with an explicit additive mask; weights are
widened to float32 and all math is float32.

Supported model_type: llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3_text, gemma3 (text part only).
Anything else, or a config value this file does not implement (rope type, bidirectional attention, ...),
raises UnsupportedModel with the offending key and value.

Conventions (each checked against HF code, see README.md):
- Sliding window W: key j is visible to query i iff j <= i and i - j < W, i.e. a query sees itself and the
  W-1 keys before it. HF masking_utils: causal `kv_idx <= q_idx` AND sliding_window_overlay
  `kv_idx > q_idx - sliding_window`; older Gemma2 code masked tril(diagonal=-W), the same set.
- RoPE is HF's rotate_half layout: dims [0, d/2) pair with [d/2, d); inv_freq = 1 / theta^(2i/d) computed in
  float32; partial rotary (phi3) rotates the first int(head_dim * partial_rotary_factor) dims only.
- GQA: query head h reads kv head h // (n_heads / n_kv_heads) (HF repeat_kv).
- Tied embeddings: lm_head is embed_tokens when tie_word_embeddings (HF default True for gemma*, False else).

Usage:
  import hf_reference as ref
  model = ref.load_model("../shared/models/stories260K")   # an HF checkpoint directory
  logits = model.logits([1, 403, 407])          # np.float32 [3, vocab]: row t = logits after token t
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

import safetensors_np as st

torch.set_grad_enabled(False)


class UnsupportedModel(ValueError):
    pass


class WeightError(ValueError):
    pass


# ----------------------------------------------------------------------------------------------------------
# Config access


class Config:
    """Read-only view of config.json and errors naming the key.

    get(key, fallback): an absent key takes the architecture's HF config-class default (`defaults`); a null
    value, or an absent key without such a default, takes `fallback` (the value HF derives for None)."""

    def __init__(self, raw, source, defaults=None):
        self.raw = raw
        self.source = source
        self.defaults = defaults or {}

    def get(self, key, default=None):
        value = self.raw[key] if key in self.raw else self.defaults.get(key)
        return default if value is None else value

    def has(self, key):
        return self.raw.get(key) is not None

    def req(self, key):
        if self.raw.get(key) is None:
            raise UnsupportedModel(f"{self.source}: required config key {key!r} is missing or null")
        return self.raw[key]

    def int(self, key, default=None):
        value = self.get(key, default)
        if value is None:
            raise UnsupportedModel(f"{self.source}: required config key {key!r} is missing or null")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise UnsupportedModel(f"{self.source}: config key {key!r} must be an integer, got {value!r}")
        return int(value)

    def float(self, key, default=None):
        value = self.get(key, default)
        if value is None:
            raise UnsupportedModel(f"{self.source}: required config key {key!r} is missing or null")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UnsupportedModel(f"{self.source}: config key {key!r} must be a number, got {value!r}")
        return float(value)

    def bad(self, key, value, why):
        return UnsupportedModel(f"{self.source}: config {key}={value!r} is not supported: {why}")


# ----------------------------------------------------------------------------------------------------------
# Shared blocks (all tensors float32; sequence-first: x [T, hidden])


def rms_norm(x, weight, eps):
    """Llama-style RMSNorm: x / rms(x) * w."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def gemma_rms_norm(x, weight, eps):
    """Gemma-style RMSNorm: x / rms(x) * (1 + w), in float32 (HF upcasts before the (1 + w) product)."""
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + weight.float())


def activation(name, source):
    if name in ("silu", "swish"):
        return F.silu
    if name in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast"):
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "gelu":
        return F.gelu
    if name == "relu":
        return F.relu
    raise UnsupportedModel(f"{source}: activation {name!r} is not supported (silu, gelu, gelu_pytorch_tanh, relu)")


def rope_inv_freq(params, rot_dim, source):
    """inverse frequencies [rot_dim/2] for one RoPE parameter set (rope_type default|linear|llama3)."""
    theta = float(params["rope_theta"])
    inv_freq = 1.0 / (theta ** (torch.arange(0, rot_dim, 2, dtype=torch.int64).float() / rot_dim))
    kind = params.get("rope_type", "default")
    if kind == "default":
        return inv_freq
    if kind == "linear":
        return inv_freq / float(params["factor"])
    if kind == "llama3":
        # Llama 3.1: keep high frequencies, divide low ones by `factor`, blend smoothly in between by wavelength.
        try:
            factor = float(params["factor"])
            low = float(params["low_freq_factor"])
            high = float(params["high_freq_factor"])
            old_ctx = float(params["original_max_position_embeddings"])
        except KeyError as e:
            raise UnsupportedModel(f"{source}: rope_type llama3 needs key {e.args[0]!r}") from e
        wavelen = 2 * math.pi / inv_freq
        low_wavelen = old_ctx / low
        high_wavelen = old_ctx / high
        scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old_ctx / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return torch.where(medium, blended, scaled)
    raise UnsupportedModel(f"{source}: rope_type {kind!r} is not supported (default, linear, llama3)")


def rope_cos_sin(inv_freq, n_tokens):
    """cos, sin [T, rot_dim] for positions 0..T-1 (rotate_half layout: the frequency list twice)."""
    freqs = torch.arange(n_tokens, dtype=torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    """x [heads, T, head_dim]; rotates the first cos.shape[-1] dims, passes the rest through."""
    rot = cos.shape[-1]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    return torch.cat([x_rot * cos + rotate_half(x_rot) * sin, x_pass], dim=-1)


def causal_mask(n_tokens, window=None):
    """Additive mask [T, T]: 0 where key j is visible to query i, -inf elsewhere.

    Visible iff j <= i and (window is None or i - j < window) -- HF's `kv_idx > q_idx - sliding_window`."""
    i = torch.arange(n_tokens)[:, None]
    j = torch.arange(n_tokens)[None, :]
    visible = j <= i
    if window is not None:
        visible &= (i - j) < window
    mask = torch.zeros(n_tokens, n_tokens, dtype=torch.float32)
    mask.masked_fill_(~visible, float("-inf"))
    return mask


def attention(q, k, v, scale, mask, softcap=None):
    """q [Hq, T, D], k/v [Hkv, T, D] -> [T, Hq * D]. Query head h uses kv head h // (Hq / Hkv)."""
    n_rep = q.shape[0] // k.shape[0]
    k = k.repeat_interleave(n_rep, dim=0)
    v = v.repeat_interleave(n_rep, dim=0)
    scores = (q @ k.transpose(1, 2)) * scale  # [Hq, T, T]
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    probs = torch.softmax(scores + mask, dim=-1)
    out = probs @ v  # [Hq, T, D]
    return out.transpose(0, 1).reshape(q.shape[1], -1)


def linear(x, w, b=None):
    return F.linear(x, w, b)


# ----------------------------------------------------------------------------------------------------------
# Weights


class Weights:
    """float32 torch views of checkpoint tensors; take() checks shapes and records what was used."""

    def __init__(self, arrays, source):
        self.arrays = arrays
        self.source = source
        self.used = set()

    def has(self, name):
        return name in self.arrays

    def take(self, name, shape):
        if name not in self.arrays:
            raise WeightError(f"{self.source}: tensor {name!r} is missing (expected shape {list(shape)})")
        arr = self.arrays[name]
        if tuple(arr.shape) != tuple(shape):
            raise WeightError(f"{self.source}: tensor {name!r} has shape {list(arr.shape)}, expected {list(shape)}")
        self.used.add(name)
        return torch.from_numpy(np.array(arr, dtype=np.float32))

    def check_all_used(self, ignore_prefixes=()):
        extra = sorted(n for n in self.arrays if n not in self.used and not n.endswith("rotary_emb.inv_freq")
                       and not any(n.startswith(p) for p in ignore_prefixes))
        if extra:
            raise WeightError(f"{self.source}: {len(extra)} checkpoint tensors are not used by the model, "
                              f"e.g. {extra[:4]} (wrong architecture or naming?)")


# ----------------------------------------------------------------------------------------------------------
# Architectures


FULL = "full_attention"
SLIDING = "sliding_attention"


class DecoderLM:
    """Shared skeleton: embed -> layers -> final norm -> lm_head. Subclasses set the per-architecture parts."""

    model_type = None
    default_tie = False
    # HF config-class defaults for keys a config.json may omit (None: derived, e.g. head_dim = hidden / heads).
    hf_defaults = {"rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    attn_bias = False      # q/k/v biases
    o_bias = False
    mlp_bias = False
    qk_norm = False        # per-head RMSNorm on q and k (before RoPE)
    gemma_norms = False    # (1 + w) norms, 4 norms per layer, scaled embeddings

    def __init__(self, cfg, weights, prefix, lm_head_name, tie, embed_storage_dtype):
        self.cfg = cfg
        self.src = cfg.source
        self.hidden = cfg.int("hidden_size")
        self.n_layers = cfg.int("num_hidden_layers")
        self.n_heads = cfg.int("num_attention_heads")
        self.n_kv = cfg.int("num_key_value_heads", self.n_heads)
        self.head_dim = cfg.int("head_dim", self.hidden // self.n_heads)
        self.vocab = cfg.int("vocab_size")
        self.inter = cfg.int("intermediate_size")
        self.eps = cfg.float("rms_norm_eps")
        self.tie = tie
        if self.n_heads % self.n_kv:
            raise cfg.bad("num_key_value_heads", self.n_kv, f"must divide num_attention_heads={self.n_heads}")
        self.scale = self.head_dim ** -0.5
        self.attn_softcap = None
        self.final_softcap = None
        self.act = activation(self.activation_name(), self.src)
        self.layer_types, self.window = self.resolve_layer_types()
        self.rope_params = {t: self.resolve_rope(t) for t in set(self.layer_types)}
        self.rot_dim = self.rotary_dim()
        self.inv_freq = {t: rope_inv_freq(p, self.rot_dim, self.src) for t, p in self.rope_params.items()}
        self.embed_scale = None
        self.configure()  # subclass hook: softcaps, scale, embed scaling, extra validation
        if self.gemma_norms:
            # HF multiplies by torch.tensor(hidden**0.5, dtype=weight dtype): the normalizer is rounded to the
            # checkpoint's dtype (sqrt(3072)=55.43 becomes 55.5 in bf16).
            scale = torch.tensor(self.hidden ** 0.5, dtype=torch.float32)
            if embed_storage_dtype == "BF16":
                scale = scale.to(torch.bfloat16).float()
            elif embed_storage_dtype == "F16":
                scale = scale.to(torch.float16).float()
            self.embed_scale = scale
        self.load(weights, prefix, lm_head_name)

    # --- per-architecture hooks -------------------------------------------------------------------------

    def activation_name(self):
        return self.cfg.get("hidden_act", "silu")

    def configure(self):
        pass

    def resolve_layer_types(self):
        """Returns (per-layer FULL/SLIDING list, sliding window or None)."""
        return [FULL] * self.n_layers, None

    def rotary_dim(self):
        prf = self.partial_rotary_factor()
        if prf != 1.0:
            raise self.cfg.bad("partial_rotary_factor", prf, f"{self.model_type} applies RoPE to the full head_dim")
        return self.head_dim

    def partial_rotary_factor(self):
        rp = self.cfg.get("rope_parameters")
        if isinstance(rp, dict) and "partial_rotary_factor" in rp:
            return float(rp["partial_rotary_factor"])
        return float(self.cfg.get("partial_rotary_factor", 1.0))

    def resolve_rope(self, layer_type):
        """RoPE parameters for one layer type, from either `rope_parameters` (new HF) or rope_theta + rope_scaling."""
        cfg = self.cfg
        rp = cfg.get("rope_parameters")
        if isinstance(rp, dict) and rp:
            if FULL in rp or SLIDING in rp:
                if layer_type not in rp:
                    raise cfg.bad("rope_parameters", rp, f"no entry for layer type {layer_type!r}")
                rp = rp[layer_type]
            params = dict(rp)
            params.setdefault("rope_theta", cfg.float("rope_theta"))
        else:
            params = {"rope_theta": cfg.float("rope_theta")}
            params.update(self.legacy_rope_scaling(layer_type) or {})
        kind = params.get("rope_type") or params.get("type") or "default"
        params["rope_type"] = kind
        if kind not in ("default", "linear", "llama3"):
            raise cfg.bad("rope_scaling.rope_type", kind, "only default, linear and llama3 are implemented")
        return params

    def legacy_rope_scaling(self, layer_type):
        rs = self.cfg.get("rope_scaling")
        if rs is not None and not isinstance(rs, dict):
            raise self.cfg.bad("rope_scaling", rs, "expected an object or null")
        return rs

    def load(self, w, prefix, lm_head_name):
        H = self.hidden
        self.embed = w.take(prefix + "embed_tokens.weight", (self.vocab, H))
        self.layers = []
        for i in range(self.n_layers):
            p = f"{prefix}layers.{i}."
            L = {}
            self.load_attention(w, p + "self_attn.", L)
            self.load_mlp(w, p + "mlp.", L)
            L["input_norm"] = w.take(p + "input_layernorm.weight", (H,))
            L["post_attn_norm"] = w.take(p + "post_attention_layernorm.weight", (H,))
            if self.gemma_norms:
                L["pre_ffn_norm"] = w.take(p + "pre_feedforward_layernorm.weight", (H,))
                L["post_ffn_norm"] = w.take(p + "post_feedforward_layernorm.weight", (H,))
            self.layers.append(L)
        self.final_norm = w.take(prefix + "norm.weight", (H,))
        if self.tie:
            self.lm_head = self.embed
            w.used.add(lm_head_name)  # HF ignores a stored lm_head when tied
        else:
            self.lm_head = w.take(lm_head_name, (self.vocab, H))

    def load_attention(self, w, p, L):
        H, D, Hq, Hkv = self.hidden, self.head_dim, self.n_heads, self.n_kv
        L["wq"] = w.take(p + "q_proj.weight", (Hq * D, H))
        L["wk"] = w.take(p + "k_proj.weight", (Hkv * D, H))
        L["wv"] = w.take(p + "v_proj.weight", (Hkv * D, H))
        L["wo"] = w.take(p + "o_proj.weight", (H, Hq * D))
        if self.attn_bias:
            L["bq"] = w.take(p + "q_proj.bias", (Hq * D,))
            L["bk"] = w.take(p + "k_proj.bias", (Hkv * D,))
            L["bv"] = w.take(p + "v_proj.bias", (Hkv * D,))
        if self.o_bias:
            L["bo"] = w.take(p + "o_proj.bias", (H,))
        if self.qk_norm:
            L["q_norm"] = w.take(p + "q_norm.weight", (D,))
            L["k_norm"] = w.take(p + "k_norm.weight", (D,))

    def load_mlp(self, w, p, L):
        H, I = self.hidden, self.inter
        L["w_gate"] = w.take(p + "gate_proj.weight", (I, H))
        L["w_up"] = w.take(p + "up_proj.weight", (I, H))
        L["w_down"] = w.take(p + "down_proj.weight", (H, I))
        if self.mlp_bias:
            L["b_gate"] = w.take(p + "gate_proj.bias", (I,))
            L["b_up"] = w.take(p + "up_proj.bias", (I,))
            L["b_down"] = w.take(p + "down_proj.bias", (H,))

    # --- forward -----------------------------------------------------------------------------------------

    def norm(self, x, w):
        return gemma_rms_norm(x, w, self.eps) if self.gemma_norms else rms_norm(x, w, self.eps)

    def qkv(self, L, x):
        q = linear(x, L["wq"], L.get("bq"))
        k = linear(x, L["wk"], L.get("bk"))
        v = linear(x, L["wv"], L.get("bv"))
        return q, k, v

    def attention_block(self, L, x, cos, sin, mask):
        T = x.shape[0]
        q, k, v = self.qkv(L, x)
        q = q.view(T, self.n_heads, self.head_dim).transpose(0, 1)  # [Hq, T, D]
        k = k.view(T, self.n_kv, self.head_dim).transpose(0, 1)     # [Hkv, T, D]
        v = v.view(T, self.n_kv, self.head_dim).transpose(0, 1)
        if self.qk_norm:
            q = self.norm(q, L["q_norm"])
            k = self.norm(k, L["k_norm"])
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        out = attention(q, k, v, self.scale, mask, self.attn_softcap)
        return linear(out, L["wo"], L.get("bo"))

    def mlp_block(self, L, x):
        gate = linear(x, L["w_gate"], L.get("b_gate"))
        up = linear(x, L["w_up"], L.get("b_up"))
        return linear(self.act(gate) * up, L["w_down"], L.get("b_down"))

    def layer(self, L, x, cos, sin, mask):
        if self.gemma_norms:
            h = self.norm(self.attention_block(L, self.norm(x, L["input_norm"]), cos, sin, mask), L["post_attn_norm"])
            x = x + h
            h = self.norm(self.mlp_block(L, self.norm(x, L["pre_ffn_norm"])), L["post_ffn_norm"])
            return x + h
        x = x + self.attention_block(L, self.norm(x, L["input_norm"]), cos, sin, mask)
        return x + self.mlp_block(L, self.norm(x, L["post_attn_norm"]))

    def forward(self, token_ids):
        """token_ids: sequence of ints (positions 0..T-1) -> logits torch.float32 [T, vocab]."""
        ids = torch.as_tensor(list(token_ids), dtype=torch.long)
        if ids.numel() == 0:
            raise ValueError("token_ids is empty")
        bad = ids[(ids < 0) | (ids >= self.vocab)]
        if bad.numel():
            raise ValueError(f"token id {int(bad[0])} is outside the vocabulary [0, {self.vocab})")
        T = ids.numel()
        x = self.embed[ids]
        if self.embed_scale is not None:
            x = x * self.embed_scale
        rope = {t: rope_cos_sin(f, T) for t, f in self.inv_freq.items()}
        masks = {FULL: causal_mask(T), SLIDING: causal_mask(T, self.window) if self.window else None}
        for L, kind in zip(self.layers, self.layer_types):
            cos, sin = rope[kind]
            x = self.layer(L, x, cos, sin, masks[kind])
        x = self.norm(x, self.final_norm)
        logits = linear(x, self.lm_head)
        if self.final_softcap is not None:
            logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        return logits

    def logits(self, token_ids):
        return self.forward(token_ids).numpy()


class LlamaLM(DecoderLM):
    """LlamaForCausalLM: attention_bias on q/k/v/o, mlp_bias on the MLP, rope_scaling llama3/linear."""

    model_type = "llama"

    def configure(self):
        self.attn_bias = self.o_bias = bool(self.cfg.get("attention_bias", False))
        self.mlp_bias = bool(self.cfg.get("mlp_bias", False))


class MistralLM(DecoderLM):
    """MistralForCausalLM: Llama without biases; sliding_window (may be null) applies to every layer."""

    model_type = "mistral"
    hf_defaults = dict(DecoderLM.hf_defaults, num_key_value_heads=8, sliding_window=4096)

    def resolve_layer_types(self):
        w = self.cfg.get("sliding_window")
        if w is None:
            return [FULL] * self.n_layers, None
        w = self.cfg.int("sliding_window")
        if w <= 0:
            raise self.cfg.bad("sliding_window", w, "must be positive or null")
        return [SLIDING] * self.n_layers, w


def qwen_layer_types(model):
    """Qwen2/Qwen3: HF sets sliding_window = None unless use_sliding_window; then layer_types (explicit, or
    sliding iff i >= max_window_layers)."""
    cfg = model.cfg
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", False) else None
    types = cfg.get("layer_types")
    if types is None:
        mwl = cfg.int("max_window_layers")
        types = [SLIDING if window is not None and i >= mwl else FULL for i in range(model.n_layers)]
    types = check_layer_types(cfg, types, model.n_layers)
    if SLIDING in types:
        if window is None:
            raise cfg.bad("layer_types", types, "has sliding_attention layers but use_sliding_window is false "
                          "or sliding_window is null (HF cannot build that mask either)")
        window = cfg.int("sliding_window")
        if window <= 0:
            raise cfg.bad("sliding_window", window, "must be positive")
    return types, window if SLIDING in types else None


def check_layer_types(cfg, types, n_layers):
    if not isinstance(types, list) or len(types) != n_layers or any(t not in (FULL, SLIDING) for t in types):
        raise cfg.bad("layer_types", types, f"expected {n_layers} entries of {FULL!r} or {SLIDING!r}")
    return list(types)


class Qwen2LM(DecoderLM):
    """Qwen2ForCausalLM: q/k/v biases (always), no o bias; sliding layers per use_sliding_window/max_window_layers."""

    model_type = "qwen2"
    attn_bias = True
    hf_defaults = dict(DecoderLM.hf_defaults, num_key_value_heads=32, sliding_window=4096, max_window_layers=28)

    def resolve_layer_types(self):
        return qwen_layer_types(self)


class Qwen3LM(DecoderLM):
    """Qwen3ForCausalLM: per-head q_norm/k_norm RMSNorm over head_dim before RoPE; attention_bias on q/k/v/o."""

    model_type = "qwen3"
    qk_norm = True
    hf_defaults = dict(Qwen2LM.hf_defaults, head_dim=128)

    def configure(self):
        self.attn_bias = self.o_bias = bool(self.cfg.get("attention_bias", False))

    def resolve_layer_types(self):
        return qwen_layer_types(self)


class Phi3LM(DecoderLM):
    """Phi3ForCausalLM: fused qkv_proj (rows q | k | v), fused gate_up_proj (rows gate | up), partial rotary,
    sliding_window (when set) on every layer."""

    model_type = "phi3"
    hf_defaults = dict(DecoderLM.hf_defaults, rms_norm_eps=1e-5)

    def resolve_layer_types(self):
        return MistralLM.resolve_layer_types(self)

    def rotary_dim(self):
        dim = int(self.head_dim * self.partial_rotary_factor())
        if dim <= 0 or dim % 2:
            raise self.cfg.bad("partial_rotary_factor", self.partial_rotary_factor(),
                               f"gives rotary dim {dim}; needs a positive even number")
        return dim

    def load_attention(self, w, p, L):
        H, D, Hq, Hkv = self.hidden, self.head_dim, self.n_heads, self.n_kv
        qkv = w.take(p + "qkv_proj.weight", ((Hq + 2 * Hkv) * D, H))
        L["wq"], L["wk"], L["wv"] = torch.split(qkv, [Hq * D, Hkv * D, Hkv * D], dim=0)
        L["wo"] = w.take(p + "o_proj.weight", (H, Hq * D))

    def load_mlp(self, w, p, L):
        H, I = self.hidden, self.inter
        gate_up = w.take(p + "gate_up_proj.weight", (2 * I, H))
        L["w_gate"], L["w_up"] = gate_up[:I], gate_up[I:]
        L["w_down"] = w.take(p + "down_proj.weight", (H, I))


class Gemma2LM(DecoderLM):
    """Gemma2ForCausalLM: (1 + w) norms incl. pre/post feed-forward, embeddings * sqrt(hidden), scaling
    query_pre_attn_scalar**-0.5, attention and final logit tanh softcapping, alternating sliding layers."""

    model_type = "gemma2"
    default_tie = True
    gemma_norms = True
    default_softcaps = (50.0, 30.0)  # HF Gemma2Config defaults (attn, final)
    # Gemma configs on the Hub (notably gemma3 text_config) omit many keys, so the class defaults matter here.
    hf_defaults = dict(DecoderLM.hf_defaults, vocab_size=256000, hidden_size=2304, intermediate_size=9216,
                       num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                       sliding_window=4096, query_pre_attn_scalar=256)
    applies_attn_softcap = True

    def activation_name(self):
        return self.cfg.get("hidden_activation") or "gelu_pytorch_tanh"

    def configure(self):
        cfg = self.cfg
        if cfg.get("use_bidirectional_attention"):
            raise cfg.bad("use_bidirectional_attention", True, "only causal decoding is implemented")
        self.attn_bias = self.o_bias = bool(cfg.get("attention_bias", False))
        self.scale = cfg.float("query_pre_attn_scalar") ** -0.5
        attn_default, final_default = self.default_softcaps
        attn = cfg.raw.get("attn_logit_softcapping", attn_default)
        final = cfg.raw.get("final_logit_softcapping", final_default)
        # Gemma3's attention never passes a softcap to the attention function, so HF ignores the key there.
        self.attn_softcap = float(attn) if (attn is not None and self.applies_attn_softcap) else None
        self.final_softcap = float(final) if final is not None else None

    def default_layer_types(self):
        # HF Gemma2Config: sliding iff (i + 1) % 2 != 0, i.e. even layers are sliding.
        return [SLIDING if (i + 1) % 2 else FULL for i in range(self.n_layers)]

    def resolve_layer_types(self):
        cfg = self.cfg
        types = cfg.get("layer_types")
        types = check_layer_types(cfg, types, self.n_layers) if types is not None else self.default_layer_types()
        window = None
        if SLIDING in types:
            window = cfg.int("sliding_window")
            if window <= 0:
                raise cfg.bad("sliding_window", window, "must be positive")
        return types, window


class Gemma3TextLM(Gemma2LM):
    """Gemma3ForCausalLM (gemma3_text): Gemma2 plus per-head (1 + w) q_norm/k_norm before RoPE, local RoPE base
    (rope_local_base_freq) on sliding layers and rope_theta + rope_scaling on global ones, every Nth layer global."""

    model_type = "gemma3_text"
    qk_norm = True
    default_softcaps = (None, None)
    applies_attn_softcap = False
    hf_defaults = dict(Gemma2LM.hf_defaults, vocab_size=262208, rope_theta=1_000_000.0, rope_local_base_freq=10_000.0)

    def default_layer_types(self):
        cfg = self.cfg
        # Only the public key: HF reads kwargs.get("sliding_window_pattern", 6); a serialized private
        # "_sliding_window_pattern" is not read back (layer_types carries the pattern in such configs).
        pattern = int(cfg.get("sliding_window_pattern", 6))
        if pattern <= 0:
            raise cfg.bad("sliding_window_pattern", pattern, "must be positive")
        # HF Gemma3TextConfig: sliding iff (i + 1) % pattern != 0, so layers pattern-1, 2*pattern-1, ... are global.
        return [SLIDING if (i + 1) % pattern else FULL for i in range(self.n_layers)]

    def resolve_rope(self, layer_type):
        cfg = self.cfg
        rp = cfg.get("rope_parameters")
        if isinstance(rp, dict) and (FULL in rp or SLIDING in rp):
            params = dict(rp.get(layer_type) or {})
            params.setdefault("rope_theta", cfg.float("rope_theta") if layer_type == FULL
                              else cfg.float("rope_local_base_freq"))
            kind = params.get("rope_type") or params.get("type") or "default"
            params["rope_type"] = kind
            if kind not in ("default", "linear", "llama3"):
                raise cfg.bad("rope_parameters.rope_type", kind, "only default, linear and llama3 are implemented")
            return params
        if layer_type == SLIDING:
            # Local layers: their own base frequency and never any scaling.
            return {"rope_type": "default", "rope_theta": cfg.float("rope_local_base_freq")}
        return DecoderLM.resolve_rope(self, layer_type)


# ----------------------------------------------------------------------------------------------------------
# Mixture of experts (HF modeling_{qwen2_moe,qwen3_moe,mixtral,olmoe}.py sparse blocks)


def moe_topk(probs, k):
    """The top k of each row by descending probability, ties to the lower expert index. HF calls torch.topk,
    whose order among equal values is unspecified (on CPU it is not index order: 12 equal values give 9, 7, ...);
    a stable descending sort is the fixed rule hfstatic documents."""
    order = torch.sort(probs, dim=-1, descending=True, stable=True)
    return order.values[..., :k], order.indices[..., :k]


class MoeMixin:
    """Sparse MoE MLP layers: softmax over the router logits in float32, top-k, optional renormalization, the
    selected experts' gated MLPs weighted and summed with index_add_ in expert order; optional shared expert
    behind a sigmoid gate (Qwen2-MoE). Subclasses set the names and flags in configure_moe()."""

    expert_names = ("gate_proj", "up_proj", "down_proj")
    moe_module = "mlp."          # router at <moe_module>gate.weight, experts at <moe_module>experts.<e>.
    shared_expert = False
    renormalize_always = False   # Mixtral

    def configure_moe(self):
        cfg = self.cfg
        self.n_experts = cfg.int("num_experts")
        self.top_k = cfg.int("num_experts_per_tok")
        self.moe_inter = cfg.int("moe_intermediate_size")
        self.norm_topk_prob = bool(cfg.get("norm_topk_prob", False))
        if not 1 <= self.top_k <= self.n_experts:
            raise cfg.bad("num_experts_per_tok", self.top_k, f"must be in [1, num_experts={self.n_experts}]")

    def is_sparse(self, i):
        """Qwen2-MoE / Qwen3-MoE rule: sparse unless listed in mlp_only_layers, every decoder_sparse_step-th layer."""
        only = self.cfg.get("mlp_only_layers") or []
        step = self.cfg.int("decoder_sparse_step", 1)
        return i not in only and self.n_experts > 0 and (i + 1) % step == 0

    def load(self, w, prefix, lm_head_name):
        self.configure_moe()
        super().load(w, prefix, lm_head_name)

    def load_mlp(self, w, p, L):
        i = int(p.rsplit("layers.", 1)[1].split(".")[0])  # p = "<prefix>layers.<i>.mlp."
        if not self.is_sparse(i):
            return super().load_mlp(w, p, L)
        H, I, E = self.hidden, self.moe_inter, self.n_experts
        m = p[: -len("mlp.")] + self.moe_module
        L["router"] = w.take(m + "gate.weight", (E, H))
        g, u, d = self.expert_names
        L["experts"] = [(w.take(f"{m}experts.{e}.{g}.weight", (I, H)), w.take(f"{m}experts.{e}.{u}.weight", (I, H)),
                         w.take(f"{m}experts.{e}.{d}.weight", (H, I))) for e in range(E)]
        if self.shared_expert:
            S = self.cfg.int("shared_expert_intermediate_size")
            L["shared"] = (w.take(m + "shared_expert.gate_proj.weight", (S, H)),
                           w.take(m + "shared_expert.up_proj.weight", (S, H)),
                           w.take(m + "shared_expert.down_proj.weight", (H, S)))
            L["shared_gate"] = w.take(m + "shared_expert_gate.weight", (1, H))

    def mlp_block(self, L, x):
        if "router" not in L:
            return super().mlp_block(L, x)
        probs = F.softmax(linear(x, L["router"]), dim=-1, dtype=torch.float)
        weights, selected = moe_topk(probs, self.top_k)
        if self.renormalize_always or self.norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, (g, u, d) in enumerate(L["experts"]):
            tok, rank = torch.where(selected == e)
            if tok.numel() == 0:
                continue
            h = x[tok]
            y = linear(self.act(linear(h, g)) * linear(h, u), d) * weights[tok, rank, None]
            out.index_add_(0, tok, y)
        if "shared" in L:
            g, u, d = L["shared"]
            shared = linear(self.act(linear(x, g)) * linear(x, u), d)
            out = out + torch.sigmoid(linear(x, L["shared_gate"])) * shared
        return out


class Qwen3MoeLM(MoeMixin, Qwen3LM):
    """Qwen3MoeForCausalLM: qwen3 attention (per-head q/k norm); sparse layers per decoder_sparse_step and
    mlp_only_layers (dense layers use intermediate_size); norm_topk_prob (default false)."""

    model_type = "qwen3_moe"
    hf_defaults = dict(Qwen3LM.hf_defaults, decoder_sparse_step=1, norm_topk_prob=False)


class Qwen2MoeLM(MoeMixin, Qwen2LM):
    """Qwen2MoeForCausalLM: qwen2 attention (q/k/v bias); sparse layers as Qwen3-MoE; a shared expert
    (shared_expert_intermediate_size) scaled by sigmoid(shared_expert_gate(x)) added to every sparse block."""

    model_type = "qwen2_moe"
    shared_expert = True
    hf_defaults = dict(Qwen2LM.hf_defaults, decoder_sparse_step=1, norm_topk_prob=False)


class MixtralLM(MoeMixin, MistralLM):
    """MixtralForCausalLM: mistral attention; every layer sparse (block_sparse_moe, experts w1/w3/w2 = gate/up/
    down, num_local_experts, intermediate_size per expert); the top-k weights always renormalized."""

    model_type = "mixtral"
    expert_names = ("w1", "w3", "w2")
    moe_module = "block_sparse_moe."
    renormalize_always = True
    hf_defaults = dict(DecoderLM.hf_defaults, rms_norm_eps=1e-5, num_key_value_heads=8, rope_theta=1e6)

    def configure_moe(self):
        self.n_experts = self.cfg.int("num_local_experts", 8)
        self.top_k = self.cfg.int("num_experts_per_tok", 2)
        self.moe_inter = self.inter
        self.norm_topk_prob = True

    def resolve_layer_types(self):
        return MistralLM.resolve_layer_types(self)

    def is_sparse(self, i):
        return True


class OlmoeLM(MoeMixin, DecoderLM):
    """OlmoeForCausalLM: q_norm/k_norm over the whole q/k projection (hidden and kv_heads·head_dim wide, before
    the head split), clip_qkv (only null), every layer sparse with intermediate_size experts, norm_topk_prob."""

    model_type = "olmoe"
    hf_defaults = dict(DecoderLM.hf_defaults, rms_norm_eps=1e-5, num_experts=64, num_experts_per_tok=8,
                       norm_topk_prob=False)

    def configure(self):
        self.attn_bias = self.o_bias = bool(self.cfg.get("attention_bias", False))
        if self.cfg.get("clip_qkv") is not None:
            raise self.cfg.bad("clip_qkv", self.cfg.get("clip_qkv"), "only null is implemented")

    def configure_moe(self):
        self.n_experts = self.cfg.int("num_experts")
        self.top_k = self.cfg.int("num_experts_per_tok")
        self.moe_inter = self.inter
        self.norm_topk_prob = bool(self.cfg.get("norm_topk_prob", False))

    def is_sparse(self, i):
        return True

    def load_attention(self, w, p, L):
        super().load_attention(w, p, L)
        L["q_norm_full"] = w.take(p + "q_norm.weight", (self.n_heads * self.head_dim,))
        L["k_norm_full"] = w.take(p + "k_norm.weight", (self.n_kv * self.head_dim,))

    def qkv(self, L, x):
        q, k, v = super().qkv(L, x)
        return rms_norm(q, L["q_norm_full"], self.eps), rms_norm(k, L["k_norm_full"], self.eps), v


ARCHS = {
    "llama": LlamaLM,
    "qwen3_moe": Qwen3MoeLM,
    "qwen2_moe": Qwen2MoeLM,
    "mixtral": MixtralLM,
    "olmoe": OlmoeLM,
    "mistral": MistralLM,
    "qwen2": Qwen2LM,
    "qwen3": Qwen3LM,
    "phi3": Phi3LM,
    "gemma2": Gemma2LM,
    "gemma3_text": Gemma3TextLM,
}

# (prefix of the decoder's tensors, name of lm_head) for the multimodal gemma3 layouts (old and new HF).
_GEMMA3_MM_LAYOUTS = [
    ("language_model.model.", "language_model.lm_head.weight"),
    ("model.language_model.", "lm_head.weight"),
]


def read_config(model_dir):
    path = os.path.join(model_dir, "config.json")
    try:
        with open(path) as f:
            raw = json.load(f)
    except FileNotFoundError as e:
        raise UnsupportedModel(f"{path}: not found") from e
    except json.JSONDecodeError as e:
        raise UnsupportedModel(f"{path}: invalid JSON: {e}") from e
    if not isinstance(raw, dict):
        raise UnsupportedModel(f"{path}: expected a JSON object")
    return raw, path


def load_model(model_dir):
    """Loads config.json + safetensors of a HF model dir into the matching reference class."""
    raw, path = read_config(model_dir)
    model_type = raw.get("model_type")
    arrays = st.load_model_dir(model_dir)
    storage = st.storage_dtypes(model_dir)
    prefix, lm_head_name, ignore = "model.", "lm_head.weight", ()
    if model_type == "gemma3":
        text = raw.get("text_config")
        if not isinstance(text, dict):
            raise UnsupportedModel(f"{path}: model_type gemma3 needs a text_config object")
        tie = raw.get("tie_word_embeddings", text.get("tie_word_embeddings", True))
        raw = dict(text, model_type="gemma3_text")
        for pfx, head in _GEMMA3_MM_LAYOUTS:
            if pfx + "embed_tokens.weight" in arrays:
                prefix, lm_head_name = pfx, head
                break
        else:
            raise WeightError(f"{model_dir}: gemma3 checkpoint has none of "
                              f"{[p + 'embed_tokens.weight' for p, _ in _GEMMA3_MM_LAYOUTS]}")
        # The vision tower and projector are not part of the text decoder.
        ignore = ("vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector.")
        model_type = "gemma3_text"
    else:
        tie = None
    cls = ARCHS.get(model_type)
    if cls is None:
        raise UnsupportedModel(f"{path}: model_type {model_type!r} is not supported; "
                               f"expected one of {sorted(ARCHS) + ['gemma3']}")
    cfg = Config(raw, path, cls.hf_defaults)
    if tie is None:
        tie = cfg.raw.get("tie_word_embeddings")
        tie = cls.default_tie if tie is None else tie
    weights = Weights(arrays, model_dir)
    model = cls(cfg, weights, prefix, lm_head_name, bool(tie), storage.get(prefix + "embed_tokens.weight"))
    weights.check_all_used(ignore)
    return model


# ----------------------------------------------------------------------------------------------------------
# Decoding helpers


def greedy(model, prompt, n_new):
    """Greedy decoding with a full recompute per step.

    Returns (tokens: prompt + n_new generated, step_logits [n_new + 1, vocab]) where row 0 is the logits
    after the prompt's last token and row k the logits after the k-th generated token."""
    tokens = list(prompt)
    rows = []
    for step in range(n_new + 1):
        row = model.forward(tokens)[-1]
        rows.append(row.numpy())
        if step < n_new:
            tokens.append(int(torch.argmax(row)))
    return tokens, np.stack(rows).astype(np.float32)


def load_vocab(model_dir):
    """id -> piece from tokenizer.json (model.vocab plus added_tokens), or None if there is no tokenizer."""
    path = os.path.join(model_dir, "tokenizer.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        tok = json.load(f)
    vocab = {int(i): p for p, i in tok.get("model", {}).get("vocab", {}).items()}
    for added in tok.get("added_tokens", []):
        vocab[int(added["id"])] = added["content"]
    return vocab


def decode(vocab, ids, skip_special=True):
    """SentencePiece-style decode: '▁' -> ' ', <0xNN> byte pieces -> bytes, drop one leading space."""
    out = bytearray()
    for i in ids:
        piece = vocab.get(int(i))
        if piece is None:
            continue
        if skip_special and piece in ("<s>", "</s>", "<unk>", "<pad>", "<bos>", "<eos>"):
            continue
        if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            out.append(int(piece[3:5], 16))
        else:
            out += piece.replace("\u2581", " ").encode("utf-8")
    text = out.decode("utf-8", errors="replace")
    return text[1:] if text.startswith(" ") else text
