"""scripts/make-checkpoint: config fields, tensor lists, real-size preset shapes, sharding and CLI errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import safetensors_np as st
from conftest import MAKE_CHECKPOINT, STORIES

ARCHS = ["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"]


@pytest.mark.parametrize("preset,arch,params", [
    # Parameter counts published for the real checkpoints (tied embeddings counted once).
    ("smollm2-135m", "llama", 134_515_008),
    ("qwen2.5-0.5b", "qwen2", 494_032_768),
    ("gemma-3-270m", "gemma3", 268_098_176),
])
def test_real_presets_have_the_real_models_parameter_counts(mc, preset, arch, params):
    cfg = mc.build_config(arch, preset, "bf16")
    assert mc.param_count(mc.tensor_specs(cfg)) == params
    assert cfg["torch_dtype"] == "bfloat16" and cfg["tie_word_embeddings"] is True


def test_gemma3_270m_config_fields(mc):
    cfg = mc.build_config("gemma3", "gemma-3-270m")
    assert cfg["model_type"] == "gemma3_text" and cfg["architectures"] == ["Gemma3ForCausalLM"]
    assert [i for i, t in enumerate(cfg["layer_types"]) if t == "full_attention"] == [5, 11, 17]
    assert (cfg["sliding_window"], cfg["head_dim"], cfg["query_pre_attn_scalar"]) == (512, 256, 256)
    assert (cfg["rope_theta"], cfg["rope_local_base_freq"]) == (1_000_000.0, 10_000.0)


@pytest.mark.parametrize("arch", ARCHS)
def test_tiny_config_shapes(mc, arch):
    cfg = mc.build_config(arch)
    assert (cfg["vocab_size"], cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
            cfg["intermediate_size"]) == (512, 64, 4, 2, 128)
    assert 2 <= cfg["num_hidden_layers"] <= 4
    assert cfg.get("head_dim", 16) == 16
    if arch in ("mistral", "qwen2", "phi3", "gemma2", "gemma3"):
        assert cfg["sliding_window"] == 8
    if arch in ("qwen2", "qwen3", "gemma2", "gemma3"):
        assert len(cfg["layer_types"]) == cfg["num_hidden_layers"]


def test_qwen2_tiny_has_bias_and_sliding_upper_layers(mc):
    cfg = mc.build_config("qwen2")
    names = [n for n, _, _ in mc.tensor_specs(cfg)]
    assert "model.layers.0.self_attn.q_proj.bias" in names and "model.layers.0.self_attn.o_proj.bias" not in names
    assert cfg["layer_types"] == ["full_attention", "sliding_attention", "sliding_attention"]


def test_sliding_window_override(mc):
    assert mc.build_config("qwen3", sliding_window=6)["layer_types"] == ["full_attention", "sliding_attention"]
    off = mc.build_config("qwen2", sliding_window=0)
    assert off["use_sliding_window"] is False and set(off["layer_types"]) == {"full_attention"}
    assert mc.build_config("mistral", sliding_window=0)["sliding_window"] is None
    with pytest.raises(mc.UsageError, match="llama has no sliding"):
        mc.build_config("llama", sliding_window=8)
    with pytest.raises(mc.UsageError, match="must be positive"):
        mc.build_config("gemma2", sliding_window=0)


def test_values_do_not_depend_on_sharding_or_dtype(make_ckpt):
    single = st.load_model_dir(make_ckpt("gemma2"))
    sharded = st.load_model_dir(make_ckpt("gemma2", shards=4))
    assert single.keys() == sharded.keys()
    for name in single:
        np.testing.assert_array_equal(single[name], sharded[name])
    f16 = st.load_model_dir(make_ckpt("gemma2", dtype="f16"))
    np.testing.assert_array_equal(f16["model.norm.weight"], single["model.norm.weight"].astype(np.float16))


def test_index_lists_every_tensor_once(make_ckpt):
    d = make_ckpt("gemma2", shards=4)
    index = json.load(open(os.path.join(d, st.INDEX_NAME)))
    files = sorted(set(index["weight_map"].values()))
    assert files == [f"model-0000{k}-of-00004.safetensors" for k in range(1, 5)]
    sizes = sum(os.path.getsize(os.path.join(d, f)) for f in files)
    assert index["metadata"]["total_size"] < sizes  # data bytes only, headers excluded


def test_shard_plan_never_leaves_a_shard_empty(mc):
    specs = [("big", (1000, 10), "weight")] + [(f"s{i}", (2,), "norm") for i in range(3)]
    groups = mc.shard_plan(specs, "F32", 4)
    assert [len(g) for g in groups] == [1, 1, 1, 1]
    with pytest.raises(mc.UsageError, match="exceeds the number of tensors"):
        mc.shard_plan(specs, "F32", 5)


def test_norm_weights_centre_on_one_except_gemma(make_ckpt):
    llama = st.load_model_dir(make_ckpt("llama"))["model.norm.weight"]
    gemma = st.load_model_dir(make_ckpt("gemma3"))["model.norm.weight"]
    assert abs(llama.mean() - 1) < 0.05 and abs(gemma.mean()) < 0.05


def test_tokenizer_and_generation_config_are_written(make_ckpt):
    d = make_ckpt("qwen3")
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "config.json"):
        assert os.path.exists(os.path.join(d, f)), f
    gen = json.load(open(os.path.join(d, "generation_config.json")))
    assert (gen["bos_token_id"], gen["eos_token_id"]) == (1, 2)


def test_cli_writes_checkpoint_and_reports_errors(tmp_path):
    out = tmp_path / "m"
    # The tokenizer named explicitly (make-checkpoint's default): without stories260K this test is skipped.
    res = subprocess.run([MAKE_CHECKPOINT, "phi3", str(out), "--dtype", "bf16", "--shards", "2", "--no-tie",
                          "--tokenizer-from", STORIES],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "phi3 tiny" in res.stdout
    assert json.load(open(out / "config.json"))["torch_dtype"] == "bfloat16"
    assert (out / st.INDEX_NAME).exists()
    res = subprocess.run([MAKE_CHECKPOINT, "qwen2", str(tmp_path / "x"), "--preset", "gemma-3-270m"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "is a gemma3 model, not qwen2" in res.stderr
    res = subprocess.run([sys.executable, MAKE_CHECKPOINT, "gpt2", str(tmp_path / "y")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "invalid choice" in res.stderr


def test_rerun_with_fewer_shards_removes_stale_files(mc, tmp_path):
    out = str(tmp_path)
    mc.make_checkpoint("llama", out, shards=2, tokenizer_from=STORIES)
    mc.make_checkpoint("llama", out, shards=1, tokenizer_from=STORIES)
    assert sorted(f for f in os.listdir(out) if "safetensors" in f) == ["model.safetensors"]
