"""hfstatic.Runner generation against the independent PyTorch reference (tests/reference/hf_reference.py)."""
import threading

import numpy as np
import pytest

import hfstatic

PROMPT = "Once upon a time"
N = 30


@pytest.fixture(scope="module")
def greedy_ref(runner_tokenizer_ids, reference):
    """Reference greedy continuation of PROMPT: (prompt ids, generated ids, logits rows, expected text)."""
    ref, model, vocab = reference
    prompt = runner_tokenizer_ids
    tokens, logits = ref.greedy(model, prompt, N)
    generated = tokens[len(prompt):]
    # The reference's own SentencePiece-style decoder: the continuation is what decoding the whole sequence
    # adds after the prompt's text.
    full, head = ref.decode(vocab, tokens), ref.decode(vocab, prompt)
    assert full.startswith(head)
    return prompt, generated, logits, full[len(head):]


@pytest.fixture(scope="module")
def runner_tokenizer_ids(program_path):
    ids = hfstatic.Tokenizer.from_program(program_path).encode(PROMPT)
    assert ids[0] == 1  # BOS from the Llama post-processor (tokenizer_config: add_bos_token)
    return ids


def test_greedy_text_matches_reference(runner, greedy_ref):
    _, generated, _, expected = greedy_ref
    assert 2 not in generated  # no EOS inside 30 tokens, so nothing is cut
    text = runner.generate(PROMPT, max_new_tokens=N, temperature=0)
    assert text == expected
    # The model's known greedy behaviour (docs of the shared fixture): a story about Lily.
    assert text.startswith(", there was a little girl named Lily")


def test_greedy_ids_match_reference(runner, greedy_ref):
    prompt, generated, _, _ = greedy_ref
    assert runner.generate(prompt, max_new_tokens=N, temperature=0) == generated
    assert runner.position == len(prompt) + N - 1  # the last generated token is pending, not fed
    assert runner.pending_token == generated[-1]


@pytest.mark.parametrize("tail", ["pad", "decode", "auto"])
def test_tail_policies_agree(program_path, greedy_ref, tail):
    prompt, generated, _, _ = greedy_ref
    r = hfstatic.Runner(program_path, tail=tail)
    assert r.generate(prompt, max_new_tokens=N, temperature=0) == generated


def test_fast_backend_agrees(program_path, greedy_ref):
    prompt, generated, ref_logits, _ = greedy_ref
    r = hfstatic.Runner(program_path, backends=["cpu_fast"])
    assert r.generate(prompt, max_new_tokens=N, temperature=0) == generated
    r.reset()
    r.prefill(prompt)
    np.testing.assert_allclose(r.logits, ref_logits[0], atol=1e-4, rtol=0)


@pytest.mark.skipif("vulkan" not in hfstatic.backends(), reason="built without the vulkan backend (HFS_VULKAN)")
def test_vulkan_backend_agrees(program_path, greedy_ref):
    prompt, generated, ref_logits, _ = greedy_ref
    r = hfstatic.Runner(program_path, backends=["vulkan"], device=0)
    assert r.generate(prompt, max_new_tokens=N, temperature=0) == generated
    r.reset()
    r.prefill(prompt)
    np.testing.assert_allclose(r.logits, ref_logits[0], atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match="vulkan backend's device"):
        hfstatic.Runner(program_path, backends=["cpu_ref"], device=0)


def test_decode_step_returns_zero_copy_view_of_logits(runner, greedy_ref):
    prompt, generated, ref_logits, _ = greedy_ref
    runner.prefill(prompt)
    after_prompt = runner.logits
    assert after_prompt.shape == (512,) and after_prompt.dtype == np.float32
    np.testing.assert_allclose(after_prompt, ref_logits[0], atol=1e-4, rtol=0)

    a = runner.decode_step(generated[0])
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == (512,)
    np.testing.assert_allclose(a, ref_logits[1], atol=1e-4, rtol=0)
    assert np.array_equal(a, runner.logits)
    # A view, not a copy: no own data, the same memory as runner.logits, and it cannot be written.
    assert not a.flags.owndata and a.base is not None
    assert np.shares_memory(a, runner.logits)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 0.0
    before = a.copy()
    b = runner.decode_step(generated[1])
    # The next step overwrites the same buffer: the old view now shows the new logits.
    assert not np.array_equal(a, before)
    assert np.array_equal(a, b)
    np.testing.assert_allclose(a, ref_logits[2], atol=1e-4, rtol=0)
    assert runner.position == len(prompt) + 2


