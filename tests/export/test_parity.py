"""Reference parity: exported programs run by the hfstatic runner vs the independent PyTorch reference.

For each architecture a tiny random checkpoint (scripts/make-checkpoint) is exported with a prefill
chunk that forces padding; a 40-token prompt + 20 greedy steps must give the reference's tokens and
logits within 1e-4 (f32). Sliding-window models run past 2x (and 3x) the window with C < W, C = W, C > W.
The real TinyStories Llama and the bundled default model (models/kjv-llama) must reproduce the reference
greedy continuation token for token.

The test_vulkan_* group runs the same checks on `--backend vulkan` (CTest: parity.vulkan, registered in
builds with the Vulkan backend); with a CLI built without it, select `-k "not vulkan"`.

Run: /usr/bin/python3 -m pytest tests/export/test_parity.py   (HFS_CLI=path/to/hfstatic)
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "reference"))
CLI = os.environ.get("HFS_CLI", str(ROOT / "build" / "hfstatic"))
sys.path.insert(0, str(ROOT / "tests"))
from fixtures import DEFAULT_MODEL, STORIES as SHARED_STORIES, require  # noqa: E402
PY = sys.executable  # the interpreter with torch that runs this suite (HFS_PYTHON)


def sh(*args, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"command failed ({r.returncode}): {' '.join(map(str, args))}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def make_checkpoint(tmp, arch, **opts):
    d = tmp / f"ckpt_{arch}"
    args = [PY, ROOT / "scripts" / "make-checkpoint", arch, d, "--preset", "tiny", "--seed", "1"]
    for k, v in opts.items():
        args += [f"--{k.replace('_', '-')}", v]
    sh(*args)
    return d


def export(tmp, model_dir, chunk, extra=()):
    out = tmp / f"{Path(model_dir).name}_c{chunk}.hfs"
    sh(CLI, "export", model_dir, "-o", out, "--prefill-chunk", chunk, *extra)
    return out


def run_hfstatic(tmp, program, prompt, n, tail="pad", backend=None):
    dump = tmp / f"logits_{tail}.f32"
    extra = ["--backend", backend] if backend else []
    out = sh(CLI, "run", "-m", program, "--tokens", ",".join(map(str, prompt)), "-n", n, "--temp", "0",
             "--ignore-eos", "--json", "--tail", tail, "--dump-logits", dump, *extra)
    tokens = json.loads(out)["tokens"]
    logits = np.fromfile(dump, dtype=np.float32).reshape(len(tokens), -1)
    return tokens, logits


def run_reference(tmp, model_dir, prompt, n):
    out = tmp / "ref.npz"
    sh(PY, ROOT / "tests" / "reference" / "reference.py", model_dir, "--tokens", ",".join(map(str, prompt)),
       "--greedy", n, "--out", out)
    z = np.load(out)
    return [int(t) for t in z["tokens"][len(prompt):]], z["logits"]


def check_parity(tmp, model_dir, chunk, prompt_len=40, n=20, tails=("pad", "decode"), extra=(), backend=None,
                 expect_on=None):
    rng = np.random.default_rng(chunk * 1000 + prompt_len)
    prompt = [int(t) for t in rng.integers(3, 500, size=prompt_len)]
    program = export(tmp, model_dir, chunk, extra)
    if expect_on:
        expect_on(program)
    elif backend:
        expect_whole_on(program, backend)
    ref_tokens, ref_logits = run_reference(tmp, model_dir, prompt, n)
    for tail in tails:
        tokens, logits = run_hfstatic(tmp, program, prompt, n, tail, backend)
        diff = float(np.abs(logits[:n] - ref_logits[:n]).max())
        assert diff <= 1e-4, f"tail={tail}: max |logits - reference| = {diff:.3g} > 1e-4"
        assert tokens == ref_tokens[:n], f"tail={tail}: tokens differ\n ours {tokens}\n ref  {ref_tokens[:n]}"


def expect_whole_on(program, backend):
    # A node the backend does not claim would run on cpu_ref and prove nothing about the backend.
    info = json.loads(sh(CLI, "inspect", program, "--backend", backend, "--json"))
    for m in info["methods"]:
        assert m["plan"]["partitions"] == [backend], f"method {m['name']}: partitions {m['plan']['partitions']}"


ARCHS = ["llama", "qwen2", "qwen3", "mistral", "gemma2", "gemma3", "phi3"]


@pytest.mark.parametrize("arch", ARCHS)
def test_arch_parity_with_padding(tmp_path, arch):
    # chunk 16 with a 40-token prompt: two full chunks and a padded tail of 8.
    check_parity(tmp_path, make_checkpoint(tmp_path, arch), chunk=16)


@pytest.mark.parametrize("chunk", [4, 8, 13])
@pytest.mark.parametrize("arch", ["mistral", "gemma2", "gemma3"])
def test_sliding_window_chunks_around_window(tmp_path, arch, chunk):
    # Window 8: chunk < W, = W, > W; 3x the window of prompt plus generation past it.
    model = make_checkpoint(tmp_path, arch, sliding_window=8)
    check_parity(tmp_path, model, chunk=chunk, prompt_len=26, n=12, tails=("pad",))


def test_f16_cache_and_weights_close_to_reference(tmp_path):
    model = make_checkpoint(tmp_path, "llama")
    rng = np.random.default_rng(5)
    prompt = [int(t) for t in rng.integers(3, 500, size=24)]
    program = export(tmp_path, model, 16, ["--cache-dtype", "f16", "--weights", "f16"])
    _, ref_logits = run_reference(tmp_path, model, prompt, 4)
    _, logits = run_hfstatic(tmp_path, program, prompt, 4)
    assert float(np.abs(logits[0] - ref_logits[0]).max()) < 5e-2


def test_stories260k_greedy_200_tokens_match_reference(tmp_path):
    require(SHARED_STORIES)
    program = export(tmp_path, SHARED_STORIES, 32)
    tokens, logits = run_hfstatic(tmp_path, program, [1], 200)
    expected_first = np.array([-6.22291, 8.40434, -6.22374, -6.22254, -6.22195], dtype=np.float32)
    assert np.abs(logits[0, :5] - expected_first).max() <= 1e-4
    ref_tokens, ref_logits = run_reference(tmp_path, SHARED_STORIES, [1], 200)
    assert tokens == ref_tokens[:200]
    assert float(np.abs(logits - ref_logits[:200]).max()) <= 1e-4


def test_default_model_greedy_200_tokens_match_reference(tmp_path):
    # The bundled checkpoint is an ordinary HF directory: the reference loads it as transformers would (bf16
    # weights, tied head, GQA) and hfstatic, fed the tokenizer's own ids for a prompt, continues it the same.
    prompt = json.loads(sh(CLI, "tokenize", "-m", DEFAULT_MODEL, "--json", "And God said"))["ids"]
    assert prompt[0] == 0 and len(prompt) > 3  # BOS, then the text
    program = export(tmp_path, DEFAULT_MODEL, 32)
    tokens, logits = run_hfstatic(tmp_path, program, prompt, 200)
    ref_tokens, ref_logits = run_reference(tmp_path, DEFAULT_MODEL, prompt, 200)
    assert tokens == ref_tokens[:200]
    assert float(np.abs(logits - ref_logits[:200]).max()) <= 1e-4


@pytest.mark.parametrize("weights,max_diff,same_tokens", [("int8", 0.3, 20), ("int4", 2.5, 5)])
def test_stories260k_quantized_weights_track_reference(tmp_path, weights, max_diff, same_tokens):
    # Quantization changes the numbers, not the model: the first logits stay close to the f32 reference
    # and greedy decoding agrees for the first tokens (int4 drifts sooner than int8).
    require(SHARED_STORIES)
    program = export(tmp_path, SHARED_STORIES, 32, ["--weights", weights])
    tokens, logits = run_hfstatic(tmp_path, program, [1], same_tokens)
    ref_tokens, ref_logits = run_reference(tmp_path, SHARED_STORIES, [1], same_tokens)
    assert float(np.abs(logits[0] - ref_logits[0]).max()) < max_diff
    assert tokens == ref_tokens[:same_tokens]


# Mixtures of experts (tiny presets: 12 experts of width 32, so experts 10 and 11 exist and a stack built in
# string order — experts.10 before experts.2 — would route to the wrong weights). Each case exports once and
# checks a 12-token prompt (a full chunk of 8 and a padded tail) plus 6 greedy steps: ~3 s each.
MOE_ARCHS = ["qwen3_moe", "qwen2_moe", "mixtral", "olmoe"]


def moe_checkpoint(tmp, arch, name=None, settings=()):
    d = tmp / (name or f"ckpt_{arch}")
    args = [PY, ROOT / "scripts" / "make-checkpoint", arch, d, "--preset", "tiny", "--seed", "1"]
    for kv in settings:
        args += ["--set", kv]
    sh(*args)
    return d


@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_moe_parity(tmp_path, arch):
    # qwen3_moe's preset mixes dense (layer 1, mlp_only_layers) and sparse layers; qwen2_moe's shared expert
    # and its sigmoid gate contribute to every sparse layer; mixtral renormalizes the top-2; olmoe's q/k norms
    # span the whole projection.
    check_parity(tmp_path, moe_checkpoint(tmp_path, arch), chunk=8, prompt_len=12, n=6, tails=("pad",))


def test_moe_sparse_step_layers(tmp_path):
    # decoder_sparse_step 2 without mlp_only_layers: only layer 1 is sparse (HF: (i + 1) % step == 0).
    model = moe_checkpoint(tmp_path, "qwen3_moe", "step2", ["decoder_sparse_step=2", "mlp_only_layers=[]"])
    check_parity(tmp_path, model, chunk=8, prompt_len=12, n=6, tails=("pad",))


@pytest.mark.parametrize("arch", ["qwen3_moe", "olmoe"])
def test_moe_norm_topk_prob_both_settings(tmp_path, arch):
    # Renormalization on and off give different models (the references differ), and each matches its export.
    refs = []
    for flag in ("false", "true"):
        model = moe_checkpoint(tmp_path, arch, f"{arch}_{flag}", [f"norm_topk_prob={flag}"])
        check_parity(tmp_path, model, chunk=8, prompt_len=12, n=6, tails=("pad",))
        refs.append(run_reference(tmp_path, model, [1, 5, 9], 0)[1])
    assert float(np.abs(refs[0] - refs[1]).max()) > 1e-2


@pytest.mark.parametrize("arch", ["qwen3_moe", "mixtral"])
def test_moe_inspect_counts_active_parameters(tmp_path, arch):
    # Computed from the checkpoint itself: every tensor's elements, less (E - k) / E of each sparse layer's
    # experts (qwen3_moe's dense layer 1 has none).
    import safetensors_np as st
    model = moe_checkpoint(tmp_path, arch)
    cfg = json.loads((model / "config.json").read_text())
    arrays = st.load_model_dir(str(model))
    total = sum(int(np.prod(a.shape)) for a in arrays.values())
    E = cfg.get("num_experts") or cfg["num_local_experts"]
    k = cfg["num_experts_per_tok"]
    sparse = [n for n in arrays if ".experts." in n]
    expert_elems = sum(int(np.prod(arrays[n].shape)) for n in sparse)
    active = total - expert_elems * (E - k) // E
    program = export(tmp_path, model, 8)
    info = json.loads(sh(CLI, "inspect", program, "--json"))["parameters"]
    assert info["total"] == total
    assert info["active_per_token"] == active
    layers = {int(n.split("layers.")[1].split(".")[0]) for n in sparse}
    assert [(m["experts"], m["top_k"]) for m in info["moe_layers"]] == [(E, k)] * len(layers)


def zero_router(src, dst, layer):
    """A copy of checkpoint `src` whose layer-`layer` router is all zeros: every expert ties."""
    import safetensors_np as st
    shutil.copytree(src, dst)
    arrays = st.load_model_dir(src)
    tensors = {n: np.array(a) for n, a in arrays.items()}
    tensors[f"model.layers.{layer}.mlp.gate.weight"][:] = 0
    st.write_file(str(dst / st.SINGLE_NAME), tensors)
    return dst


def test_moe_tied_router_logits_pick_lower_expert_indices(tmp_path):
    # Layer 0's router is zero, so its 12 probabilities tie and the top 3 are decided by the tie rule alone:
    # lower index first (experts 0, 1, 2). The reference's rule reversed (or torch.topk's own order) would
    # give a different model, so the parity below fails if the runtime broke ties any other way.
    import hf_reference as ref
    model = zero_router(moe_checkpoint(tmp_path, "qwen3_moe"), tmp_path / "tied", 0)
    check_parity(tmp_path, model, chunk=8, prompt_len=12, n=6, tails=("pad",))
    m = ref.load_model(str(model))
    ids = [1, 5, 9, 300]
    lower = m.logits(ids)
    saved = ref.moe_topk
    try:
        ref.moe_topk = lambda p, k: torch_topk_higher_first(p, k)
        higher = m.logits(ids)
    finally:
        ref.moe_topk = saved
    assert float(np.abs(lower - higher).max()) > 1e-2


def expect_ops_on(program, backend, ops):
    # Each of `ops` present in a method is placed on `backend` only (the rest may fall back elsewhere).
    info = json.loads(sh(CLI, "inspect", program, "--backend", backend, "--json"))
    for m in info["methods"]:
        placed = {op: {p["backend"] for p in m["plan"]["placement"] if op in p["ops"]} for op in ops}
        assert all(b <= {backend} for b in placed.values()), f"method {m['name']}: {placed}"
        assert any(placed.values()), f"method {m['name']}: none of {ops}"


@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_moe_on_cpu_fast(tmp_path, arch):
    # Every moe and sigmoid_gate node of every method on cpu_fast (its kernels, not cpu_ref's): the f32 program
    # against the PyTorch reference, then the int8 program's logits against cpu_ref running the same program
    # (both read the same int8 experts; cpu_fast also rounds the activations to int8). ~4 s each.
    model = moe_checkpoint(tmp_path, arch)
    check_parity(tmp_path, model, chunk=8, prompt_len=12, n=6, tails=("pad",), backend="cpu_fast",
                 expect_on=lambda p: expect_ops_on(p, "cpu_fast", {"moe", "sigmoid_gate"}))
    program = export(tmp_path, model, 8, ["--weights", "int8"])
    expect_ops_on(program, "cpu_fast", {"moe", "sigmoid_gate"})
    prompt = [1, 5, 9, 300, 17, 42, 77, 3, 250, 8]
    _, fast = run_hfstatic(tmp_path, program, prompt, 3, backend="cpu_fast")
    _, ref = run_hfstatic(tmp_path, program, prompt, 3, backend="cpu_ref")
    assert float(np.abs(fast[0] - ref[0]).max()) < 0.05 * float(np.abs(ref[0]).max())


def torch_topk_higher_first(probs, k):
    import torch
    flipped = torch.flip(probs, dims=[-1])
    order = torch.sort(flipped, dim=-1, descending=True, stable=True)
    return order.values[..., :k], probs.shape[-1] - 1 - order.indices[..., :k]


@pytest.mark.parametrize("weights,max_diff,same_tokens", [("int8", 0.15, 2), ("int4", 1.5, 0)])
@pytest.mark.parametrize("arch", ["qwen3_moe", "mixtral"])
def test_moe_int_weights_track_reference(tmp_path, arch, weights, max_diff, same_tokens):
    # Experts stored int8 (per-row scales [E, N]) or q4_0 stay close to the f32 reference; a mis-strided
    # expert or scale would put whole experts' outputs, not rounding, into the logits. (Random tiny models
    # have near-ties everywhere: int8 holds greedy for the first tokens, int4 checks the first logits only.)
    model = moe_checkpoint(tmp_path, arch)
    prompt = [1, 5, 9, 300, 17, 42, 77, 3, 250, 8]
    program = export(tmp_path, model, 8, ["--weights", weights])
    # Greedy tokens from cpu_ref (the weights' rounding only): cpu_fast also rounds the activations to int8,
    # which on these near-tied random models may flip the first greedy pick; its logits get the same bound.
    n = max(same_tokens, 1)
    ref_tokens, ref_logits = run_reference(tmp_path, model, prompt, n)
    for backend in ("cpu_ref", "cpu_fast"):
        tokens, logits = run_hfstatic(tmp_path, program, prompt, n, backend=backend)
        assert float(np.abs(logits[0] - ref_logits[0]).max()) < max_diff, backend
        if backend == "cpu_ref":
            assert tokens[:same_tokens] == ref_tokens[:same_tokens]


# The Vulkan backend (lavapipe on a CPU-only machine, one dispatch after another: few tokens, tiny
# presets) held to the same reference and tolerances as the CPU groups above, every method whole on
# Vulkan. CTest runs these as parity.vulkan with the Khronos validation layer on.
@pytest.mark.parametrize("arch", ARCHS)
def test_vulkan_arch_parity(tmp_path, arch):
    # chunk 16 with a 24-token prompt: a full chunk and a padded tail of 8, then decode steps (the prompt
    # tail fed token by token is the CPU group's: on Vulkan it runs the same decode method).
    check_parity(tmp_path, make_checkpoint(tmp_path, arch), chunk=16, prompt_len=24, n=6, tails=("pad",),
                 backend="vulkan")


def test_vulkan_llama3_rope_scaling(tmp_path):
    # The tiny preset's llama has no rope scaling; llama3's frequency bands (all three at head_dim 16)
    # reach the rope kernel through the exported frequencies.
    model = make_checkpoint(tmp_path, "llama", rope_scaling="llama3")
    check_parity(tmp_path, model, chunk=16, prompt_len=24, n=6, tails=("pad",), backend="vulkan")


@pytest.mark.parametrize("arch", ["mistral", "gemma3"])
def test_vulkan_sliding_window_past_the_window(tmp_path, arch):
    # Window 8, chunk 4 < W: the ring caches wrap twice over the prompt and the generation.
    model = make_checkpoint(tmp_path, arch, sliding_window=8)
    check_parity(tmp_path, model, chunk=4, prompt_len=18, n=6, tails=("pad",), backend="vulkan")


def test_vulkan_f16_cache_and_weights(tmp_path):
    model = make_checkpoint(tmp_path, "llama")
    rng = np.random.default_rng(5)
    prompt = [int(t) for t in rng.integers(3, 500, size=24)]
    program = export(tmp_path, model, 16, ["--cache-dtype", "f16", "--weights", "f16"])
    expect_whole_on(program, "vulkan")
    _, ref_logits = run_reference(tmp_path, model, prompt, 4)
    _, logits = run_hfstatic(tmp_path, program, prompt, 4, backend="vulkan")
    assert float(np.abs(logits[0] - ref_logits[0]).max()) < 5e-2


def run_whole_on_vulkan(tmp, program, prompt, n):
    # run_hfstatic on --backend vulkan, with every node on Vulkan: the backend names each op it leaves to
    # another backend on stderr ("vulkan: op '...' runs on the next backend"), so a clean stderr checks what
    # expect_whole_on checks, without an inspect process (a second or two each on lavapipe).
    dump = tmp / "logits_vulkan.f32"
    r = subprocess.run([CLI, "run", "-m", str(program), "--tokens", ",".join(map(str, prompt)), "-n", str(n),
                        "--temp", "0", "--ignore-eos", "--json", "--tail", "pad", "--dump-logits", str(dump),
                        "--backend", "vulkan"], capture_output=True, text=True)
    assert r.returncode == 0, f"run failed ({r.returncode}): {r.stderr}"
    assert "runs on the next backend" not in r.stderr, r.stderr
    tokens = json.loads(r.stdout)["tokens"]
    return tokens, np.fromfile(dump, dtype=np.float32).reshape(len(tokens), -1)


# Each architecture with each stored weight format, on Vulkan and on cpu_ref from the same program (f32 is
# test_vulkan_arch_parity, against PyTorch): the formats change the numbers for both alike, so the shaders'
# decoding is held to the reference kernels' (1e-4 absolute on every logit of a full chunk, a padded tail
# and decode steps; the same tokens) without PyTorch's slack. One checkpoint per architecture serves its
# three exports; about 3 s per format on lavapipe, most of it creating the Vulkan pipelines.
@pytest.mark.parametrize("arch", ARCHS)
def test_vulkan_stored_formats_match_cpu_ref(tmp_path, arch):
    model = make_checkpoint(tmp_path, arch)
    prompt = [int(t) for t in np.random.default_rng(7).integers(3, 500, size=24)]
    for weights in ("f16", "int8", "int4"):
        program = export(tmp_path, model, 16, ["--weights", weights])
        ref_tokens, ref_logits = run_hfstatic(tmp_path, program, prompt, 4, backend="cpu_ref")
        tokens, logits = run_whole_on_vulkan(tmp_path, program, prompt, 4)
        diff = float(np.abs(logits - ref_logits).max())
        assert diff <= 1e-4, f"{arch} {weights}: max |vulkan - cpu_ref| = {diff:.3g} > 1e-4"
        assert tokens == ref_tokens, f"{arch} {weights}"


@pytest.mark.parametrize("weights,max_diff,same_tokens", [("int8", 0.3, 20), ("int4", 2.5, 5)])
def test_vulkan_stories260k_int_weights(tmp_path, weights, max_diff, same_tokens):
    require(SHARED_STORIES)
    program = export(tmp_path, SHARED_STORIES, 32, ["--weights", weights])
    expect_whole_on(program, "vulkan")
    tokens, logits = run_hfstatic(tmp_path, program, [1], same_tokens, backend="vulkan")
    ref_tokens, ref_logits = run_reference(tmp_path, SHARED_STORIES, [1], same_tokens)
    assert float(np.abs(logits[0] - ref_logits[0]).max()) < max_diff
    assert tokens == ref_tokens[:same_tokens]
