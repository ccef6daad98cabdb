#!/usr/bin/python3
"""Checks that a GGUF written by to_gguf.py holds the same model: llama.cpp's logits (through the driver) for a
few tokens against the PyTorch reference (tests/reference/hf_reference.py) on the safetensors checkpoint.

  /usr/bin/python3 bench/llamacpp/check_gguf.py MODEL_DIR F32.gguf --driver build/bench-llamacpp/driver
      [--tokens 1,5,100,2000,7,42] [--tol 1e-3]

Prints one JSON line {max_abs_diff, max_abs_logit, argmax_agree, ok}; exit status 1 when max |diff| > tol.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))


def check(model_dir, gguf_path, driver, tokens, tol):
    import hf_reference  # noqa: E402  (torch import is slow; only when checking)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.f32")
        subprocess.run([driver, "logits", gguf_path, "--tokens", ",".join(map(str, tokens)), "--out", out,
                        "--threads", "2"], check=True, stdout=subprocess.DEVNULL)
        got = np.fromfile(out, dtype=np.float32).reshape(len(tokens), -1)
    ref = hf_reference.load_model(model_dir).logits(tokens)
    if got.shape != ref.shape:
        raise SystemExit(f"check_gguf: logits shape llama.cpp {got.shape} vs reference {ref.shape}")
    diff = float(np.abs(got - ref).max())
    res = {"model": model_dir, "gguf": gguf_path, "tokens": tokens, "max_abs_diff": diff,
           "max_abs_logit": float(np.abs(ref).max()),
           "argmax_agree": bool((got.argmax(-1) == ref.argmax(-1)).all()), "tol": tol, "ok": diff <= tol}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("gguf")
    ap.add_argument("--driver", required=True)
    ap.add_argument("--tokens", default="1,5,100,2000,7,42")
    ap.add_argument("--tol", type=float, default=1e-3)
    a = ap.parse_args()
    res = check(a.model_dir, a.gguf, a.driver, [int(t) for t in a.tokens.split(",")], a.tol)
    print(json.dumps(res))
    sys.exit(0 if res["ok"] else 1)


if __name__ == "__main__":
    main()
