"""Structured output end to end: `hfstatic run --json-object | --regex | --grammar` on a random-weight model
(stories260K's shapes and tokenizer, weights drawn afresh, so valid output never happens by chance); every
output is checked with Python's own json and re modules."""
import json
import re
import shutil
import struct

import numpy as np
import pytest

from conftest import STORIES, cli, require


@pytest.fixture(scope="module")
def random_program(tmp_path_factory):
    src = require(STORIES)
    d = tmp_path_factory.mktemp("random_model")
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json"):
        if (src / name).exists():
            shutil.copy(src / name, d / name)
    with open(src / "model.safetensors", "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header_bytes = f.read(n)
    header = json.loads(header_bytes)
    rng = np.random.default_rng(1234)
    data = bytearray()
    for name, t in sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                          key=lambda kv: kv[1]["data_offsets"][0]):
        assert t["dtype"] == "F32"
        count = int(np.prod(t["shape"]))
        data += (rng.standard_normal(count) * 0.5).astype("<f4").tobytes()
        assert len(data) == t["data_offsets"][1]
    with open(d / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        f.write(data)
    out = tmp_path_factory.mktemp("programs") / "random.hfs"
    cli("export", d, "-o", out, "--context", "512", check=True)
    return out


def run_json(program, *args):
    r = cli("run", "-m", program, "-p", "Once upon a time", "--json", *args, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


# Grammars whose every output ends within the token budget: each must finish and parse.
BOUNDED_JSON = r'''root ::= "{" ws "\"name\":" ws str "," ws "\"age\":" ws age "," ws "\"tags\":" ws tags ws "}"
str  ::= "\"" ( [a-zA-Z0-9 ] | "\\" ["\\n] | "\\u00" [0-9a-f] [0-9a-f] | [é中] ){0,12} "\""
age  ::= "0" | [1-9] [0-9]{0,2}
tags ::= "[" ( str ( "," ws str ){0,3} )? "]" | "null" | "true" | "false"
ws   ::= " "?
'''


def test_bounded_json_grammar_always_parses(random_program, tmp_path):
    g = tmp_path / "person.gbnf"
    g.write_text(BOUNDED_JSON, encoding="utf-8")
    for seed in range(40):
        j = run_json(random_program, "--grammar-file", g, "-n", "400", "--seed", seed, "--temp", "1.5")
        assert j["stop"] == "stop_token", j
        obj = json.loads(j["text"])
        assert set(obj) == {"name", "age", "tags"}
        assert isinstance(obj["name"], str) and isinstance(obj["age"], int)


def test_json_object_outputs_parse_or_are_cut_by_length(random_program):
    finished = 0
    for seed in range(40):
        j = run_json(random_program, "--json-object", "-n", "300", "--seed", seed, "--temp", "1.0")
        if j["stop"] == "stop_token":
            assert isinstance(json.loads(j["text"]), dict), j["text"]
            finished += 1
        else:
            assert j["stop"] == "max_tokens"
            assert j["text"].startswith("{")
    assert finished >= 5, f"only {finished} of 40 JSON objects finished within 300 tokens"


@pytest.mark.parametrize("pattern", [
    r"[a-c]{2,4}-\d{3}",
    r"(yes|no|maybe)\.",
    r"\w{1,5}( \w{1,5}){0,3}",
    r"(\+|-)?(0|[1-9]\d{0,4})(\.\d{1,2})?",
    r"[^\s\d]{3}é?",
])
def test_regex_outputs_fully_match(random_program, pattern):
    for seed in range(8):
        j = run_json(random_program, "--regex", pattern, "-n", "64", "--seed", seed, "--temp", "1.5")
        assert j["stop"] == "stop_token", j
        assert re.fullmatch(pattern, j["text"]), (pattern, j["text"])


def test_grammar_that_ends_only_past_max_tokens_stops_on_length_with_a_valid_prefix(random_program, tmp_path):
    g = tmp_path / "long.gbnf"
    g.write_text('root ::= [a-z]{40} "!"\n')
    for seed in range(4):
        j = run_json(random_program, "--grammar-file", g, "-n", "6", "--seed", seed)
        assert j["stop"] == "max_tokens"
        assert len(j["tokens"]) == 6
        assert re.fullmatch(r"[a-z]{1,40}", j["text"]), j["text"]


def test_bad_grammar_and_regex_are_clear_errors(random_program, tmp_path):
    g = tmp_path / "bad.gbnf"
    g.write_text('root ::= "a" value\n\nvalue "x"\n')
    r = cli("run", "-m", random_program, "-p", "x", "--grammar-file", g, check=False)
    assert "grammar line 3, column 7: expected '::=' after rule name \"value\"" in r.stderr
    r = cli("run", "-m", random_program, "-p", "x", "--regex", "a(?=b)", check=False)
    assert "--regex: regex: offset 2: group kind '(?=' is not supported" in r.stderr
    r = cli("run", "-m", random_program, "-p", "x", "--regex", "a", "--json-object", check=False)
    assert r.returncode != 0
