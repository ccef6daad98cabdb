#!/usr/bin/python3
"""PyTorch eager f32 baseline for bench/compare: prefill + KV-cached greedy decode on the reference model.

  /usr/bin/python3 bench/torch_eager.py MODEL_DIR [--prompt 512] [--gen 128] [--threads 2]   -> one JSON line
  /usr/bin/python3 bench/torch_eager.py MODEL_DIR --check                                  -> cached == full?

tests/reference/hf_reference.py recomputes the whole sequence for every token (no cache), which would make an
"eager decode" number meaningless. This file adds the cache, nothing else: it reuses the reference model's
loaded weights and its building blocks (norm, qkv projections, apply_rope, attention, MLP) and keeps per-layer
K/V tensors that grow by torch.cat each step, as a plain eager implementation would. Only architectures without
sliding windows, softcaps or Gemma norms (llama, qwen2, qwen3, mistral without window) are accepted.
`--check` compares the cached decode's logits with the reference's full recompute.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))

# Debian's torch calls the pthread OpenBLAS, which starts one thread per CPU unless told; pin it (and OpenMP)
# to --threads before torch loads it, or the baseline oversubscribes the cores.
_threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "2"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, _threads)

import torch  # noqa: E402

import hf_reference as ref  # noqa: E402


class CachedLM:
    def __init__(self, model):
        if model.gemma_norms or model.attn_softcap is not None or model.final_softcap is not None:
            raise SystemExit(f"torch_eager: {model.model_type}: gemma norms / softcaps are not supported here")
        if any(t != ref.FULL for t in model.layer_types):
            raise SystemExit(f"torch_eager: {model.model_type}: sliding-window layers are not supported here")
        # The reference's tensors are views of the safetensors bytes (numpy memmap / unaligned file offsets),
        # which makes some GEMVs ~5x slower; a PyTorch user's load_state_dict gives fresh, aligned tensors.
        tied = model.lm_head is model.embed
        model.embed = model.embed.clone()
        model.lm_head = model.embed if tied else model.lm_head.clone()
        model.final_norm = model.final_norm.clone()
        model.layers = [{k: v.clone() for k, v in L.items()} for L in model.layers]
        self.m = model
        self.k = [None] * model.n_layers  # per layer [Hkv, t, D]
        self.v = [None] * model.n_layers
        self.pos = 0
        self.cos = self.sin = None

    def reserve(self, n_positions):
        (inv_freq,) = self.m.inv_freq.values()
        self.cos, self.sin = ref.rope_cos_sin(inv_freq, n_positions)

    def step(self, ids):
        """ids: list of T new tokens at positions pos..pos+T-1 -> logits [T, vocab] (float32)."""
        m = self.m
        T = len(ids)
        p0 = self.pos
        x = m.embed[torch.as_tensor(ids, dtype=torch.long)]
        cos, sin = self.cos[p0:p0 + T], self.sin[p0:p0 + T]
        # new queries see every cached key plus the causal part of the new block
        mask = torch.cat([torch.zeros(T, p0), ref.causal_mask(T)], dim=1)
        for i, L in enumerate(m.layers):
            h = m.norm(x, L["input_norm"])
            q, k, v = m.qkv(L, h)
            q = q.view(T, m.n_heads, m.head_dim).transpose(0, 1)
            k = k.view(T, m.n_kv, m.head_dim).transpose(0, 1)
            v = v.view(T, m.n_kv, m.head_dim).transpose(0, 1)
            if m.qk_norm:
                q = m.norm(q, L["q_norm"])
                k = m.norm(k, L["k_norm"])
            q = ref.apply_rope(q, cos, sin)
            k = ref.apply_rope(k, cos, sin)
            self.k[i] = k if self.k[i] is None else torch.cat([self.k[i], k], dim=1)
            self.v[i] = v if self.v[i] is None else torch.cat([self.v[i], v], dim=1)
            a = ref.attention(q, self.k[i], self.v[i], m.scale, mask)
            x = x + ref.linear(a, L["wo"], L.get("bo"))
            x = x + m.mlp_block(L, m.norm(x, L["post_attn_norm"]))
        self.pos += T
        return ref.linear(m.norm(x, m.final_norm), m.lm_head)


def bench(model_dir, prompt_n, gen_n, threads):
    torch.set_num_threads(threads)
    model = ref.load_model(model_dir)
    rng = np.random.RandomState(1)
    prompt = [int(t) for t in rng.randint(0, model.vocab, size=prompt_n)]
    lm = CachedLM(model)
    lm.reserve(prompt_n + gen_n)
    with torch.inference_mode():
        t0 = time.perf_counter()
        nxt = int(lm.step(prompt)[-1].argmax())
        t1 = time.perf_counter()
        for _ in range(gen_n - 1):  # same count as hfstatic/llama.cpp: the last generated token is not fed
            nxt = int(lm.step([nxt])[-1].argmax())
        t2 = time.perf_counter()
    return {"prefill_tok_s": prompt_n / (t1 - t0), "decode_tok_s": (gen_n - 1) / (t2 - t1) if gen_n > 1 else 0.0,
            "ttft_ms": (t1 - t0) * 1e3, "threads": threads, "torch": torch.__version__,
            "method": "eager f32, KV-cached (bench/torch_eager.py over hf_reference modules)"}


def check(model_dir, n_prompt=5, n_gen=4):
    model = ref.load_model(model_dir)
    ids = [1 + (7 * i) % (model.vocab - 1) for i in range(n_prompt)]
    lm = CachedLM(model)
    lm.reserve(n_prompt + n_gen)
    with torch.inference_mode():
        rows = [lm.step(ids)[-1]]
        for _ in range(n_gen):
            ids.append(int(rows[-1].argmax()))
            rows.append(lm.step([ids[-1]])[-1])
        full = model.forward(ids)[n_prompt - 1:]
    diff = float((torch.stack(rows) - full).abs().max())
    return {"model": model_dir, "max_abs_diff_cached_vs_full": diff, "ok": diff < 1e-4}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        res = check(a.model_dir)
        print(json.dumps(res))
        sys.exit(0 if res["ok"] else 1)
    print(json.dumps(bench(a.model_dir, a.prompt, a.gen, a.threads)))


if __name__ == "__main__":
    main()
