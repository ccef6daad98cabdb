#!/usr/bin/python3
"""Trains hfstatic's default model: a small Llama on the King James Version, written as an HF checkpoint.

  scripts/train-default-model [--out models/kjv-llama] [--steps 500] [--seed 0] [--threads 2]

Stages (all on CPU, PyTorch from Debian): read the KJV from Debian's bible-kjv packages; learn a byte-level
BPE vocabulary of 2048 (tokenizer.json); train the model on windows of 256 tokens, each a BOS followed by
text from a verse start on, with AdamW and a cosine schedule; write config.json, generation_config.json,
tokenizer.json, tokenizer_config.json, model.safetensors (bf16), training-log.json and loss.png.
Three books are held out (Ruth, Jonah, Philemon) to report a validation loss.
Needs: apt-get install bible-kjv bible-kjv-text python3-torch python3-numpy python3-matplotlib.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))

import bpe  # noqa: E402
import corpus  # noqa: E402
import model as llama  # noqa: E402
import safetensors_np as st  # noqa: E402

BOS, EOS = "<s>", "</s>"
HELD_OUT = ("Ruth", "Jonah", "Phmn")
VOCAB = 2048
SEQ = 256
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": VOCAB,
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "hidden_act": "silu",
    "max_position_embeddings": SEQ,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": True,
    "initializer_range": 0.02,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "torch_dtype": "bfloat16",
}


def encode_books(books, enc):
    """One token stream per split: each book's verses, then EOS; and where each verse starts."""
    split = {"train": ([], []), "valid": ([], [])}
    for name, verses in books:
        stream, starts = split["valid" if name in HELD_OUT else "train"]
        for v in verses:
            starts.append(len(stream))
            stream.extend(enc.encode(v + "\n"))
        stream.append(enc.vocab[EOS])
    return {k: (np.asarray(s, dtype=np.int64), np.asarray(o, dtype=np.int64)) for k, (s, o) in split.items()}


def batch(stream, starts, picks, bos):
    """[len(picks), SEQ + 1] windows: BOS, then the stream from a verse start (EOS-padded at the end)."""
    rows = np.full((len(picks), SEQ + 1), bos, dtype=np.int64)
    for r, s in enumerate(starts[picks]):
        chunk = stream[s:s + SEQ]
        rows[r, 1:1 + len(chunk)] = chunk
        rows[r, 1 + len(chunk):] = stream[-1]
    return torch.from_numpy(rows)


def loss_of(m, rows):
    logits = m(rows[:, :-1])                                                         # [b, SEQ, vocab]
    return F.cross_entropy(logits.reshape(-1, VOCAB), rows[:, 1:].reshape(-1))


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def write_checkpoint(out, m, vocab, merges):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 0, "eos_token_id": 1}, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS,
                   "add_bos_token": True, "clean_up_tokenization_spaces": False, "model_max_length": SEQ},
                  f, indent=2)
        f.write("\n")
    bpe.write(os.path.join(out, "tokenizer.json"), vocab, merges, BOS, EOS)
    tensors = {k: v.float().numpy() for k, v in sorted(m.hf_state_dict().items())}
    st.write_file(os.path.join(out, "model.safetensors"), tensors, dtypes={k: "BF16" for k in tensors},
                  metadata={"format": "pt"})


def plot(out, log):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    steps = [e["step"] for e in log["train"]]
    loss = np.asarray([e["loss"] for e in log["train"]])
    smooth = np.convolve(loss, np.ones(20) / 20, mode="valid") if len(loss) >= 20 else loss
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(steps, loss, color="#c8d4e8", lw=0.8, label="train (per step)")
    ax.plot(steps[len(steps) - len(smooth):], smooth, color="#2a5db0", lw=1.5, label="train (20-step mean)")
    ax.plot([e["step"] for e in log["valid"]], [e["loss"] for e in log["valid"]], "o-", color="#d0602a",
            ms=3, label="held-out books")
    ax.set_xlabel("step (16 windows of 256 tokens)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title("kjv-llama: training loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "loss.png"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "models", "kjv-llama"))
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()

    books = corpus.read_books()
    train_texts = [corpus.book_text(v) for name, v in books if name not in HELD_OUT]
    vocab, merges = bpe.train(train_texts, VOCAB, [BOS, EOS])
    enc = bpe.Encoder(vocab, merges)
    data = encode_books(books, enc)
    (tr, tr_starts), (va, va_starts) = data["train"], data["valid"]
    print(f"corpus: {len(tr)} train tokens, {len(va)} held-out tokens, vocab {len(vocab)} "
          f"({time.time() - t0:.0f} s)", flush=True)
    valid_rows = batch(va, va_starts, rng.choice(len(va_starts), 32, replace=False), vocab[BOS])

    m = llama.LlamaForCausalLM(CONFIG)
    n_params = sum(p.numel() for p in m.parameters())
    decay = [p for p in m.parameters() if p.dim() == 2]
    no_decay = [p for p in m.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    log = {"config": CONFIG, "params": n_params, "args": vars(args), "train": [], "valid": []}
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, warmup=30)
        rows = batch(tr, tr_starts, rng.integers(0, len(tr_starts), args.batch), vocab[BOS])
        loss = loss_of(m, rows)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        log["train"].append({"step": step, "loss": round(loss.item(), 4)})
        if step % 50 == 0 or step == args.steps - 1:
            with torch.no_grad():
                v = loss_of(m, valid_rows).item()
            log["valid"].append({"step": step, "loss": round(v, 4)})
            print(f"step {step}: train {loss.item():.3f} held-out {v:.3f} ({time.time() - t0:.0f} s)", flush=True)
    log["seconds"] = round(time.time() - t0)
    write_checkpoint(args.out, m, vocab, merges)
    with open(os.path.join(args.out, "training-log.json"), "w") as f:
        json.dump(log, f, separators=(",", ":"))
        f.write("\n")
    plot(args.out, log)
    print(f"wrote {args.out}: {n_params} parameters, {log['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
