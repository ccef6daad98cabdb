"""Checks of the PyTorch reference: a real trained model's known outputs, plus per-architecture invariants
that fail if a convention (mask boundary, norm form, RoPE variant, layer pattern, weight layout) is wrong."""

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import hf_reference as ref
import reference as reference_cli
import safetensors_np as st
from conftest import REFERENCE_CLI

ARCHS = ["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3", "qwen3_moe", "qwen2_moe", "mixtral",
         "olmoe"]
SLIDING_ARCHS = ["mistral", "qwen2", "phi3", "gemma2", "gemma3"]
PROMPT20 = [1, 17, 300, 42, 7, 99, 256, 3, 411, 88, 5, 120, 64, 200, 31, 450, 12, 77, 500, 9]


# --- real model: stories260K ------------------------------------------------------------------------------


def test_stories_first_step_logits(stories_dir):
    logits = ref.load_model(stories_dir).logits([1])
    assert logits.shape == (1, 512)
    np.testing.assert_allclose(logits[0, :5], [-6.22291, 8.40434, -6.22374, -6.22254, -6.22195], atol=1e-4)


def test_stories_greedy_text(stories_dir):
    model = ref.load_model(stories_dir)
    tokens, logits = ref.greedy(model, [1], 40)
    assert logits.shape == (41, 512)
    text = ref.decode(ref.load_vocab(stories_dir), tokens)
    assert text.startswith("Once upon a time, there was a little girl named Lily. "
                           "She loved to play outside in the park."), text


