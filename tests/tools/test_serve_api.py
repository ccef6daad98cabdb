"""What real clients send to `hfstatic serve`, through the npm `openai` client: every constraint field of
OpenAI, llama.cpp and vLLM (each honoured: the reply matches it), log probabilities checked against a hand
computation from the logits `hfstatic run --dump-logits` wrote, and n > 1 choices. One server (stories260K,
4 sequences, context 256) for the whole file; every request asks for a few tokens. Cost: ~10 s.
"""
import json
import math
import re
import struct
import subprocess

import pytest

from conftest import ROOT, cli, export_with_chat_template
from test_serve import Server, need_node, post

TEMPLATE = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
USER = [{"role": "user", "content": "Answer yes or no."}]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return export_with_chat_template(tmp_path_factory.mktemp("api"), TEMPLATE)


@pytest.fixture(scope="module")
def server(program, tmp_path_factory):
    s = Server(program, tmp_path_factory.mktemp("log"), "--parallel", "4")
    yield s
    assert s.stop() == 0, s.log_path.read_text()[-3000:]


def send(server, tmp_path, requests):
    """Each of `requests` ((kind, body) pairs) through the openai client; the results in order."""
    need_node()
    path = tmp_path / f"requests-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps([{"kind": k, "body": b} for k, b in requests]))
    r = subprocess.run(["node", str(ROOT / "tests" / "server" / "openai_requests.js"), "--url", server.url,
                        "--requests", str(path)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def text_of(kind, result):
    """The first choice's text, whole or streamed."""
    if "chunks" in result:
        key = (lambda c: c["delta"].get("content") or "") if kind == "chat" else (lambda c: c.get("text") or "")
        return "".join(key(c["choices"][0]) for c in result["chunks"] if c["choices"])
    choice = result["response"]["choices"][0]
    return choice["message"]["content"] if kind == "chat" else choice["text"]


# (field, value, a check of the reply's text). Each is sent to both endpoints, sampled (temperature 1) with
# two seeds, one of the four streamed.
CONSTRAINTS = [
    ("grammar", 'root ::= "yes" | "no"', lambda t: t in ("yes", "no")),
    ("json_schema", {"enum": ["red", "green"]}, lambda t: json.loads(t) in ("red", "green")),
    ("guided_json", {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                     "additionalProperties": False}, lambda t: isinstance(json.loads(t)["ok"], bool)),
    ("guided_regex", "[0-9]{3}-[a-c]", lambda t: re.fullmatch("[0-9]{3}-[a-c]", t)),
    ("guided_choice", ["cat", "dog", "a \"quoted\" one"], lambda t: t in ("cat", "dog", 'a "quoted" one')),
    ("guided_grammar", 'root ::= "x" [0-9] [0-9]?', lambda t: re.fullmatch("x[0-9][0-9]?", t)),
    ("structured_outputs", {"choice": ["left", "right"]}, lambda t: t in ("left", "right")),
    ("response_format", {"type": "json_schema", "json_schema": {"name": "n", "schema": {"enum": [1, 2]}}},
     lambda t: json.loads(t) in (1, 2)),
    ("response_format", {"type": "json_object", "schema": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}},
     lambda t: all(isinstance(v, bool) for v in json.loads(t))),
]


def test_constraint_fields_are_honoured(server, tmp_path):
    requests, checks = [], []
    for field, value, check in CONSTRAINTS:
        for kind, base in [("completion", {"prompt": "Answer: "}), ("chat", {"messages": USER})]:
            for seed, stream in [(1, False), (2, kind == "chat")]:
                requests.append((kind, {**base, "model": "chat", "max_tokens": 40, "temperature": 1.0, "seed": seed,
                                        "stream": stream, field: value}))
                checks.append((field, check))
    for (kind, body), (field, check), result in zip(requests, checks, send(server, tmp_path, requests)):
        assert "error" not in result, (body, result)
        text = text_of(kind, result)
        assert check(text), (field, kind, text)
        finish = [c["choices"][0]["finish_reason"] for c in result["chunks"] if c["choices"]][-1] if "chunks" in result \
            else result["response"]["choices"][0]["finish_reason"]
        assert finish == "stop", (field, kind, text, finish)


def test_the_issue_example_answers_yes_or_no(server):
    """The llama.cpp habit verbatim: a grammar on /v1/completions; greedy, so the one answer the model prefers."""
    got, j, _ = post(server.url, "/v1/completions", {"prompt": "Answer: ", "grammar": 'root ::= "yes" | "no"',
                                                     "temperature": 0}, key=None)
    assert got == 200 and j["choices"][0]["text"] in ("yes", "no"), j
    # Without the grammar the same prompt answers free text (the grammar is what made the difference).
    got, free, _ = post(server.url, "/v1/completions", {"prompt": "Answer: ", "temperature": 0, "max_tokens": 8}, key=None)
    assert got == 200 and free["choices"][0]["text"] not in ("yes", "no"), free


@pytest.mark.parametrize("body,param,words", [
    ({"grammar": "root ::= undefined", "prompt": "x"}, "grammar", "'grammar'"),
    ({"guided_regex": "(", "prompt": "x"}, "guided_regex", "'guided_regex'"),
    ({"guided_json": {"type": "integer", "minimum": "a"}, "prompt": "x"}, "guided_json", "'guided_json'"),
    ({"guided_choice": [], "prompt": "x"}, "guided_choice", "non-empty array"),
    ({"grammar": 'root ::= "a"', "guided_regex": "a", "prompt": "x"}, "guided_regex", "'grammar'"),
    ({"guided_whitespace_pattern": " ", "guided_json": {"type": "object"}, "prompt": "x"}, "guided_whitespace_pattern",
     "refused rather than ignored"),
])
def test_bad_constraints_are_refused_by_name(server, body, param, words):
    got, j, _ = post(server.url, "/v1/completions", {**body, "max_tokens": 2}, key=None)
    assert got == 400 and j["error"]["param"] == param and words in j["error"]["message"], j
