"""`hfstatic export` refuses a broken checkpoint up front: each test copies stories260K, breaks one thing
(a config value, the tokenizer, a weight value, a tensor name) and expects a clean non-zero exit whose
message names the file and the key or tensor, with no program file left behind. The C++ side of the same
classes is tests/export/export_checks_test.cpp.

Run: /usr/bin/python3 -m pytest tests/tools/test_export_checks.py   (HFS_CLI=path/to/hfstatic)
"""
import json
import shutil
import struct

import pytest

from conftest import cli

TENSOR = "model.layers.2.mlp.up_proj.weight"  # an f32 tensor of stories260K


@pytest.fixture
def ckpt(stories_dir, tmp_path):
    d = tmp_path / "stories"
    shutil.copytree(stories_dir, d)
    return d


def edit_json(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def read_safetensors(path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_safetensors(path, header_text, data):
    encoded = header_text.encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)


def export_fails(d, tmp_path, *fragments, extra=()):
    """Exports d, expects a clean failure naming every fragment, and no output file."""
    out = tmp_path / "out" / "model.hfs"
    out.parent.mkdir(exist_ok=True)
    r = cli("export", d, "-o", out, *extra, check=False)
    for f in fragments:
        assert str(f) in r.stderr, f"expected {f!r} in: {r.stderr}"
    assert list(out.parent.iterdir()) == [], "export left files behind"
    return r.stderr


def test_unbroken_copy_exports(ckpt, tmp_path):
    out = tmp_path / "ok.hfs"
    cli("export", ckpt, "-o", out, "--context", "64", check=True)
    assert out.stat().st_size > 0


@pytest.mark.parametrize("key, value, expected", [
    ("num_hidden_layers", 10**12, "expected an integer in [1, 5] (the checkpoint's tensors cover layers 0..4), got 1000000000000"),
    ("num_hidden_layers", 0, "got 0"),
    ("hidden_size", 2**62, "no tensor in the checkpoint has a larger dimension"),
    ("vocab_size", 10**12, "got 1000000000000"),
    ("num_key_value_heads", 3, "must divide num_attention_heads 8"),
    ("head_dim", 2**61, "num_attention_heads × head_dim"),
    ("rms_norm_eps", 0, "expected a finite number > 0, got 0"),
    ("rope_theta", -1, "expected a finite number > 0"),
    ("rope_scaling", {"rope_type": "linear", "factor": 0}, "'factor'"),
    ("bos_token_id", 512, "id 512 outside [-1, 511]"),
])
def test_bad_config_value_names_key(ckpt, tmp_path, key, value, expected):
    edit_json(ckpt / "config.json", **{key: value})
    if key == "bos_token_id":  # generation_config.json would override config.json's id
        edit_json(ckpt / "generation_config.json", bos_token_id=value)
    err = export_fails(ckpt, tmp_path, f"key '{key}'", expected)
    assert "node" not in err


def test_huge_layer_count_fails_fast(ckpt, tmp_path):
    edit_json(ckpt / "config.json", num_hidden_layers=2**62)
    r = cli("export", ckpt, "-o", tmp_path / "x.hfs", check=False, timeout=10)
    assert "num_hidden_layers" in r.stderr and "bad_alloc" not in r.stderr


@pytest.mark.parametrize("breakage, expected", [
    ("garbage", "tokenizer.json"),
    ("truncated", "tokenizer.json"),
    ("empty_file", "top level"),
    ("empty_vocab", "the vocabulary is empty"),
    ("id_beyond_vocab", "has id 600, but"),
])
def test_bad_tokenizer_fails_export(ckpt, tmp_path, breakage, expected):
    path = ckpt / "tokenizer.json"
    text = path.read_text()
    if breakage == "garbage":
        path.write_text("this is not a tokenizer")
    elif breakage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif breakage == "empty_file":
        path.write_text("")
    elif breakage == "empty_vocab":
        tok = json.loads(text)
        tok["model"]["vocab"], tok["model"]["merges"], tok["added_tokens"], tok["post_processor"] = {}, [], [], None
        path.write_text(json.dumps(tok))
        (ckpt / "tokenizer_config.json").unlink()  # its bos/eos would fail first, naming that file
    else:
        tok = json.loads(text)
        tok["added_tokens"].append({"id": 600, "content": "<extra>", "special": True})
        path.write_text(json.dumps(tok))
    export_fails(ckpt, tmp_path, ckpt / "tokenizer.json", expected)


def test_missing_tokenizer_still_exports(ckpt, tmp_path):
    """Without tokenizer.json the program runs on token ids (run --tokens); that stays allowed."""
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (ckpt / f).unlink()
    out = tmp_path / "ids.hfs"
    cli("export", ckpt, "-o", out, "--context", "64", check=True)
    r = cli("run", "-m", out, "--tokens", "1,403", "-n", "3", "--temp", "0", "--ignore-eos", "--json", check=True)
    assert len(json.loads(r.stdout)["tokens"]) == 3


@pytest.mark.parametrize("value, word", [(float("nan"), "NaN"), (float("inf"), "+inf"), (float("-inf"), "-inf")])
@pytest.mark.parametrize("weights", ["keep", "f16", "int8"])
def test_non_finite_weight_names_tensor_and_element(ckpt, tmp_path, value, word, weights):
    path = ckpt / "model.safetensors"
    header, data = read_safetensors(path)
    entry = header[TENSOR]
    assert entry["dtype"] == "F32"
    rows, cols = entry["shape"]
    flat = 3 * cols + 7
    at = entry["data_offsets"][0] + 4 * flat
    data = data[:at] + struct.pack("<f", value) + data[at + 4:]
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - len(data)] + data)
    export_fails(ckpt, tmp_path, f"model.safetensors: tensor '{TENSOR}': element [3, 7] (element {flat}) is {word}",
                 extra=("--weights", weights))


def test_duplicate_tensor_name_in_header(ckpt, tmp_path):
    path = ckpt / "model.safetensors"
    header, data = read_safetensors(path)
    text = json.dumps(header)
    entry = json.dumps({TENSOR: header["model.norm.weight"]})[1:-1]  # a second, different entry named TENSOR
    write_safetensors(path, text[:-1] + ", " + entry + "}", data)
    export_fails(ckpt, tmp_path, "model.safetensors", f"tensor '{TENSOR}' is listed twice in the header")


def test_duplicate_tensor_across_shards(ckpt, tmp_path):
    header, data = read_safetensors(ckpt / "model.safetensors")
    (ckpt / "model.safetensors").unlink()
    # Shard 2 repeats the final norm; the index names shard 1 for every tensor.
    norm = header["model.norm.weight"]
    begin, end = norm["data_offsets"]
    write_safetensors(ckpt / "model-00001-of-00002.safetensors", json.dumps(header), data)
    write_safetensors(ckpt / "model-00002-of-00002.safetensors",
                      json.dumps({"model.norm.weight": dict(norm, data_offsets=[0, end - begin])}), data[begin:end])
    weight_map = {name: "model-00001-of-00002.safetensors" for name in header if name != "__metadata__"}
    weight_map["__dummy__"] = "model-00002-of-00002.safetensors"  # makes shard 2 part of the checkpoint
    (ckpt / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    export_fails(ckpt, tmp_path, "tensor 'model.norm.weight' is stored in both",
                 "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