def test_cli_writes_npz_rows_as_documented(stories_dir, tmp_path):
    out = tmp_path / "r.npz"
    res = subprocess.run([sys.executable, REFERENCE_CLI, stories_dir, "--tokens", "1,403,407", "--greedy", "3",
                          "--out", str(out), "--print-first", "5"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "logits[0][:5] = " in res.stdout
    data = np.load(out)
    tokens, logits, prompt_logits = data["tokens"], data["logits"], data["prompt_logits"]
    assert tokens.shape == (6,) and list(tokens[:3]) == [1, 403, 407]
    assert logits.shape == (4, 512) and logits.dtype == np.float32
    assert prompt_logits.shape == (3, 512)
    model = ref.load_model(stories_dir)
    np.testing.assert_allclose(prompt_logits, model.logits([1, 403, 407]), atol=1e-5)
    np.testing.assert_allclose(logits[0], prompt_logits[-1], atol=1e-5)
    for k in range(4):  # row k: after the k-th generated token; generated token k+1 is its argmax
        np.testing.assert_allclose(logits[k], model.logits(list(tokens[:3 + k]))[-1], atol=1e-5)
        if k < 3:
            assert tokens[3 + k] == int(np.argmax(logits[k]))


def test_cli_rejects_unsupported_model(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    st.write_file(str(tmp_path / "model.safetensors"), {"w": np.zeros(2, np.float32)})
    assert reference_cli.main([str(tmp_path), "--tokens", "1"]) == 2  # in-process: a torch import costs seconds
    assert "model_type 'gpt2' is not supported" in capsys.readouterr().err


# --- shared blocks ----------------------------------------------------------------------------------------


def test_gemma_norm_with_zero_weight_is_plain_normalization():
    x = torch.randn(5, 64) * 3
    eps = 1e-6
    plain = x.numpy() / np.sqrt((x.numpy().astype(np.float64) ** 2).mean(-1, keepdims=True) + eps)
    np.testing.assert_allclose(ref.gemma_rms_norm(x, torch.zeros(64), eps).numpy(), plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ref.rms_norm(x, torch.ones(64), eps).numpy(), plain, rtol=1e-5, atol=1e-6)
    w = torch.randn(64)
    np.testing.assert_allclose(ref.gemma_rms_norm(x, w, eps).numpy(), ref.rms_norm(x, 1 + w, eps).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_causal_mask_window_boundary():
    m = ref.causal_mask(6, window=3)
    visible = (m == 0).numpy()
    for i in range(6):
        for j in range(6):
            assert visible[i, j] == (j <= i and i - j < 3), (i, j)
    assert (ref.causal_mask(4) == 0).numpy().tolist() == np.tril(np.ones((4, 4), bool)).tolist()


def test_attention_matches_naive_loop():
    torch.manual_seed(0)
    q, k, v = torch.randn(4, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    out = ref.attention(q, k, v, 0.3, ref.causal_mask(5, 2), softcap=2.0).numpy()
    for h in range(4):
        kv = h // 2  # GQA: query heads 0,1 -> kv 0; 2,3 -> kv 1
        for i in range(5):
            s = [2.0 * math.tanh(float(q[h, i] @ k[kv, j]) * 0.3 / 2.0) for j in range(5) if j <= i and i - j < 2]
            js = [j for j in range(5) if j <= i and i - j < 2]
            p = np.exp(np.array(s) - max(s))
            p /= p.sum()
            want = sum(pj * v[kv, j].numpy() for pj, j in zip(p, js))
            np.testing.assert_allclose(out[i, h * 8:(h + 1) * 8], want, rtol=1e-5, atol=1e-6)


def test_rope_rotates_pairs_half_apart():
    # rotate_half layout: dim d pairs with dim d + D/2 and rotates by angle pos * inv_freq[d].
    inv = ref.rope_inv_freq({"rope_theta": 10000.0}, 8, "t")
    cos, sin = ref.rope_cos_sin(inv, 4)
    x = torch.randn(1, 4, 8)
    y = ref.apply_rope(x, cos, sin)
    for pos in range(4):
        for d in range(4):
            a = pos * (10000.0 ** (-2 * d / 8))
            x1, x2 = float(x[0, pos, d]), float(x[0, pos, d + 4])
            assert abs(float(y[0, pos, d]) - (x1 * math.cos(a) - x2 * math.sin(a))) < 1e-5
            assert abs(float(y[0, pos, d + 4]) - (x2 * math.cos(a) + x1 * math.sin(a))) < 1e-5


def test_partial_rope_passes_tail_through():
    inv = ref.rope_inv_freq({"rope_theta": 10000.0}, 12, "t")
    cos, sin = ref.rope_cos_sin(inv, 3)
    x = torch.randn(2, 3, 16)
    y = ref.apply_rope(x, cos, sin)
    assert torch.equal(y[..., 12:], x[..., 12:])
    assert not torch.allclose(y[:, 1:, :12], x[:, 1:, :12])


def test_llama3_rope_matches_hand_computation():
    p = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    got = ref.rope_inv_freq(p, 128, "t").numpy()
    bands = set()
    for i, g in enumerate(got):
        f = 1.0 / (500000.0 ** (2 * i / 128))
        wl = 2 * math.pi / f
        if wl < 8192 / 4.0:
            want = f
            bands.add("high")
        elif wl > 8192 / 1.0:
            want = f / 8.0
            bands.add("low")
        else:
            s = (8192 / wl - 1.0) / (4.0 - 1.0)
            want = (1 - s) * f / 8.0 + s * f
            bands.add("mid")
        assert abs(g - want) <= 1e-5 * want, (i, g, want)
    assert bands == {"high", "mid", "low"}


def test_linear_rope_is_position_division():
    base = {"rope_theta": 10000.0}
    inv = ref.rope_inv_freq(base, 16, "t")
    lin = ref.rope_inv_freq(dict(base, rope_type="linear", factor=4.0), 16, "t")
    torch.testing.assert_close(lin, inv / 4.0)


# --- architectures via make-checkpoint ----------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_every_arch_gives_finite_varied_logits(make_ckpt, arch):
    model = ref.load_model(make_ckpt(arch))
    logits = model.logits(PROMPT20)
    assert logits.shape == (20, 512)
    assert np.isfinite(logits).all()
    assert logits.std(axis=-1).min() > 0.05  # not constant over the vocabulary
    assert np.abs(np.diff(logits, axis=0)).max() > 0.05  # depends on the token / position


@pytest.mark.parametrize("arch", ["qwen3_moe", "qwen2_moe", "mixtral", "olmoe"])
def test_moe_block_equals_a_per_token_loop(make_ckpt, arch):
    """The sparse block (softmax, top-k, index_add_ over experts) against the formula token by token, with
    plain Python sorting: sum over the k best experts (ties to the lower index) of w_e * expert_e(x)."""
    model = ref.load_model(make_ckpt(arch))
    L = model.layers[0]
    x = torch.randn(5, model.hidden, generator=torch.Generator().manual_seed(3))
    got = model.mlp_block(L, x)
    renorm = model.norm_topk_prob or arch == "mixtral"
    assert renorm == (arch == "mixtral")  # the tiny presets' defaults: only mixtral renormalizes
    for t in range(5):
        logits = (L["router"] @ x[t]).tolist()
        mx = max(logits)
        p = [math.exp(v - mx) for v in logits]
        p = [v / sum(p) for v in p]
        best = sorted(range(len(p)), key=lambda e: (-p[e], e))[:model.top_k]
        total = sum(p[e] for e in best)
        want = torch.zeros(model.hidden)
        for e in sorted(best):
            g, u, d = L["experts"][e]
            h = torch.nn.functional.silu(g @ x[t]) * (u @ x[t])
            want += (d @ h) * (p[e] / total if renorm else p[e])
        if "shared" in L:
            g, u, d = L["shared"]
            want += torch.sigmoid(L["shared_gate"] @ x[t])[0] * (d @ (torch.nn.functional.silu(g @ x[t]) * (u @ x[t])))
        np.testing.assert_allclose(got[t].numpy(), want.numpy(), atol=1e-5)


def test_moe_topk_ties_go_to_the_lower_index():
    values, index = ref.moe_topk(torch.full((2, 12), 1 / 12), 3)
    assert index.tolist() == [[0, 1, 2], [0, 1, 2]]
    _, index = ref.moe_topk(torch.tensor([[0.1, 0.3, 0.2, 0.3, 0.1]]), 3)
    assert index.tolist() == [[1, 3, 2]]


def test_qwen3_moe_dense_and_sparse_layers(make_ckpt):
    model = ref.load_model(make_ckpt("qwen3_moe"))
    assert ["router" in L for L in model.layers] == [True, False, True]  # mlp_only_layers = [1]


@pytest.mark.parametrize("arch", SLIDING_ARCHS)
def test_sliding_window_boundary(make_ckpt, arch):
    """W=8: rows 0..7 see every earlier key, so they equal a model whose window covers everything; row 8 is
    the first whose window excludes key 0 and must differ. Same seed -> identical weights."""
    windowed = ref.load_model(make_ckpt(arch, sliding_window=8))
    wide = ref.load_model(make_ckpt(arch, sliding_window=4096))
    assert windowed.window == 8 and ref.SLIDING in windowed.layer_types
    a, b = windowed.logits(PROMPT20), wide.logits(PROMPT20)
    np.testing.assert_allclose(a[:8], b[:8], atol=1e-5)
    assert np.abs(a[8] - b[8]).max() > 1e-4
    assert np.abs(a[8:] - b[8:]).max(axis=-1).min() > 1e-4


@pytest.mark.parametrize("arch", ["mistral", "qwen2", "phi3"])
def test_sliding_disabled_equals_wide_window(make_ckpt, arch):
    off = ref.load_model(make_ckpt(arch, sliding_window=0))
    assert off.window is None and ref.SLIDING not in off.layer_types
    wide = ref.load_model(make_ckpt(arch, sliding_window=4096))
    np.testing.assert_allclose(off.logits(PROMPT20), wide.logits(PROMPT20), atol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_sharded_checkpoint_gives_identical_logits(make_ckpt, arch):
    single, sharded = make_ckpt(arch), make_ckpt(arch, shards=3)
    assert os.path.exists(os.path.join(sharded, st.INDEX_NAME))
    assert not os.path.exists(os.path.join(sharded, st.SINGLE_NAME))
    np.testing.assert_array_equal(ref.load_model(single).logits(PROMPT20), ref.load_model(sharded).logits(PROMPT20))


def test_tie_flag_controls_lm_head(make_ckpt):
    tied, untied = make_ckpt("llama", tie=True), make_ckpt("llama", tie=False)
    assert "lm_head.weight" not in st.load_model_dir(tied)
    assert "lm_head.weight" in st.load_model_dir(untied)
    model = ref.load_model(tied)
    assert model.lm_head is model.embed


def test_gemma2_layers_alternate_starting_sliding(make_ckpt, tmp_path):
    d = str(tmp_path / "g2")
    shutil.copytree(make_ckpt("gemma2"), d)
    cfg = json.load(open(os.path.join(d, "config.json")))
    del cfg["layer_types"]  # fall back to HF's default rule
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    model = ref.load_model(d)
    assert model.layer_types == [ref.SLIDING, ref.FULL, ref.SLIDING, ref.FULL]
    assert model.scale == 32 ** -0.5 and model.attn_softcap == 20.0 and model.final_softcap == 10.0


def test_gemma3_layer_pattern_and_dual_rope(make_ckpt, tmp_path):
    d = str(tmp_path / "g3")
    shutil.copytree(make_ckpt("gemma3"), d)
    cfg = json.load(open(os.path.join(d, "config.json")))
    del cfg["layer_types"]
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    model = ref.load_model(d)  # sliding_window_pattern 2 -> every 2nd layer global
    assert model.layer_types == [ref.SLIDING, ref.FULL, ref.SLIDING, ref.FULL]
    base = 1.0 / (10000.0 ** (torch.arange(0, 16, 2).float() / 16))
    glob = 1.0 / (1e6 ** (torch.arange(0, 16, 2).float() / 16)) / 8.0  # rope_scaling linear 8 on global only
    torch.testing.assert_close(model.inv_freq[ref.SLIDING], base)
    torch.testing.assert_close(model.inv_freq[ref.FULL], glob)
    assert model.attn_softcap is None and model.final_softcap is None and model.scale == 24 ** -0.5


def test_gemma3_pattern_six_puts_global_every_sixth_layer():
    raw = {"model_type": "gemma3_text", "num_hidden_layers": 13, "sliding_window_pattern": 6}
    types = ref.Gemma3TextLM.default_layer_types(type("M", (), {"cfg": ref.Config(raw, "t"), "n_layers": 13})())
    assert [i for i, t in enumerate(types) if t == ref.FULL] == [5, 11]


def test_gemma3_multimodal_layout_matches_text_model(make_ckpt, tmp_path):
    src = make_ckpt("gemma3")
    text_cfg = json.load(open(os.path.join(src, "config.json")))
    for layout, prefix, head in [("old", "language_model.model.", None), ("new", "model.language_model.", None)]:
        d = tmp_path / layout
        d.mkdir()
        tensors = {prefix + k[len("model."):]: v for k, v in st.load_model_dir(src).items()}
        tensors["vision_tower.vision_model.post_layernorm.weight"] = np.ones(4, np.float32)
        st.write_file(str(d / "model.safetensors"), tensors)
        (d / "config.json").write_text(json.dumps({"model_type": "gemma3", "architectures":
                                                   ["Gemma3ForConditionalGeneration"], "text_config": text_cfg}))
        np.testing.assert_array_equal(ref.load_model(str(d)).logits(PROMPT20), ref.load_model(src).logits(PROMPT20))


def test_gemma_embed_scale_rounds_to_checkpoint_dtype(mc, tmp_path):
    cfg = mc.build_config("gemma2", dtype="bf16")
    cfg.update(hidden_size=80, num_attention_heads=5, num_key_value_heads=1)  # sqrt(80) = 8.944 -> bf16 8.9375
    d = str(tmp_path)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    mc.write_weights(d, mc.tensor_specs(cfg), "BF16", 0, 0.08, 1)
    model = ref.load_model(d)
    assert float(model.embed_scale) == 8.9375
    cfg["torch_dtype"] = "float32"
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    mc.write_weights(d, mc.tensor_specs(cfg), "F32", 0, 0.08, 1)
    assert abs(float(ref.load_model(d).embed_scale) - math.sqrt(80)) < 1e-6


def test_phi3_is_llama_with_fused_projections(make_ckpt, tmp_path):
    """With full rotary and no window, phi3 must equal a llama whose q/k/v and gate/up are the row blocks of
    qkv_proj (q | k | v) and gate_up_proj (gate | up)."""
    phi = make_ckpt("phi3", sliding_window=0, partial_rotary=1.0)
    cfg = json.load(open(os.path.join(phi, "config.json")))
    D, Hq, Hkv, I = 16, 4, 2, 128
    tensors = {}
    for name, arr in st.load_model_dir(phi).items():
        if name.endswith("qkv_proj.weight"):
            p = name[: -len("qkv_proj.weight")]
            tensors[p + "q_proj.weight"] = arr[: Hq * D]
            tensors[p + "k_proj.weight"] = arr[Hq * D: (Hq + Hkv) * D]
            tensors[p + "v_proj.weight"] = arr[(Hq + Hkv) * D:]
        elif name.endswith("gate_up_proj.weight"):
            p = name[: -len("gate_up_proj.weight")]
            tensors[p + "gate_proj.weight"], tensors[p + "up_proj.weight"] = arr[:I], arr[I:]
        else:
            tensors[name] = arr
    cfg.update(model_type="llama", architectures=["LlamaForCausalLM"])
    for key in ("sliding_window", "partial_rotary_factor"):
        cfg.pop(key)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    st.write_file(str(tmp_path / "model.safetensors"), tensors)
    np.testing.assert_allclose(ref.load_model(phi).logits(PROMPT20), ref.load_model(str(tmp_path)).logits(PROMPT20),
                               atol=1e-5)


def test_phi3_partial_rotary_changes_output(make_ckpt):
    partial = ref.load_model(make_ckpt("phi3"))
    assert partial.rot_dim == 12  # 16 * 0.75
    full = ref.load_model(make_ckpt("phi3", partial_rotary=1.0))
    assert np.abs(partial.logits(PROMPT20) - full.logits(PROMPT20)).max() > 1e-3


def test_qwen3_qk_norm_is_used(make_ckpt, tmp_path):
    d = str(tmp_path / "q3")
    shutil.copytree(make_ckpt("qwen3"), d)
    base = ref.load_model(d).logits(PROMPT20)
    tensors = dict(st.load_model_dir(d))
    tensors["model.layers.0.self_attn.q_norm.weight"] = tensors["model.layers.0.self_attn.q_norm.weight"] * 2
    st.write_file(os.path.join(d, "model.safetensors"), tensors)
    assert np.abs(ref.load_model(d).logits(PROMPT20) - base).max() > 1e-3


@pytest.mark.parametrize("scaling", ["linear", "llama3"])
def test_llama_rope_scaling_changes_output(make_ckpt, scaling):
    model = ref.load_model(make_ckpt("llama", rope_scaling=scaling))
    assert model.rope_params[ref.FULL]["rope_type"] == scaling
    plain = ref.load_model(make_ckpt("llama"))
    a, b = model.logits(PROMPT20), plain.logits(PROMPT20)
    np.testing.assert_allclose(a[0], b[0], atol=1e-5)  # position 0 is never rotated
    assert np.abs(a - b).max() > 1e-4


def test_new_style_rope_parameters_equal_legacy_fields(make_ckpt, tmp_path):
    d = str(tmp_path / "l")
    shutil.copytree(make_ckpt("llama", rope_scaling="llama3"), d)
    legacy = ref.load_model(d).logits(PROMPT20)
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["rope_parameters"] = dict(cfg.pop("rope_scaling"), rope_theta=cfg.pop("rope_theta"))
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    np.testing.assert_array_equal(ref.load_model(d).logits(PROMPT20), legacy)


def test_bf16_checkpoint_matches_rounded_f32(make_ckpt):
    f32 = st.load_model_dir(make_ckpt("qwen2"))
    bf16 = st.load_model_dir(make_ckpt("qwen2", dtype="bf16"))
    assert st.storage_dtypes(make_ckpt("qwen2", dtype="bf16"))["model.norm.weight"] == "BF16"
    for name, arr in f32.items():
        np.testing.assert_array_equal(bf16[name], st.bf16_bits_to_f32(st.f32_to_bf16_bits(arr)))
    logits = ref.load_model(make_ckpt("qwen2", dtype="bf16")).logits(PROMPT20)
    assert np.isfinite(logits).all()


# --- errors -----------------------------------------------------------------------------------------------


def _edit_config(src, dst, **changes):
    shutil.copytree(src, dst)
    cfg = json.load(open(os.path.join(dst, "config.json")))
    cfg.update(changes)
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"))
    return dst


def test_unsupported_rope_type_is_rejected(make_ckpt, tmp_path):
    d = _edit_config(make_ckpt("llama"), str(tmp_path / "x"), rope_scaling={"rope_type": "yarn", "factor": 4.0})
    with pytest.raises(ref.UnsupportedModel, match="yarn"):
        ref.load_model(d)


def test_unknown_model_type_is_rejected(make_ckpt, tmp_path):
    d = _edit_config(make_ckpt("llama"), str(tmp_path / "x"), model_type="falcon")
    with pytest.raises(ref.UnsupportedModel, match="'falcon' is not supported"):
        ref.load_model(d)


def test_bidirectional_gemma_is_rejected(make_ckpt, tmp_path):
    d = _edit_config(make_ckpt("gemma3"), str(tmp_path / "x"), use_bidirectional_attention=True)
    with pytest.raises(ref.UnsupportedModel, match="use_bidirectional_attention"):
        ref.load_model(d)


def test_qwen_sliding_layer_types_without_window_are_rejected(make_ckpt, tmp_path):
    d = _edit_config(make_ckpt("qwen2"), str(tmp_path / "x"), use_sliding_window=False)
    with pytest.raises(ref.UnsupportedModel, match="use_sliding_window"):
        ref.load_model(d)


def test_wrong_shape_and_missing_and_extra_tensors_are_rejected(make_ckpt, tmp_path):
    src = make_ckpt("llama")
    tensors = dict(st.load_model_dir(src))
    cases = {
        "shape": dict(tensors, **{"model.norm.weight": np.ones(63, np.float32)}),
        "missing": {k: v for k, v in tensors.items() if k != "model.layers.1.mlp.up_proj.weight"},
        "extra": dict(tensors, **{"model.layers.9.mlp.up_proj.weight": np.ones(3, np.float32)}),
    }
    expect = {"shape": "has shape \\[63\\], expected \\[64\\]", "missing": "up_proj.weight' is missing",
              "extra": "not used by the model"}
    for case, ts in cases.items():
        d = tmp_path / case
        shutil.copytree(src, d)
        st.write_file(str(d / "model.safetensors"), ts)
        with pytest.raises(ref.WeightError, match=expect[case]):
            ref.load_model(str(d))


def test_out_of_vocab_token_is_rejected(make_ckpt):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ref.load_model(make_ckpt("llama")).logits([1, 512])


def test_absent_keys_take_hf_config_class_defaults(make_ckpt, tmp_path):
    g2 = str(tmp_path / "g2")
    shutil.copytree(make_ckpt("gemma2"), g2)
    cfg = json.load(open(os.path.join(g2, "config.json")))
    for key in ("attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"):
        del cfg[key]
    json.dump(cfg, open(os.path.join(g2, "config.json"), "w"))
    model = ref.load_model(g2)
    assert (model.attn_softcap, model.final_softcap, model.scale) == (50.0, 30.0, 256 ** -0.5)
    q3 = str(tmp_path / "q3")
    shutil.copytree(make_ckpt("qwen3"), q3)
    cfg = json.load(open(os.path.join(q3, "config.json")))
    del cfg["head_dim"]  # Qwen3Config defaults head_dim to 128, not hidden / heads
    json.dump(cfg, open(os.path.join(q3, "config.json"), "w"))
    with pytest.raises(ref.WeightError, match=r"q_proj.weight' has shape \[64, 64\], expected \[512, 64\]"):
        ref.load_model(q3)
