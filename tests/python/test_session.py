"""Runner.save / Runner.restore (docs/sessions.md): a restored runner continues exactly as one that fed the
same tokens, and bad files raise hfstatic.Error with the runner unchanged. stories260K, a few dozen tokens."""
import numpy as np
import pytest

import hfstatic

PROMPT = [1, 403, 407, 261, 378, 285, 395, 402, 269, 309, 350, 267, 289, 396]


def test_restore_then_decode_equals_prefilling_everything(program_path, tmp_path):
    a = hfstatic.Runner(program_path)
    a.prefill(PROMPT)
    path = tmp_path / "s.session"
    a.save(path)
    b = hfstatic.Runner(program_path)
    b.prefill([1, 2, 3])  # replaced by the restore
    b.restore(path)
    assert b.position == len(PROMPT) and b.tokens == PROMPT and b.pending_token is None
    assert b.logits.shape == (0,)
    got = np.copy(b.decode_step(42))
    c = hfstatic.Runner(program_path)
    c.prefill(PROMPT + [42])
    np.testing.assert_array_equal(got, c.logits)  # bit for bit (chunking invariance)
    # Greedy continuations agree too.
    assert b.generate([7], max_new_tokens=5, temperature=0, continue_=True) == \
        c.generate([7], max_new_tokens=5, temperature=0, continue_=True)


def test_bad_files_raise_and_change_nothing(program_path, tmp_path):
    a = hfstatic.Runner(program_path)
    a.prefill(PROMPT)
    good = tmp_path / "good.session"
    a.save(good)
    data = good.read_bytes()
    r = hfstatic.Runner(program_path)
    r.prefill([1, 5, 6])
    before = np.copy(r.logits)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 4
    cases = {"truncated": data[: len(data) - 3], "checksum_mismatch": bytes(flipped), "bad_magic": b"x" * 64}
    for code, content in cases.items():
        bad = tmp_path / (code + ".session")
        bad.write_bytes(content)
        with pytest.raises(hfstatic.Error) as e:
            r.restore(bad)
        assert e.value.code == code and str(bad) in str(e.value)
        assert r.position == 3 and r.tokens == [1, 5, 6]
        np.testing.assert_array_equal(r.logits, before)


def test_engine_restores_a_runners_file_and_saves_one_a_runner_restores(program_path, tmp_path):
    """Engine.restore / Engine.save: the file format is the Runner's, and either side continues bit for bit
    as recomputing the same tokens."""
    a = hfstatic.Runner(program_path)
    a.prefill(PROMPT)
    runner_file = tmp_path / "runner.session"
    a.save(runner_file)
    e = hfstatic.Engine(program_path)
    s = e.restore(runner_file)
    assert e.sequence(s)["length"] == len(PROMPT)
    e.append(s, [42], max_new_tokens=0)
    while not e.idle:
        e.step()
    c = hfstatic.Runner(program_path)
    c.prefill(PROMPT + [42])
    np.testing.assert_array_equal(np.array(e.logits(s)), c.logits)
    engine_file = tmp_path / "engine.session"
    e.save(s, engine_file)
    b = hfstatic.Runner(program_path)
    b.restore(engine_file)
    assert b.tokens == PROMPT + [42]
    np.testing.assert_array_equal(np.copy(b.decode_step(7)), np.copy(c.decode_step(7)))
    with pytest.raises(hfstatic.Error) as err:
        e.restore(tmp_path / "missing.session")
    assert "missing.session" in str(err.value)
