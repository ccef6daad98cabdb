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

from conftest import ROOT, cli
from test_serve import Server, need_node, post, program  # noqa: F401 (program: a fixture, 4 sequences)

USER = [{"role": "user", "content": "Answer yes or no."}]


@pytest.fixture(scope="module")
def server(program, tmp_path_factory):  # noqa: F811
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
    out = json.loads(r.stdout)
    for (kind, body), result in zip(requests, out):
        assert "error" not in result, (body, result)
    return out


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
    ("guided_choice", ["cat", "naïve", "a \"quoted\" one"], lambda t: t in ("cat", "naïve", 'a "quoted" one')),
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
                requests.append((kind, {**base, "model": "default", "max_tokens": 40, "temperature": 1.0, "seed": seed,
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


def log_softmax(row):
    m = max(row)
    z = m + math.log(sum(math.exp(v - m) for v in row if v != -math.inf))
    return [v - z for v in row]


def dumped_rows(program, tmp_path, prompt, n):
    """The logits each of `n` greedy tokens was sampled from, as `hfstatic run --dump-logits` writes them."""
    path = tmp_path / "logits.f32"
    cli("run", "-m", program, "-p", prompt, "-n", n, "--temp", 0, "--dump-logits", path, check=True)
    data = path.read_bytes()
    vocab = len(data) // 4 // n
    assert vocab * 4 * n == len(data)
    floats = struct.unpack(f"<{vocab * n}f", data)
    return [list(floats[i * vocab:(i + 1) * vocab]) for i in range(n)]


def test_logprobs_are_the_processed_distribution(server, program, tmp_path):  # noqa: F811
    """Completions' logprobs (k = 3) and chat's (top_logprobs = 3, whole and streamed) against a hand
    log-softmax of the logits `hfstatic run` sampled from; with logit_bias and presence_penalty, against the
    hand-processed logits (bias added, penalty subtracted for tokens of the prompt) — before temperature, so
    a greedy request reports the model's confidence."""
    prompt = "Once upon a time"
    rows = dumped_rows(program, tmp_path, prompt, 4)
    want = [log_softmax(r) for r in rows]
    requests = [("completion", {"model": "default", "prompt": prompt, "max_tokens": 4, "temperature": 0, "logprobs": 3}),
                ("completion", {"model": "default", "prompt": prompt, "max_tokens": 4, "temperature": 0, "logprobs": 3,
                                "stream": True}),
                ("completion", {"model": "default", "prompt": prompt, "max_tokens": 4, "temperature": 0.7, "seed": 3,
                                "logprobs": 0})]
    got = send(server, tmp_path, requests)
    lp = got[0]["response"]["choices"][0]["logprobs"]
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == 4
    for step, (chosen, top) in enumerate(zip(lp["token_logprobs"], lp["top_logprobs"])):
        best = sorted(range(len(want[step])), key=lambda i: (-want[step][i], i))[:3]
        assert chosen == pytest.approx(want[step][best[0]], abs=1e-4), step  # greedy: the best token
        assert sorted(top.values(), reverse=True) == pytest.approx([want[step][i] for i in best], abs=1e-4), step
    assert "".join(lp["tokens"]).replace("\u2581", " ").strip() == got[0]["response"]["choices"][0]["text"].strip()
    streamed = [c["choices"][0]["logprobs"] for c in got[1]["chunks"] if c["choices"] and c["choices"][0].get("logprobs")]
    assert sum((s["token_logprobs"] for s in streamed), []) == pytest.approx(lp["token_logprobs"], abs=1e-4)
    assert [o for s in streamed for o in s["text_offset"]] == lp["text_offset"]
    # Sampled at temperature 0.7 with k = 0: each token's logprob, no alternatives; still before temperature.
    sampled = got[2]["response"]["choices"][0]["logprobs"]
    assert len(sampled["token_logprobs"]) == 4 and all(t == {} for t in sampled["top_logprobs"])
    assert sampled["token_logprobs"][0] <= 0

    # Chat: the template's prompt; one step, greedy, its first token's alternatives from the hand computation
    # over the logits `run` gives for the rendered prompt.
    status, tok, _ = post(server.url, "/tokenize", {"content": prompt, "add_special": True}, key=None)
    assert status == 200
    ids = tok["tokens"]
    bias_id = sorted(range(len(want[0])), key=lambda i: -want[0][i])[5]  # the 6th most likely: +3 lifts it
    processed = list(rows[0])
    processed[bias_id] += 3.0
    for t in set(ids):
        processed[t] -= 0.5
    biased = log_softmax(processed)
    best = sorted(range(len(biased)), key=lambda i: (-biased[i], i))[:5]
    requests = [("chat", {"model": "default", "messages": USER, "max_tokens": 3, "temperature": 0, "logprobs": True,
                          "top_logprobs": 2}),
                ("chat", {"model": "default", "messages": USER, "max_tokens": 3, "temperature": 0, "logprobs": True,
                          "top_logprobs": 2, "stream": True}),
                ("completion", {"model": "default", "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": 5,
                                "logit_bias": {str(bias_id): 3}, "presence_penalty": 0.5})]
    got = send(server, tmp_path, requests)
    content = got[0]["response"]["choices"][0]["logprobs"]["content"]
    assert len(content) == 3
    for entry in content:
        assert entry["logprob"] == pytest.approx(entry["top_logprobs"][0]["logprob"], abs=1e-6)  # greedy: the best
        assert len(entry["top_logprobs"]) == 2 and entry["top_logprobs"][0]["logprob"] >= entry["top_logprobs"][1]["logprob"]
        assert bytes(entry["bytes"]).decode(errors="replace") == entry["token"] or entry["token"].startswith("bytes:")
    streamed = [e for c in got[1]["chunks"] if c["choices"] and c["choices"][0].get("logprobs")
                for e in c["choices"][0]["logprobs"]["content"]]
    # (Within float noise: the second request forks the first's cached prompt, summing in another order.)
    assert [e["logprob"] for e in streamed] == pytest.approx([e["logprob"] for e in content], abs=1e-4)
    top = got[2]["response"]["choices"][0]["logprobs"]["top_logprobs"][0]
    assert sorted(top.values(), reverse=True) == pytest.approx([biased[i] for i in best], abs=1e-4)


def test_logprobs_under_a_constraint_cover_only_allowed_tokens(server, tmp_path):
    got = send(server, tmp_path, [("completion", {"model": "default", "prompt": "Pet: ", "max_tokens": 5, "temperature": 0,
                                                  "logprobs": 5, "guided_choice": ["cat", "dog"]})])
    choice = got[0]["response"]["choices"][0]
    assert choice["text"] in ("cat", "dog")
    first = choice["logprobs"]["top_logprobs"][0]
    # Masked tokens are -inf, so never listed; the allowed ones start a choice and share the whole mass.
    assert first and all(("cat".startswith(t.lstrip("\u2581")) or "dog".startswith(t.lstrip("\u2581"))) for t in first), first
    assert sum(math.exp(v) for v in first.values()) <= 1 + 1e-5


def test_n_choices_fork_one_prompt_each_with_its_own_seed(server, tmp_path):
    """n = 3 sampled with seed 11: choice i is what n = 1 with seed 11 + i answers; choices 1 and 2 fork the
    first's prefilled prompt (the cached-token counter grows by their shared prefix). Streamed n = 2 chat:
    chunks carry each choice's index and the texts equal the whole answer's."""
    prompt = "A little bird sang a song about the sun and the"
    status, tok, _ = post(server.url, "/tokenize", {"content": prompt, "add_special": True}, key=None)
    before = server.metrics()["hfstatic_cached_prompt_tokens_total"]
    body = {"model": "default", "prompt": prompt, "max_tokens": 12, "temperature": 1.0, "seed": 11}
    got = send(server, tmp_path, [("completion", {**body, "n": 3})])
    forked = server.metrics()["hfstatic_cached_prompt_tokens_total"] - before
    assert forked >= 2 * (len(tok["tokens"]) - 1), (forked, len(tok["tokens"]))
    answer = got[0]["response"]
    assert [c["index"] for c in answer["choices"]] == [0, 1, 2]
    assert answer["usage"]["prompt_tokens"] == len(tok["tokens"])
    assert answer["usage"]["completion_tokens"] == sum(12 if c["finish_reason"] == "length" else 0 for c in answer["choices"]) \
        or all(c["finish_reason"] in ("stop", "length") for c in answer["choices"])
    singles = send(server, tmp_path, [("completion", {**body, "seed": 11 + i}) for i in range(3)])
    texts = [c["text"] for c in answer["choices"]]
    assert texts == [s["response"]["choices"][0]["text"] for s in singles]
    assert len(set(texts)) > 1, texts
    chat = {"model": "default", "messages": USER, "max_tokens": 8, "temperature": 1.0, "seed": 5, "n": 2}
    got = send(server, tmp_path, [("chat", chat), ("chat", {**chat, "stream": True})])
    whole = [c["message"]["content"] for c in got[0]["response"]["choices"]]
    streamed = ["", ""]
    finishes = [None, None]
    for c in got[1]["chunks"]:
        for ch in c["choices"]:
            streamed[ch["index"]] += ch["delta"].get("content") or ""
            finishes[ch["index"]] = ch["finish_reason"] or finishes[ch["index"]]
    assert streamed == whole and all(finishes), (streamed, whole, finishes)