def test_logits_view_keeps_runner_alive(program_path, greedy_ref):
    prompt, _, ref_logits, _ = greedy_ref
    r = hfstatic.Runner(program_path)
    r.prefill(prompt)
    view = r.logits
    del r
    np.testing.assert_allclose(view, ref_logits[0], atol=1e-4, rtol=0)


def test_same_seed_same_text(program_path):
    kw = dict(max_new_tokens=N, temperature=1.0, top_k=40, top_p=0.95, seed=1234)
    a = hfstatic.Runner(program_path).generate(PROMPT, **kw)
    b = hfstatic.Runner(program_path).generate(PROMPT, **kw)
    assert a == b
    others = {hfstatic.Runner(program_path).generate(PROMPT, **dict(kw, seed=s)) for s in (1, 2, 3, 4)}
    assert len(others) > 1  # the seed matters


@pytest.mark.parametrize("kw", [dict(), dict(temperature=0.9, top_k=20, seed=7)])
def test_stream_pieces_concatenate_to_generate(program_path, kw):
    text = hfstatic.Runner(program_path).generate(PROMPT, max_new_tokens=N, **kw)
    stream = hfstatic.Runner(program_path).stream(PROMPT, max_new_tokens=N, **kw)
    assert stream.stop_reason is None
    pieces = list(stream)
    assert all(isinstance(p, str) and p for p in pieces)
    assert len(pieces) > 5  # streamed, not one lump
    assert "".join(pieces) == text
    assert len(stream.tokens) == N and stream.stop_reason == "max_tokens"


def test_stream_of_ids(runner, greedy_ref):
    prompt, generated, _, _ = greedy_ref
    assert list(runner.stream(prompt, max_new_tokens=N, temperature=0)) == generated


def test_reset_starts_over(runner, greedy_ref):
    prompt, generated, _, expected = greedy_ref
    assert runner.generate(PROMPT, max_new_tokens=N, temperature=0) == expected
    assert runner.position > 0
    runner.reset()
    assert runner.position == 0 and runner.pending_token is None
    assert runner.capacity_left == runner.info["context_length"] == 96
    assert runner.logits.shape == (0,)
    assert runner.generate(PROMPT, max_new_tokens=N, temperature=0) == expected


def test_continue_continues_the_sequence(runner, greedy_ref):
    _, _, _, expected = greedy_ref
    first = runner.generate(PROMPT, max_new_tokens=10, temperature=0)
    rest = runner.generate("", max_new_tokens=N - 10, continue_=True, temperature=0)  # the pending token is committed first
    assert first + rest == expected
    # Without continue_, an empty prompt has nothing to start from.
    with pytest.raises(hfstatic.Error) as e:
        runner.generate([], max_new_tokens=3, temperature=0)
    assert e.value.code == "invalid_argument" and "continue_=True" in str(e.value)


def test_each_generate_starts_from_its_prompt(runner, greedy_ref):
    """A loop of calls never fills the context (96 tokens here): each call starts at position 0, and gives
    what a fresh runner gives."""
    prompt, generated, _, expected = greedy_ref
    for _ in range(20):
        assert runner.generate(PROMPT, max_new_tokens=N, temperature=0) == expected
    assert runner.position == len(prompt) + N - 1
    assert list(runner.stream(prompt, max_new_tokens=N, temperature=0)) == generated
    assert runner.generate(prompt, max_new_tokens=N, temperature=0) == generated


def test_text_prompt_after_generation_gets_no_bos(runner, greedy_ref):
    prompt, _, _, _ = greedy_ref
    runner.generate(PROMPT, max_new_tokens=5, temperature=0)
    p0 = runner.position
    assert p0 == len(prompt) + 4
    more = runner.tokenizer.encode(" Then", add_special=False)
    assert 1 not in more
    runner.generate(" Then", max_new_tokens=1, continue_=True, temperature=0)
    # pending token + the text without BOS; the one generated token is pending again
    assert runner.position == p0 + 1 + len(more)


def test_stop_string_cuts_text(runner, greedy_ref):
    _, _, _, expected = greedy_ref
    stream = runner.stream(PROMPT, max_new_tokens=N, stop="Lily", temperature=0)
    text = "".join(stream)
    assert text == expected[: expected.index("Lily")]
    assert stream.stop_reason == "stop_string"


