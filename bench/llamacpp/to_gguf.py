#!/usr/bin/python3
"""Writes a HF llama/qwen2 safetensors checkpoint as a GGUF file (F32, F16 or BF16) for llama.cpp.

  /usr/bin/python3 bench/llamacpp/to_gguf.py MODEL_DIR OUT.gguf --gguf-py DIR [--outtype f32|f16|bf16]

Written for bench/compare (random-weight checkpoints from scripts/make-checkpoint, no real tokenizer): the
vocabulary is declared as `tokenizer.ggml.model = "none"` with `<arch>.vocab_size`, so llama.cpp creates
dummy tokens and the benchmark feeds token ids directly. Uses llama.cpp's own gguf-py (GGUFWriter and the
tensor-name constants) from the git bundle shipped in node-llama-cpp; only the public GGUF conventions are
relied on:
- tensor names: token_embd, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,ffn_up,
  ffn_down}, output_norm, output (omitted when the embedding is tied; llama.cpp then reuses token_embd);
- llama uses llama.cpp's interleaved ("normal") RoPE, so q/k rows are permuted from HF's rotate_half layout
  (within each head, row pairs (i, i + D/2) become adjacent); qwen2 uses NeoX RoPE, which is HF's layout;
- F16 / BF16 output stores matrices in f16 / bf16 (gguf-py's own round-to-nearest-even) and keeps 1-D tensors
  (norms, biases) in f32, as llama.cpp expects.
The result is checked against the PyTorch reference by bench/llamacpp/check_gguf.py.

--bpe-pre NAME instead writes the checkpoint's own byte-level BPE tokenizer.json (GPT-2 style: vocab, merges,
added tokens; ids past it up to vocab_size become unused pad tokens) with llama.cpp's pre-tokenizer NAME
("qwen2", "gpt-2", ...), so that llama.cpp can turn ids into text: what its grammar sampler needs
(bench/grammar).
"""

import argparse
import json
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))

import safetensors_np as st  # noqa: E402

SUPPORTED = ("llama", "qwen2")


def rope_permute(w, n_heads):
    """HF rotate_half row order -> llama.cpp interleaved order, per head: [h, 2, D/2, ...] -> [h, D/2, 2, ...]."""
    rows = w.shape[0]
    return w.reshape(n_heads, 2, rows // n_heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_bpe_vocab(w, model_dir, vocab, pre, gguf):
    """The checkpoint's byte-level BPE tokenizer as llama.cpp's "gpt2" tokenizer model."""
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    model = tj["model"]
    if model.get("type") != "BPE":
        raise SystemExit(f"to_gguf: {model_dir}/tokenizer.json is not a BPE tokenizer")
    tokens = [f"[PAD{i}]" for i in range(vocab)]
    types = [gguf.TokenType.UNUSED] * vocab
    for text, i in model["vocab"].items():
        if i < vocab:
            tokens[i], types[i] = text, gguf.TokenType.NORMAL
    for t in tj.get("added_tokens", []):
        if t["id"] < vocab:
            tokens[t["id"]] = t["content"]
            types[t["id"]] = gguf.TokenType.CONTROL if t.get("special") else gguf.TokenType.USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    with open(os.path.join(model_dir, "generation_config.json")) as f:
        gen = json.load(f)
    eos = gen.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) else eos
    if gen.get("bos_token_id") is not None:
        w.add_bos_token_id(gen["bos_token_id"])
    if eos is not None:
        w.add_eos_token_id(eos)
    w.add_add_bos_token(False)


