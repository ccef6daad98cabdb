"""Tool calling through the npm `openai` client, with the real chat templates of the three call formats
(tests/chat/templates: Qwen 2.5's Hermes <tool_call>, Llama 3.2's JSON, Mistral Nemo's [TOOL_CALLS]) on
stories260K: the template shows the model its functions, the call is constrained by a grammar built from
their schemas, so a chosen call always parses into tool_calls (whole and streamed), and a tool message fed
back renders. One small server per format (context 2048, 2 sequences); a few dozen tokens per request.
Cost: ~10 s.
"""
import json
import shutil
import subprocess

import pytest

from conftest import ROOT, STORIES, cli
from test_serve import Server, need_node

# Small on purpose: the templates spell the tools into the prompt.
TOOLS = [
    {"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]}},
        "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "time", "parameters": {
        "type": "object", "properties": {"zone": {"enum": ["utc", "local"]}}, "required": ["zone"],
        "additionalProperties": False}}},
]
USER = [{"role": "user", "content": "Weather in Paris?"}]


def check_call(call):
    """A call as OpenAI shapes it, its arguments valid against its function's schema."""
    assert call["type"] == "function" and len(call["id"]) == 9
    args = json.loads(call["function"]["arguments"])
    if call["function"]["name"] == "weather":
        assert set(args) == {"city", "unit"} and isinstance(args["city"], str) and len(args["city"]) <= 8
        assert args["unit"] in ("c", "f")
    else:
        assert call["function"]["name"] == "time" and args == {"zone": args["zone"]} and args["zone"] in ("utc", "local")
    return args


@pytest.fixture(scope="module", params=["qwen2_5", "llama3_2", "mistral_nemo"])
def server(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(request.param)
    for f in ["generation_config.json", "model.safetensors", "tokenizer.json", "special_tokens_map.json"]:
        shutil.copy(STORIES / f, d / f)
    # The templates' tool preambles run to ~1300 of stories260K's tokens: its positions raised past its 512
    # (RoPE extends; the text is nonsense either way, and the grammar makes the calls parse).
    config = json.loads((STORIES / "config.json").read_text())
    config["max_position_embeddings"] = 2048
    (d / "config.json").write_text(json.dumps(config))
    cfg = json.loads((STORIES / "tokenizer_config.json").read_text())
    cfg["chat_template"] = (ROOT / "tests" / "chat" / "templates" / f"{request.param}.jinja").read_text()
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    program = d / "tools.hfs"
    cli("export", d, "-o", program, "--sequences", "2", "--context", "2048", "--prefill-chunk", "64", check=True)
    s = Server(program, d, "--parallel", "2")
    yield s
    assert s.stop() == 0, s.log_path.read_text()[-3000:]


def send(server, tmp_path, requests):
    need_node()
    path = tmp_path / "requests.json"
    path.write_text(json.dumps([{"kind": "chat", "body": b} for b in requests]))
    r = subprocess.run(["node", str(ROOT / "tests" / "server" / "openai_requests.js"), "--url", server.url,
                        "--requests", str(path)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for body, result in zip(requests, out):
        assert "error" not in result, (body, result, server.log_path.read_text()[-2000:])
    return out


def test_tool_calls_parse_whole_and_streamed_and_a_tool_message_renders(server, tmp_path):
    base = {"model": "default", "messages": USER, "tools": TOOLS, "max_tokens": 120, "temperature": 1.0}
    requests = [{**base, "tool_choice": "required", "seed": 1},
                {**base, "tool_choice": "required", "seed": 2},
                {**base, "tool_choice": {"type": "function", "function": {"name": "time"}}, "seed": 3},
                {**base, "tool_choice": "required", "seed": 4, "stream": True},
                {**base, "tool_choice": "none", "seed": 5, "max_tokens": 8},
                {**base, "seed": 6},
                {**base, "tool_choice": "required", "seed": 4}]
    got = send(server, tmp_path, requests)
    calls = []
    for result in got[:3]:
        choice = result["response"]["choices"][0]
        assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None, choice
        assert len(choice["message"]["tool_calls"]) == 1
        calls.append(choice["message"]["tool_calls"][0])
        check_call(calls[-1])
    assert calls[2]["function"]["name"] == "time"
    # Streamed as OpenAI streams a call: a first tool_calls delta with its id and name, then its arguments'
    # text in pieces; reassembled, the call the same seed gives whole; then finish_reason tool_calls.
    deltas = [c["choices"][0] for c in got[3]["chunks"] if c["choices"]]
    pieces = [t for d in deltas for t in (d["delta"].get("tool_calls") or [])]
    assert pieces and all(p["index"] == 0 for p in pieces), deltas
    assert pieces[0]["id"] and pieces[0]["function"]["name"] and pieces[0]["function"]["arguments"] == ""
    assert all("id" not in p and "name" not in p["function"] for p in pieces[1:]), pieces
    streamed = {"id": pieces[0]["id"], "type": "function", "function": {
        "name": pieces[0]["function"]["name"], "arguments": "".join(p["function"]["arguments"] for p in pieces)}}
    check_call(streamed)
    whole = got[6]["response"]["choices"][0]["message"]["tool_calls"][0]
    assert streamed["function"]["name"] == whole["function"]["name"]
    assert json.loads(streamed["function"]["arguments"]) == json.loads(whole["function"]["arguments"])
    assert deltas[-1]["finish_reason"] == "tool_calls"
    assert not any(d["delta"].get("content") for d in deltas), deltas
    # none: plain text, no calls.
    choice = got[4]["response"]["choices"][0]
    assert "tool_calls" not in choice["message"] or not choice["message"]["tool_calls"]
    # auto: text, or a call that parses.
    choice = got[5]["response"]["choices"][0]
    if choice["finish_reason"] == "tool_calls":
        check_call(choice["message"]["tool_calls"][0])
    else:
        assert isinstance(choice["message"]["content"], str)
    # The round trip: the call and the tool's answer fed back (the template renders both) and a reply.
    call = calls[0]
    messages = USER + [{"role": "assistant", "content": None, "tool_calls": [call]},
                       {"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], "content": "20 degrees"}]
    got = send(server, tmp_path, [{**base, "messages": messages, "seed": 7, "max_tokens": 6, "tool_choice": "none"},
                                  {**base, "seed": 7, "max_tokens": 6, "tool_choice": "none"}])
    with_result, without = got[0]["response"], got[1]["response"]
    assert with_result["choices"][0]["message"]["content"] is not None
    # The call and the result are in the prompt: it grew by at least their text's worth of tokens.
    assert with_result["usage"]["prompt_tokens"] > without["usage"]["prompt_tokens"] + len("20 degrees"), (with_result, without)
