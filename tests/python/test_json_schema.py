"""Structured output from JSON Schemas (generate(json_schema=...), Engine.add(json_schema=...)): a random-weight
model, which never writes valid JSON by chance, generates 500+ documents over 29 schemas (nested objects,
arrays with bounds, enums, const, anyOf/oneOf, local $ref, formats, unicode and escapes, patterns anchored and
not, with alternation, bounded repetition and classes holding characters JSON escapes) with sampling; every
one must parse and validate against its schema by an independent validator (ajv, JSON Schema 2020-12, with
ajv-formats), the same run through the Engine with several constrained sequences sharing steps."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hfstatic

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = json.loads((ROOT / "tests" / "tools" / "data" / "json_schemas.json").read_text(encoding="utf-8"))
SEEDS = 18  # 29 schemas x 18 seeds = 522 documents


def closing_bias(program, schema):
    """logit_bias for the tokens holding '"' when the schema has a pattern. An unanchored side of a pattern is
    any characters, which a random model (some 500 tokens allowed at each step) would rarely end within
    max_new_tokens; the bias makes a string end soon wherever the grammar lets it end, and nowhere else (the
    mask still decides what is allowed)."""
    if "pattern" not in json.dumps(schema):
        return None
    tok = hfstatic.Tokenizer.from_program(program)
    return {i: 4.0 for i in range(tok.vocab_size) if '"' in tok.decode([i])}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("random_llama")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make-checkpoint"), "llama", str(d / "ckpt"), "--preset",
                    "tiny", "--seed", "21"], check=True, capture_output=True)
    return hfstatic.export(d / "ckpt", d / "random.hfs", context=512, sequences=4)


def validate(tmp_path, cases):
    """ajv's verdict on [{"schema", "text"}]: the failures (empty when every document is valid)."""
    if shutil.which("node") is None or not (ROOT / "node_modules" / "ajv").is_dir():
        pytest.fail("needs node and the npm packages (scripts/install-deps)")
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    r = subprocess.run(["node", str(ROOT / "tests" / "tools" / "validate_json.js"), str(path)], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["checked"] == len(cases)
    return out["failures"]


def test_every_generated_document_validates(program, tmp_path):
    runner = hfstatic.Runner(program)
    cases = []
    for i, schema in enumerate(SCHEMAS):
        bias = closing_bias(program, schema)
        for seed in range(SEEDS):
            text = runner.generate("Once upon a time", max_new_tokens=400, temperature=1.0, seed=seed,
                                   json_schema=schema, logit_bias=bias)
            runner.reset()
            cases.append({"schema": schema, "text": text, "where": f"schema {i} seed {seed}"})
    failures = validate(tmp_path, [{"schema": c["schema"], "text": c["text"]} for c in cases])
    assert not failures, [(cases[f["index"]]["where"], f["text"][:200], f["why"]) for f in failures[:5]]
    # The model is random: the documents vary (the constraint, not the model, makes them valid).
    assert len({c["text"] for c in cases}) > len(cases) // 2


def test_engine_sequences_each_follow_their_own_schema(program, tmp_path):
    e = hfstatic.Engine(program)
    picks = [0, 9, 13, 18]  # an object, anyOf, formats, nested objects: four sequences sharing steps
    prompt = [1, 403, 407]
    ids = {e.add(prompt, max_new_tokens=400, temperature=1.0, seed=s, json_schema=SCHEMAS[s]): s for s in picks}
    while not e.idle:
        e.step()
    tok = hfstatic.Tokenizer.from_program(program)
    cases = []
    for seq, s in ids.items():
        info = e.sequence(seq)
        assert info["stop"] == "stop_token", info
        tokens = [t for t in info["generated"] if t not in tok.eos_ids]  # the end token that closed it
        cases.append({"schema": SCHEMAS[s], "text": tok.decode(tokens)})
    assert not validate(tmp_path, cases)


BOUNDED = [
    {"type": "integer", "minimum": -5, "maximum": 120},
    {"type": "integer", "exclusiveMinimum": 99, "exclusiveMaximum": 1000},
    {"type": "integer", "minimum": 1.5, "maximum": 9.5},
    {"type": "integer", "maximum": -1000},
    {"type": "integer", "multipleOf": 7},
    {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 150},
                                      "score": {"type": "integer", "minimum": -10, "exclusiveMaximum": 11}},
     "required": ["age", "score"], "additionalProperties": False},
    {"type": "array", "items": {"type": "integer", "minimum": 1000, "maximum": 1999}, "minItems": 2, "maxItems": 4},
    {"type": "object", "properties": {f: {"type": "string", "format": f} for f in
                                      ("email", "hostname", "ipv4", "ipv6", "uri")},
     "required": ["email", "hostname", "ipv4", "ipv6", "uri"], "additionalProperties": False},
    {"allOf": [{"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 20}},
                "required": ["n"]},
               {"properties": {"tag": {"enum": ["a", "b"]}}, "required": ["tag"]}]},
    {"type": "array", "items": {"enum": ["red", "green", "blue", 1, None]}, "uniqueItems": True, "minItems": 2},
    {"type": "object", "properties": {"p": {"type": "number", "minimum": 0, "maximum": 1},
                                      "t": {"type": "number", "exclusiveMinimum": -40, "exclusiveMaximum": 60}},
     "required": ["p", "t"]},
    {"type": "object", "properties": {"f": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 2.25},
                                      "g": {"type": "number", "exclusiveMinimum": -1.5e-2, "maximum": 1e-1},
                                      "h": {"type": "number", "exclusiveMaximum": 1.0000000000000002}},
     "required": ["f", "g", "h"]},
]


def test_numeric_bounds_validate(program, tmp_path):
    """Integer and number bounds, multipleOf, network formats, allOf and uniqueItems: sampled documents (a random model under the constraint)
    all validate with ajv (ajv-formats for the formats). Cost: 12 schemas x 6 seeds, ~7 s."""
    runner = hfstatic.Runner(program)
    cases = []
    for schema in BOUNDED:
        for seed in range(6):
            text = runner.generate("Once upon a time", max_new_tokens=400, temperature=1.0, seed=seed,
                                   json_schema=schema)
            cases.append({"schema": schema, "text": text})
    failures = validate(tmp_path, cases)
    assert not failures, failures[:5]
    assert len({c["text"] for c in cases}) > len(cases) // 2


def test_bad_schemas_are_errors_naming_the_keyword(program):
    runner = hfstatic.Runner(program)
    with pytest.raises(hfstatic.Error) as err:
        runner.generate("x", json_schema={"type": "integer", "not": {"const": 0}}, temperature=0)
    assert 'unsupported keyword "not"' in str(err.value) and "json_schema" in str(err.value)
    with pytest.raises(hfstatic.Error) as err:
        runner.generate("x", json_schema="{not json", temperature=0)
    assert "not valid JSON" in str(err.value)
    with pytest.raises(hfstatic.Error) as err:
        runner.generate("x", json_schema={"type": "integer"}, regex="[0-9]+", temperature=0)
    assert "exclude each other" in str(err.value)
