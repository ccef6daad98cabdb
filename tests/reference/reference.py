#!/usr/bin/python3
"""Reference logits for a HF model dir, from the independent PyTorch implementation in hf_reference.py.

  /usr/bin/python3 tests/reference/reference.py MODEL_DIR --tokens 1,2,3 [--greedy N] --out FILE.npz
                                                [--print-first K]

FILE.npz holds
  tokens         int64 [len(prompt) + N]     the prompt followed by the N greedily generated tokens
  logits         float32 [N + 1, vocab]      row 0: logits after the prompt's last token (they pick token 1);
                                             row k: logits after the k-th generated token
  prompt_logits  float32 [len(prompt), vocab] row t: logits after prompt token t (what a prefill returns)
Every step recomputes the whole sequence from position 0 (no KV cache), in float32.
--print-first K prints the first K values of each logits row (and the decoded text if tokenizer.json exists).
Exit status 2 with a one-line message for unsupported models or bad arguments.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hf_reference as ref  # noqa: E402
import safetensors_np as st  # noqa: E402


def parse_tokens(text):
    try:
        tokens = [int(t) for t in text.split(",") if t.strip() != ""]
    except ValueError:
        raise SystemExit(f"error: --tokens must be comma-separated integers, got {text!r}")
    if not tokens:
        raise SystemExit("error: --tokens is empty")
    return tokens


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", required=True, help="prompt token ids, comma separated")
    ap.add_argument("--greedy", type=int, default=0, metavar="N", help="generate N tokens greedily")
    ap.add_argument("--out", help="write tokens/logits/prompt_logits to this .npz")
    ap.add_argument("--print-first", type=int, default=0, metavar="K", help="print the first K logits per row")
    args = ap.parse_args(argv)
    if args.greedy < 0:
        ap.error("--greedy must be >= 0")
    prompt = parse_tokens(args.tokens)
    try:
        model = ref.load_model(args.model_dir)
        prompt_logits = model.logits(prompt)
        tokens, logits = ref.greedy(model, prompt, args.greedy)
    except (ref.UnsupportedModel, ref.WeightError, st.SafetensorsError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.out:
        np.savez(args.out, tokens=np.asarray(tokens, dtype=np.int64), logits=logits,
                 prompt_logits=prompt_logits.astype(np.float32))
    if args.print_first:
        k = args.print_first
        for row, values in enumerate(logits):
            print(f"logits[{row}][:{k}] = " + ", ".join(f"{v:.5f}" for v in values[:k]))
        print("tokens = " + ",".join(str(t) for t in tokens))
        vocab = ref.load_vocab(args.model_dir)
        if vocab is not None:
            print("text = " + repr(ref.decode(vocab, tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
