"""`hfstatic perplexity` against the independent PyTorch reference (tests/reference/hf_reference.py): the
perplexity of stories260K on a short story, window by window as the command documents (BOS + up to
chunk − 1 text tokens, non-overlapping, each from an empty cache); --base KL and top-1 against numpy on
the same logits. About 3 s of CPU: stories260K exported three times (context 64), ~110 tokens, 4 windows."""
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, cli

sys.path.insert(0, str(ROOT / "tests" / "reference"))

TEXT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, "
        "she saw a big red ball under a tree. She ran to the ball and picked it up. Lily was very happy. Then a "
        "little boy came and said, \"That is my ball!\" Lily gave the ball to the boy and they played together.\n")
CHUNK = 40


@pytest.fixture(scope="module")
def programs(stories_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("ppl")
    out = {}
    for name, extra in [("all", ["--logits", "all"]), ("last", []), ("int8", ["--logits", "all", "--weights", "int8"])]:
        out[name] = d / f"{name}.hfs"
        cli("export", stories_dir, "-o", out[name], "--prefill-chunk", "16", "--context", "64", *extra, check=True)
    (d / "text.txt").write_text(TEXT)
    out["text"] = d / "text.txt"
    out["dir"] = d
    return out


def _ppl(programs, model, *extra):
    r = cli("perplexity", "-m", programs[model], "-f", programs["text"], "--chunk", CHUNK, "--json", *extra, check=True)
    return json.loads(r.stdout), r.stderr


def _log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _windows(ids):
    bos, body = ids[0], ids[1:]
    return [[bos] + body[i:i + CHUNK - 1] for i in range(0, len(body), CHUNK - 1)]


def test_perplexity_matches_the_pytorch_reference(programs, stories_dir):
    import hf_reference as ref
    ids = json.loads(cli("tokenize", "-m", programs["all"], "-f", programs["text"], "--json", check=True).stdout)["ids"]
    model = ref.load_model(str(stories_dir))
    assert ids[0] == 1  # the tokenizer adds BOS: every window starts with it
    nll = []
    for w in _windows(ids):
        lp = _log_softmax(model.logits(w))  # [len(w), vocab]: row t predicts w[t + 1]
        nll += [-lp[t, w[t + 1]] for t in range(len(w) - 1)]
    expect = float(np.exp(np.mean(nll)))
    for model_name in ["all", "last"]:  # rows from prefill (logits all) and token by token through decode
        got, err = _ppl(programs, model_name)
        assert got["tokens"] == len(ids) - 1 and got["windows"] == len(_windows(ids))
        assert got["perplexity"] == pytest.approx(expect, rel=1e-4), (model_name, got, expect)
        assert ("token by token" in err) == (model_name == "last")


def test_kl_against_itself_is_zero_and_top1_agrees_everywhere(programs):
    got, _ = _ppl(programs, "all", "--base", programs["last"])
    assert got["kl_mean"] == pytest.approx(0, abs=1e-9) and got["kl_max"] == pytest.approx(0, abs=1e-9)
    assert got["top1_agreement"] == 1.0
    assert got["base"]["perplexity"] == pytest.approx(got["perplexity"], rel=1e-9)


def test_kl_of_int8_weights_against_f32_matches_numpy_on_the_same_logits(programs):
    d = programs["dir"]
    got, _ = _ppl(programs, "int8", "--base", programs["all"], "--dump-logits", d / "q.f32")
    _ppl(programs, "all", "--dump-logits", d / "p.f32")
    p = np.fromfile(d / "p.f32", dtype=np.float32).reshape(got["tokens"], -1)
    q = np.fromfile(d / "q.f32", dtype=np.float32).reshape(got["tokens"], -1)
    lp, lq = _log_softmax(p), _log_softmax(q)
    kl = (np.exp(lp) * (lp - lq)).sum(axis=-1)  # KL(base || program) per position
    assert got["kl_mean"] > 0
    assert got["kl_mean"] == pytest.approx(kl.mean(), rel=1e-6)
    assert got["kl_max"] == pytest.approx(kl.max(), rel=1e-6)
    assert got["top1_agreement"] == pytest.approx(np.mean(p.argmax(-1) == q.argmax(-1)))


def test_bad_windows_are_refused(programs):
    r = cli("perplexity", "-m", programs["all"], "-f", programs["text"], "--chunk", 65, check=False)
    assert "--chunk 65 is more than the context of 64" in r.stderr
    (programs["dir"] / "one.txt").write_text("")
    r = cli("perplexity", "-m", programs["all"], "-f", programs["dir"] / "one.txt", check=False)
    assert "at least 1 are needed" in r.stderr


def test_int8_caches_keep_the_default_models_predictions_on_its_kjv_text(tmp_path):
    """The quantized-cache bar on the bundled default model: int8 K/V caches against f32 caches over John 1-3
    (read from Debian's bible-kjv, ~3.4k tokens in 14 windows), mean KL(f32 || int8) ≤ 1e-3 and the same top-1
    token at ≥ 99 % of positions. About 1 s of CPU."""
    if shutil.which("bible") is None:
        pytest.fail("the `bible` program is missing: scripts/install-deps installs bible-kjv + bible-kjv-text")
    verses = subprocess.run(["bible", "-f", "John1:1-John3:36"], check=True, capture_output=True, text=True,
                            env={"COLUMNS": "100000", "PATH": "/usr/bin:/bin"}).stdout.splitlines()
    text = tmp_path / "john.txt"
    text.write_text("\n".join(re.sub(r"^[1-3]?[A-Za-z]+\d+:\d+ ", "", v) for v in verses) + "\n")
    for c in ("f32", "int8"):
        cli("export", ROOT / "models" / "kjv-llama", "-o", tmp_path / f"{c}.hfs", "--cache-dtype", c,
            "--logits", "all", check=True)
    r = cli("perplexity", "-m", tmp_path / "int8.hfs", "--base", tmp_path / "f32.hfs", "-f", text, "--json", check=True)
    got = json.loads(r.stdout)
    assert got["tokens"] > 3000
    assert 0 < got["kl_mean"] <= 1e-3
    assert got["top1_agreement"] >= 0.99
    assert got["perplexity"] == pytest.approx(got["base"]["perplexity"], rel=1e-2)