def test_stop_token_ids(runner, greedy_ref):
    prompt, generated, _, expected = greedy_ref
    stop_id = generated[4]
    assert stop_id not in generated[:4]
    ids = runner.generate(prompt, max_new_tokens=N, stop=[stop_id], temperature=0)
    assert ids == generated[:5]  # the stop token is reported in token mode
    runner.reset()
    tokenizer = runner.tokenizer
    text = runner.generate(PROMPT, max_new_tokens=N, stop=stop_id, temperature=0)
    full = tokenizer.decode(prompt + generated[:4])
    assert text == full[len(tokenizer.decode(prompt)):]  # ...but not rendered in text mode


def test_logit_bias_moves_the_choice(runner, greedy_ref):
    """OpenAI's logit_bias: -100 on the reference's greedy first token leaves the reference's runner-up;
    +100 on a token makes greedy pick it at every step."""
    prompt, generated, ref_logits, _ = greedy_ref
    order = np.argsort(-np.asarray(ref_logits[0], dtype=np.float32), kind="stable")
    assert order[0] == generated[0]
    runner_up = int(order[1])
    assert runner_up not in (2, generated[0])  # not EOS, which would end generation
    assert runner.generate(prompt, max_new_tokens=1, logit_bias={generated[0]: -100.0}, temperature=0) == [runner_up]
    runner.reset()
    assert runner.generate(prompt, max_new_tokens=3, logit_bias={runner_up: 100.0}, temperature=0) == [runner_up] * 3
    runner.reset()
    with pytest.raises(hfstatic.Error, match="logit_bias must be a dict"):
        runner.generate(prompt, logit_bias=[(1, 2.0)], temperature=0)


def test_stats_and_info(runner):
    runner.generate(PROMPT, max_new_tokens=N, temperature=0)
    s = runner.stats
    assert s["generated_tokens"] == N and s["decode_steps"] == N - 1
    assert s["prompt_tokens"] == len(runner.tokenizer.encode(PROMPT))
    assert s["decode_ms"] > 0 and s["decode_tok_s"] > 0 and s["peak_rss_bytes"] > 0
    info = runner.info
    assert info["contract"] == "hf_static" and info["vocab_size"] == 512
    assert info["prefill_tokens"] == 8 and info["bos_token_id"] == 1 and info["eos_token_ids"] == [2]
    assert info["prefill_step_sizes"] == [2, 4, 8]  # the exporter's default variants C/4, C/2 (C/16 < 2 is left out)


def test_streams_end_when_the_runner_is_used_elsewhere(runner):
    stream = runner.stream(PROMPT, max_new_tokens=N, temperature=0)
    next(stream)
    runner.reset()
    with pytest.raises(hfstatic.Error) as e:
        next(stream)
    assert e.value.code == "invalid_argument"
    # An abandoned stream leaves the runner usable.
    abandoned = runner.stream(PROMPT, max_new_tokens=N, temperature=0)
    next(abandoned)
    assert isinstance(runner.generate("", max_new_tokens=3, temperature=0), str)


