"""hfstatic.Program metadata, hfstatic.open() and the per-contract runner registry."""
import json

import pytest

import hfstatic


def test_program_metadata(program_path, stories_dir):
    p = hfstatic.Program(program_path)
    config = json.loads((stories_dir / "config.json").read_text())
    md = p.metadata
    assert md["io.contract"] == "hf_static" and md["io.contract_version"] == 1
    assert md["hf_static.vocab_size"] == config["vocab_size"]
    assert md["hf_static.n_layers"] == config["num_hidden_layers"]
    assert md["hf_static.n_kv_heads"] == config["num_key_value_heads"]
    assert md["hf_static.prefill_tokens"] == 8 and md["hf_static.context_length"] == 96
    assert md["hf_static.eos_token_ids"] == [config["eos_token_id"]]
    assert {"prefill", "decode"} <= set(p.methods)
    assert "file:tokenizer.json" in p.constants
    assert p.path == str(program_path) and p.file_size == program_path.stat().st_size
    md["io.contract"] = "changed"  # a copy
    assert p.metadata["io.contract"] == "hf_static"


def test_open_uses_the_registered_runner(program_path):
    assert hfstatic.registered_runners()["hf_static"] is hfstatic.Runner
    r = hfstatic.open(program_path, tail="pad")
    assert type(r) is hfstatic.Runner
    assert isinstance(r.generate("Once", max_new_tokens=3, temperature=0), str)


def test_register_a_subclass(program_path, monkeypatch):
    monkeypatch.setattr(hfstatic, "_runners", dict(hfstatic._runners))

    @hfstatic.register_runner("hf_static")
    class Shouting(hfstatic.Runner):
        def __init__(self, program, **kw):
            assert isinstance(program, hfstatic.Program)
            super().__init__(program, **kw)

        def generate(self, prompt, **kw):
            return super().generate(prompt, **kw).upper()

    r = hfstatic.open(program_path)
    assert isinstance(r, Shouting)
    plain = hfstatic.Runner(program_path).generate("Once upon a time", max_new_tokens=10, temperature=0)
    assert r.generate("Once upon a time", max_new_tokens=10, temperature=0) == plain.upper()


def test_unknown_contract(program_path, monkeypatch):
    monkeypatch.setattr(hfstatic, "_runners", {"other": hfstatic.Runner})
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.open(program_path)
    assert e.value.code == "unknown_contract"
    assert "hf_static" in str(e.value) and "other" in str(e.value)


def test_register_runner_rejects_bad_input():
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.register_runner("", hfstatic.Runner)
    assert e.value.code == "invalid_argument"
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.register_runner("x", 42)
    assert e.value.code == "invalid_argument"
