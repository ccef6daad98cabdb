"""hfstatic.Engine: several sequences sharing one program, on every supported architecture (MoE included).

Each architecture's tiny random checkpoint (scripts/make-checkpoint) is exported twice: for 3 sequences with
step methods (contract version 2) and for one (version 1). Sequences of different prompt lengths arrive at
different steps, share steps, run past 3x the sliding window where the architecture has one, and each one's
logits must equal the same tokens fed one at a time through a Runner on the version-1 program (<= 1e-5);
that runner is checked against the PyTorch reference in tests/export/test_parity.py. On the same program they
are bit for bit what the sequence gets alone, fed one token per step (docs/determinism.md).
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hfstatic

ROOT = Path(__file__).resolve().parents[2]
# The mixtures of experts too: sequences sharing a step are routed to different experts within it.
ARCHS = ["llama", "qwen2", "qwen3", "mistral", "gemma2", "gemma3", "phi3", "qwen3_moe", "qwen2_moe", "mixtral", "olmoe"]
WINDOW = 8  # the tiny preset's sliding window (mistral gets it from --sliding-window)
CONTEXT = 40


def make_checkpoint(tmp, arch):
    d = tmp / f"ckpt_{arch}"
    args = [sys.executable, str(ROOT / "scripts" / "make-checkpoint"), arch, str(d), "--preset", "tiny", "--seed", "3"]
    if arch == "mistral":
        args += ["--sliding-window", str(WINDOW)]
    subprocess.run(args, check=True, capture_output=True)
    return d


def solo_logits(program, tokens):
    r = hfstatic.Runner(program)
    return [np.array(r.decode_step(t)) for t in tokens]


def alone_logits(program, tokens):
    """The logits after each token, the sequence alone in an Engine on `program`, one token per step."""
    e = hfstatic.Engine(program)
    s = e.add(tokens[:1], max_new_tokens=0)
    out = []
    for i in range(len(tokens)):
        if i > 0:
            e.append(s, tokens[i:i + 1], max_new_tokens=0)
        while not e.idle:
            e.step()
        out.append(np.array(e.logits(s)))
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_sequences_sharing_steps_equal_their_solo_runs(tmp_path, arch):
    ckpt = make_checkpoint(tmp_path, arch)
    multi = hfstatic.export(ckpt, tmp_path / "multi.hfs", prefill_chunk=4, context=CONTEXT, sequences=3, step_sizes=[2, 4])
    solo = hfstatic.export(ckpt, tmp_path / "solo.hfs", prefill_chunk=4, context=CONTEXT)
    e = hfstatic.Engine(multi)
    assert e.max_sequences == 3 and e.step_sizes == [2, 4]
    rng = np.random.default_rng(7)
    fed, seen = {}, {}

    def add(n, max_new):
        prompt = [int(t) for t in rng.integers(3, 500, size=n)]
        s = e.add(prompt, max_new_tokens=max_new, ignore_eos=True, temperature=0)
        fed[s], seen[s] = list(prompt), {}

    def step():
        for s, tok, _finished in e.step():
            length = e.sequence(s)["length"]
            seen[s][length - 1] = np.array(e.logits(s))
            fed[s] = fed[s][:length] + [tok]

    add(1, 3 * WINDOW + 4)     # runs past three windows
    add(9, CONTEXT)            # runs into the end of the context
    for _ in range(4):
        step()
    add(5, 12)                 # arrives while the others decode
    while not e.idle:
        step()
    assert e.sequence(1)["stop"] == "context_full"
    for s, logits in seen.items():
        last = max(logits)
        ref = solo_logits(solo, fed[s][:last + 1])
        alone = alone_logits(multi, fed[s][:last + 1])
        for pos, l in logits.items():
            diff = float(np.abs(l - ref[pos]).max())
            assert diff <= 1e-5, f"{arch}: sequence {s} position {pos}: max |engine - solo| = {diff:.3g}"
            assert l.tobytes() == alone[pos].tobytes(), \
                f"{arch}: sequence {s} position {pos}: not bit-identical to the sequence alone " \
                f"(max diff {float(np.abs(l - alone[pos]).max()):.3g})"


def test_engine_errors_are_hfstatic_errors(tmp_path):
    ckpt = make_checkpoint(tmp_path, "llama")
    e = hfstatic.Engine(hfstatic.export(ckpt, tmp_path / "m.hfs", context=16, sequences=2))
    with pytest.raises(hfstatic.Error) as err:
        e.add(list(range(3, 20)), temperature=0)  # 17 tokens, context 16
    assert err.value.code == "capacity_exceeded" and "17 tokens" in str(err.value)
    with pytest.raises(hfstatic.Error) as err:
        e.add([5], top_p=2.0, temperature=0)
    assert "top_p" in str(err.value)
    with pytest.raises(hfstatic.Error) as err:
        e.add([5], temprature=0.5, temperature=0)
    assert "temprature" in str(err.value)
    with pytest.raises(hfstatic.Error):
        e.remove(42)
    assert e.sequences() == []


def test_engine_logit_bias(tmp_path):
    """logit_bias per sequence: +100 on a token makes greedy pick it at every step, beside a sequence without."""
    ckpt = make_checkpoint(tmp_path, "llama")
    e = hfstatic.Engine(hfstatic.export(ckpt, tmp_path / "m.hfs", context=32, sequences=2))
    biased = e.add([5, 6, 7], max_new_tokens=4, ignore_eos=True, logit_bias={123: 100.0}, temperature=0)
    plain = e.add([5, 6, 7], max_new_tokens=4, ignore_eos=True, temperature=0)
    while not e.idle:
        e.step()
    assert e.sequence(biased)["generated"] == [123] * 4
    assert e.sequence(plain)["generated"] != [123] * 4
    with pytest.raises(hfstatic.Error, match="logit_bias keys must be int"):
        e.add([5], logit_bias={"a": 1.0}, temperature=0)


@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_with_ngram_drafts_equals_greedy(tmp_path, arch):
    """Speculative decoding (Runner.generate(draft="ngram")) gives greedy's tokens exactly, 200+ tokens, past
    the sliding window, on a prompt whose repetition gives prompt lookup drafts to verify."""
    ckpt = make_checkpoint(tmp_path, arch)
    prog = hfstatic.export(ckpt, tmp_path / "steps.hfs", prefill_chunk=4, context=256, step_sizes=[2, 4, 8])
    rng = np.random.default_rng(11)
    half = [int(t) for t in rng.integers(3, 500, size=12)]
    prompt = half + half
    plain = hfstatic.Runner(prog)
    want = plain.generate(prompt, max_new_tokens=220, ignore_eos=True, temperature=0)
    spec = hfstatic.Runner(prog)
    got = spec.generate(prompt, max_new_tokens=220, ignore_eos=True, draft="ngram", draft_max=7, temperature=0)
    assert got == want
    assert len(got) == 220 and spec.stats["verify_steps"] > 0
    with pytest.raises(hfstatic.Error) as err:
        spec.generate(prompt, max_new_tokens=4, draft="medusa", temperature=0)
    assert "draft" in str(err.value)


def test_greedy_with_a_draft_program_equals_greedy(tmp_path):
    """Runner.generate(draft="path.hfs"): a different random-weight model over the same tokenizer (another
    seed) drafts; the tokens are greedy's exactly, 200+ tokens, in the Runner and in the Engine (a
    sequence drafting beside one that does not). A path that does not exist is a clear error in both."""
    ckpt = make_checkpoint(tmp_path, "llama")
    other = tmp_path / "ckpt_draft"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make-checkpoint"), "llama", str(other), "--preset",
                    "tiny", "--seed", "4"], check=True, capture_output=True)
    prog = hfstatic.export(ckpt, tmp_path / "steps.hfs", prefill_chunk=4, context=256, step_sizes=[2, 4, 8])
    draft = hfstatic.export(other, tmp_path / "draft.hfs", prefill_chunk=4, context=256)
    rng = np.random.default_rng(12)
    prompt = [int(t) for t in rng.integers(3, 500, size=12)]
    want = hfstatic.Runner(prog).generate(prompt, max_new_tokens=220, ignore_eos=True, temperature=0)
    spec = hfstatic.Runner(prog)
    got = spec.generate(prompt, max_new_tokens=220, ignore_eos=True, draft=str(draft), draft_max=4, temperature=0)
    assert got == want and len(got) == 220
    assert spec.stats["draft_tokens"] > 0 and spec.stats["draft_program_steps"] > 0
    # The target drafting for itself accepts (nearly) everything, and continues the sequence across calls.
    self_spec = hfstatic.Runner(prog)
    got = self_spec.generate(prompt, max_new_tokens=100, ignore_eos=True, draft=str(prog), draft_max=4, temperature=0)
    got += self_spec.generate([], max_new_tokens=120, ignore_eos=True, draft=str(prog), draft_max=4, continue_=True, temperature=0)
    assert got == want
    assert self_spec.stats["draft_accepted"] >= 0.9 * self_spec.stats["draft_tokens"] > 0
    with pytest.raises(hfstatic.Error) as err:
        spec.generate(prompt, max_new_tokens=4, draft=str(tmp_path / "missing.hfs"), temperature=0)
    assert "no such file" in str(err.value) and "missing.hfs" in str(err.value)
    multi = hfstatic.export(ckpt, tmp_path / "m.hfs", context=256, sequences=2)
    e = hfstatic.Engine(multi)
    a = e.add(prompt, max_new_tokens=220, ignore_eos=True, draft=str(prog), draft_max=4, temperature=0)
    b = e.add(prompt[:5], max_new_tokens=40, ignore_eos=True, temperature=0)
    while not e.idle:
        e.step()
    assert e.sequence(a)["generated"] == want
    assert e.sequence(b)["generated"] == hfstatic.Runner(prog).generate(prompt[:5], max_new_tokens=40, ignore_eos=True, temperature=0)
    assert e.stats["draft_tokens"] > 0
    with pytest.raises(hfstatic.Error) as err:
        e.add([5], draft=str(tmp_path / "missing.hfs"), temperature=0)
    assert "no such file" in str(err.value) and "missing.hfs" in str(err.value)


def test_engine_sequences_with_drafts_generate_what_runner_generates(tmp_path):
    ckpt = make_checkpoint(tmp_path, "qwen2")
    multi = hfstatic.export(ckpt, tmp_path / "m.hfs", context=128, sequences=2)
    e = hfstatic.Engine(multi)
    rng = np.random.default_rng(5)
    half = [int(t) for t in rng.integers(3, 500, size=10)]
    a = e.add(half + half, max_new_tokens=60, ignore_eos=True, draft="ngram", draft_max=6, temperature=0)
    b = e.add(half[:5], max_new_tokens=30, ignore_eos=True, temperature=0)
    while not e.idle:
        e.step()
    assert e.stats["draft_tokens"] > 0
    for seq, prompt, n in [(a, half + half, 60), (b, half[:5], 30)]:
        want = hfstatic.Runner(multi).generate(prompt, max_new_tokens=n, ignore_eos=True, temperature=0)
        assert e.sequence(seq)["generated"] == want
    with pytest.raises(hfstatic.Error) as err:
        e.add([5], draft="lookahead", temperature=0)
    assert "draft" in str(err.value)


def test_text_prompts_and_stop_strings(stories_dir, tmp_path):
    """Engine.add with a str prompt: its text equals Runner.generate's for the same prompt (greedy), and a stop
    string cuts it there and ends the sequence while the other keeps going. Cost: one stories260K export."""
    prog = hfstatic.export(stories_dir, tmp_path / "s2.hfs", prefill_chunk=8, context=96, sequences=2)
    prompt = "Once upon a time"
    want = hfstatic.Runner(prog).generate(prompt, max_new_tokens=30, temperature=0)
    assert "Lily" in want
    e = hfstatic.Engine(prog)
    a = e.add(prompt, max_new_tokens=30, temperature=0)
    b = e.add(prompt, max_new_tokens=30, temperature=0, stop=["Lily", "zebra"])
    finished = set()
    while not e.idle:
        for seq, _, done in e.step():
            if done:
                finished.add(seq)
    assert e.sequence(a)["text"] == want and e.sequence(a)["stop"] == "max_tokens"
    sb = e.sequence(b)
    assert sb["text"] == want[: want.index("Lily")] and sb["stop"] == "stop_string" and sb["finished"]
    assert finished == {a, b}
    e.remove(b)
    with pytest.raises(hfstatic.Error) as err:
        e.add([1, 2], stop="x")
    assert "str prompt" in str(err.value)