def convert(model_dir, out_path, outtype, gguf, bpe_pre=None):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    arch = cfg.get("model_type")
    if arch not in SUPPORTED:
        raise SystemExit(f"to_gguf: {model_dir}/config.json model_type {arch!r} is not supported {SUPPORTED}")
    if arch == "qwen2" and cfg.get("use_sliding_window"):
        raise SystemExit(f"to_gguf: {model_dir}: qwen2 with use_sliding_window=true is not supported")
    if cfg.get("rope_scaling"):
        raise SystemExit(f"to_gguf: {model_dir}: rope_scaling {cfg['rope_scaling']!r} is not supported (null only)")
    H = cfg["hidden_size"]
    n_layers = cfg["num_hidden_layers"]
    n_heads = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads", n_heads)
    head_dim = cfg.get("head_dim", H // n_heads)
    vocab = cfg["vocab_size"]
    tie = cfg.get("tie_word_embeddings", arch == "qwen2")
    if arch == "llama" and (cfg.get("attention_bias") or cfg.get("mlp_bias")):
        raise SystemExit(f"to_gguf: {model_dir}: llama attention_bias/mlp_bias are not supported")

    arrays = st.load_model_dir(model_dir)
    tmp = out_path + ".part"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(os.path.basename(os.path.normpath(model_dir)))
    w.add_context_length(cfg.get("max_position_embeddings", 4096))
    w.add_embedding_length(H)
    w.add_block_count(n_layers)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_heads)
    w.add_head_count_kv(n_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(float(cfg.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-6)))
    w.add_vocab_size(vocab)
    if bpe_pre:
        write_bpe_vocab(w, model_dir, vocab, bpe_pre, gguf)
    else:
        w.add_tokenizer_model("none")
    w.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "bf16": gguf.LlamaFileType.MOSTLY_BF16}[outtype])

    def put(name, a):
        a = np.ascontiguousarray(a, dtype=np.float32)
        if outtype == "f16" and a.ndim == 2:
            a = a.astype(np.float16)
        if outtype == "bf16" and a.ndim == 2:
            w.add_tensor(name, gguf.quants.quantize(a, gguf.GGMLQuantizationType.BF16),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
            return
        w.add_tensor(name, a)

    used = set()

    def take(name):
        if name not in arrays:
            raise SystemExit(f"to_gguf: {model_dir}: tensor {name} is missing")
        used.add(name)
        return arrays[name]

    put("token_embd.weight", take("model.embed_tokens.weight"))
    for i in range(n_layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        q = take(p + "self_attn.q_proj.weight")
        k = take(p + "self_attn.k_proj.weight")
        if arch == "llama":
            q, k = rope_permute(q, n_heads), rope_permute(k, n_kv)
        put(b + "attn_norm.weight", take(p + "input_layernorm.weight"))
        put(b + "attn_q.weight", q)
        put(b + "attn_k.weight", k)
        put(b + "attn_v.weight", take(p + "self_attn.v_proj.weight"))
        if arch == "qwen2":
            put(b + "attn_q.bias", take(p + "self_attn.q_proj.bias"))
            put(b + "attn_k.bias", take(p + "self_attn.k_proj.bias"))
            put(b + "attn_v.bias", take(p + "self_attn.v_proj.bias"))
        put(b + "attn_output.weight", take(p + "self_attn.o_proj.weight"))
        put(b + "ffn_norm.weight", take(p + "post_attention_layernorm.weight"))
        put(b + "ffn_gate.weight", take(p + "mlp.gate_proj.weight"))
        put(b + "ffn_up.weight", take(p + "mlp.up_proj.weight"))
        put(b + "ffn_down.weight", take(p + "mlp.down_proj.weight"))
    put("output_norm.weight", take("model.norm.weight"))
    if not tie:
        put("output.weight", take("lm_head.weight"))
    elif "lm_head.weight" in arrays:
        used.add("lm_head.weight")  # HF ignores a stored lm_head when tied
    extra = sorted(set(arrays) - used)
    if extra:
        raise SystemExit(f"to_gguf: {model_dir}: unexpected tensors {extra[:5]}")

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    ap.add_argument("--outtype", choices=("f32", "f16", "bf16"), default="f32")
    ap.add_argument("--bpe-pre", default=None, metavar="NAME",
                    help="write the checkpoint's byte-level BPE tokenizer with this llama.cpp pre-tokenizer")
    a = ap.parse_args()
    sys.path.insert(0, a.gguf_py)
    import gguf  # noqa: E402

    convert(a.model_dir, a.out, a.outtype, gguf, a.bpe_pre)


if __name__ == "__main__":
    main()