def test_threads_share_nothing_and_agree(program_path, greedy_ref):
    _, _, _, expected = greedy_ref
    results = [None] * 4

    def work(i):
        results[i] = hfstatic.Runner(program_path).generate(PROMPT, max_new_tokens=N, temperature=0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


def test_one_runner_used_from_two_threads_serializes(runner, greedy_ref):
    prompt, generated, _, _ = greedy_ref
    out = []

    def work():
        out.append(runner.generate(prompt, max_new_tokens=3, temperature=0))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Whole calls interleave safely; each starts from its prompt.
    assert out == [generated[:3]] * 2 and runner.position == len(prompt) + 2


def test_cli_agrees(program_path, greedy_ref):
    import json
    import os
    import subprocess
    cli = os.environ.get("HFS_CLI")
    if not cli:
        pytest.skip("HFS_CLI is not set")
    _, generated, _, _ = greedy_ref
    out = subprocess.run([cli, "run", "-m", str(program_path), "-p", PROMPT, "-n", str(N), "--temp", "0", "--json"],
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out)["tokens"] == generated


def test_steps_release_the_gil(program_path):
    import sys
    import time
    r = hfstatic.Runner(program_path)
    r.generate([1], max_new_tokens=2, temperature=0)  # warm up
    r.reset()
    before = r.stats["generated_tokens"]
    old = sys.getswitchinterval()
    # With a huge switch interval a thread that keeps the GIL during a C call starves the main thread: it
    # would wake from sleep() once and then wait for the whole generate() to end.
    sys.setswitchinterval(100.0)
    try:
        done = threading.Event()
        t = threading.Thread(target=lambda: (r.generate([1], max_new_tokens=90, ignore_eos=True, temperature=0), done.set()))
        t.start()
        wakeups = 0
        while not done.is_set():
            time.sleep(0.0005)
            wakeups += 1
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert r.stats["generated_tokens"] - before == 90
    assert wakeups > 5


class AlignedNumpyAllocator:
    """A caller's I/O allocator: 64-byte-aligned numpy byte arrays, remembering each one."""

    def __init__(self):
        self.buffers = []

    def allocate(self, nbytes):
        raw = np.empty(nbytes + 64, dtype=np.uint8)
        start = (-raw.ctypes.data) % 64
        view = raw[start:start + nbytes]
        self.buffers.append(view)
        return view

    def owns(self, array):
        p = array.ctypes.data
        return any(b.ctypes.data <= p < b.ctypes.data + b.nbytes for b in self.buffers)


def test_io_allocator_holds_every_io_buffer_and_changes_nothing(program_path):
    prompt = "Once upon a time"
    want = hfstatic.Runner(program_path).generate(prompt, max_new_tokens=16, temperature=0)
    alloc = AlignedNumpyAllocator()
    r = hfstatic.Runner(program_path, io_allocator=alloc)
    n = len(alloc.buffers)
    p = hfstatic.Program(program_path)
    assert n >= 2 * p.metadata["hf_static.n_layers"] + 2  # the caches, ids and logits at least
    assert r.generate(prompt, max_new_tokens=16, temperature=0) == want
    assert alloc.owns(r.decode_step(5))  # the logits view is the caller's memory
    assert len(alloc.buffers) == n  # nothing allocated after creation
    # Shared memory end to end, by flag and by name.
    assert hfstatic.Runner(program_path, shared_memory_io=True).generate(prompt, max_new_tokens=16, temperature=0) == want
    assert hfstatic.Runner(program_path, io_allocator="shared_memory").generate(
        prompt, max_new_tokens=16, temperature=0) == want


def test_io_allocator_errors(program_path):
    class Short:
        def allocate(self, nbytes):
            return bytearray(nbytes // 2)

    with pytest.raises(hfstatic.Error, match=r"io_allocator Short.allocate\(\d+\): expected at least"):
        hfstatic.Runner(program_path, io_allocator=Short())
    with pytest.raises(hfstatic.Error, match="expected a writable C-contiguous buffer, got bytes"):
        hfstatic.Runner(program_path, io_allocator=type("RO", (), {"allocate": lambda self, n: bytes(n)})())
    with pytest.raises(hfstatic.Error, match="got 'gpu'"):
        hfstatic.Runner(program_path, io_allocator="gpu")
    with pytest.raises(hfstatic.Error, match="shared_memory_io"):
        hfstatic.Runner(program_path, io_allocator="heap", shared_memory_io=True)


def test_default_temperature_is_every_front_ends(runner, greedy_ref):
    """0.8, as `hfstatic run`/`chat` and the server default to (llama.cpp's): sampled, seed 0 unless given."""
    prompt, _, _, _ = greedy_ref
    for method in (hfstatic.Runner.generate, hfstatic.Runner.stream):
        assert "temperature: float = 0.8" in method.__doc__, method.__doc__
    default = runner.generate(prompt, max_new_tokens=N)
    assert default == runner.generate(prompt, max_new_tokens=N, temperature=0.8, seed=0)


def test_deterministic_by_default_and_the_faster_prefill_on_request(stories_dir, greedy_ref, tmp_path):
    # f16 weights, a 32-token chunk: float prefill rows through decode's kernel by default, the panel GEMM
    # with deterministic=False (docs/determinism.md). Fresh runners give the same bits; the panel GEMM's
    # rows may round differently, within f32 rounding. About 1 s.
    prompt, _, ref_logits, _ = greedy_ref
    program = hfstatic.export(stories_dir, tmp_path / "f16.hfs", prefill_chunk=32, context=96, weights="f16")
    long_prompt = (prompt * 40)[:40]

    def logits(**kw):
        r = hfstatic.Runner(program, backends=["cpu_fast"], **kw)
        r.prefill(long_prompt)
        return np.array(r.logits)

    a, b, fast = logits(), logits(), logits(deterministic=False)
    assert a.tobytes() == b.tobytes()
    np.testing.assert_allclose(fast, a, atol=1e-3, rtol=0)
    r = hfstatic.Runner(program, backends=["cpu_fast"], deterministic=False)
    r.prefill(prompt)
    np.testing.assert_allclose(r.logits, ref_logits[0], atol=2e-2, rtol=0)  # f16 weights against the f32 reference
