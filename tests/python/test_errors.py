"""Failures surface as hfstatic.Error with the right .code and a message that says what and where."""
import os

import pytest

import hfstatic


def test_error_is_a_runtime_error_with_a_code():
    assert issubclass(hfstatic.Error, RuntimeError)
    e = hfstatic.Error("capacity_exceeded: x", "capacity_exceeded")
    assert e.code == "capacity_exceeded" and str(e) == "capacity_exceeded: x"


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.hfs"
    for make in (hfstatic.Runner, hfstatic.Program, hfstatic.Tokenizer.from_program, hfstatic.open):
        with pytest.raises(hfstatic.Error) as e:
            make(missing)
        assert e.value.code == "not_found", make
        assert str(e.value).startswith("not_found: ") and str(missing) in str(e.value)


def test_not_a_program(tmp_path):
    bad = tmp_path / "bad.hfs"
    bad.write_bytes(b"NOTHFSTC" + bytes(4096))
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.Runner(bad)
    assert e.value.code == "bad_magic"


def test_over_capacity_prefill_changes_nothing(runner):
    runner.prefill([1, 2, 3])
    with pytest.raises(hfstatic.Error) as e:
        runner.prefill([5] * 94)  # 3 + 94 > 96
    assert e.value.code == "capacity_exceeded"
    assert "96" in str(e.value)
    assert runner.position == 3 and runner.capacity_left == 93
    runner.prefill([5] * 93)  # exactly full is fine
    assert runner.capacity_left == 0 and not runner.can_accept(1)
    with pytest.raises(hfstatic.Error) as e:
        runner.decode_step(5)
    assert e.value.code == "capacity_exceeded"


def test_generation_stops_when_the_context_is_full(runner):
    runner.prefill([1] + [5] * 90)
    stream = runner.stream([5], max_new_tokens=50, ignore_eos=True, continue_=True, temperature=0)
    ids = list(stream)
    assert stream.stop_reason == "context_full"
    assert runner.position == 96 and len(ids) == 96 - 92 + 1


def test_token_outside_vocab(runner):
    with pytest.raises(hfstatic.Error) as e:
        runner.prefill([1, 512])
    assert e.value.code == "out_of_range" and "512" in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        runner.decode_step(-1)
    assert e.value.code == "out_of_range"


@pytest.mark.parametrize("kw, what", [
    (dict(max_new_tokens=-1), "max_new_tokens"),
    (dict(temperature=-0.5), "temperature"),
    (dict(temperature=float("nan")), "temperature"),
    (dict(temperature=float("inf")), "temperature"),
    (dict(top_k=-1), "top_k"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(min_p=2.0), "min_p"),
    (dict(repetition_penalty=0.0), "repetition_penalty"),
    (dict(repetition_penalty=float("inf")), "repetition_penalty"),
    (dict(min_p=float("nan")), "min_p"),
    (dict(stop=""), "stop strings"),
    (dict(stop=[1.5]), "stop items"),
    (dict(stop=object()), "stop must be"),
])
def test_bad_generation_arguments(runner, kw, what):
    with pytest.raises(hfstatic.Error) as e:
        runner.generate("Once", **kw)
    assert e.value.code == "invalid_argument" and what in str(e.value)
    assert runner.position == 0


def test_bad_prompts(runner):
    with pytest.raises(hfstatic.Error) as e:
        runner.generate([1, "x"], temperature=0)
    assert e.value.code == "invalid_argument" and "token ids" in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        runner.generate([1, 2], stop="Lily", temperature=0)
    assert e.value.code == "invalid_argument" and "stop strings" in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        runner.generate([], temperature=0)  # nothing to continue from
    assert e.value.code == "invalid_argument"


def test_bad_runner_options(program_path):
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.Runner(program_path, tail="sideways")
    assert e.value.code == "invalid_argument" and "sideways" in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.Runner(program_path, backends=["no_such_backend"])
    assert "no_such_backend" in str(e.value)


def test_program_without_tokenizer_runs_ids_but_not_text(tmp_path, stories_dir):
    model = tmp_path / "model"
    model.mkdir()
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        os.symlink(stories_dir / f, model / f)
    out = hfstatic.export(model, tmp_path / "notok.hfs", prefill_chunk=8, context=32)
    r = hfstatic.Runner(out)
    assert len(r.generate([1], max_new_tokens=3, temperature=0)) == 3
    with pytest.raises(hfstatic.Error) as e:
        r.generate("Once", temperature=0)
    assert e.value.code == "not_found"


def test_export_errors(tmp_path, stories_dir):
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.export(tmp_path / "missing", tmp_path / "x.hfs")
    assert str(tmp_path / "missing") in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.export(stories_dir, tmp_path / "x.hfs", cache_dtype="q4")
    assert e.value.code == "invalid_argument" and "cache_dtype" in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.export(stories_dir, tmp_path / "x.hfs", prefill_chunk=0)
    assert e.value.code == "invalid_argument"
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.export(stories_dir, tmp_path / "x.hfs", weights="int3")
    assert "int3" in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.export(stories_dir, tmp_path / "x.hfs", prefill_chunk=8, prefill_variants=[2, 8])
    assert e.value.code == "invalid_argument" and "variant 8" in str(e.value)
    assert not (tmp_path / "x.hfs").exists()


def test_export_prefill_variants(tmp_path, stories_dir):
    out = tmp_path / "v.hfs"
    hfstatic.export(stories_dir, out, prefill_chunk=8, context=32, prefill_variants=[3])
    r = hfstatic.Runner(out)
    assert r.info["prefill_step_sizes"] == [3, 8]
    hfstatic.export(stories_dir, out, prefill_chunk=8, context=32, prefill_variants=[])
    assert hfstatic.Runner(out).info["prefill_step_sizes"] == [8]


def test_nan_logits_raise_execution_naming_the_step(program_path, tmp_path):
    # The program with row 7 of its (tied) embedding table set to NaN, patched in the file's data section
    # (docs/program-format.md): the logits after any prompt hold NaN at id 7.
    import json
    import struct
    b = bytearray(program_path.read_bytes())
    moff, msize, doff = struct.unpack_from("<QQQ", b, 16)
    t = next(t for t in json.loads(b[moff:moff + msize])["tensors"] if t["name"] == "embed_tokens.weight")
    cols = t["shape"][1]
    at = doff + t["offset"] + 7 * cols * 4
    b[at:at + cols * 4] = struct.pack("<f", float("nan")) * cols
    bad = tmp_path / "nan.hfs"
    bad.write_bytes(bytes(b))
    r = hfstatic.Runner(bad)
    with pytest.raises(hfstatic.Error) as e:
        r.generate([1, 5, 9], max_new_tokens=3, temperature=0)
    assert e.value.code == "execution"
    assert "the prompt's last step (position 2): logits contain NaN at id 7" in str(e.value)
    with pytest.raises(hfstatic.Error) as e:
        r.generate([1], max_new_tokens=1, continue_=True, temperature=0)
    assert e.value.code == "needs_reset"
    r.reset()
    assert r.position == 0
