"""`hfstatic serve` end to end: a live server on loopback (a free port) driven by real clients — the npm
`openai` client, headless Chromium on the chat page, raw sockets for bad input and disconnects — on
stories260K exported for 4 sequences. Every answer is checked against an independent reference: greedy
text against `hfstatic run`, streamed against whole, concurrent against solo, status codes against the API.
"""
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import CLI, ROOT, STORIES, cli

NODE_MODULES = ROOT / "node_modules"
TEMPLATE = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
PROMPT = "Once upon a time"


def need_node():
    if shutil.which("node") is None or not (NODE_MODULES / "openai").is_dir():
        pytest.fail("node and the npm packages are needed (openai, playwright-core): run scripts/install-deps")


@pytest.fixture(scope="module")
def program(stories_dir, tmp_path_factory):
    """stories260K with a small chat template, 4 sequences, context 256, chunk 16."""
    d = tmp_path_factory.mktemp("serve")
    for f in ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "special_tokens_map.json"]:
        (d / f).write_bytes((STORIES / f).read_bytes())
    cfg = json.loads((STORIES / "tokenizer_config.json").read_text())
    cfg["chat_template"] = TEMPLATE
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    out = d / "stories4.hfs"
    cli("export", d, "-o", out, "--sequences", "4", "--context", "256", "--prefill-chunk", "16", check=True)
    return out


class Server:
    """`hfstatic serve` on a free port; its log goes to a file (a pipe nobody reads would fill and block it)."""

    def __init__(self, program, tmp, *args):
        self.log_path = Path(tmp) / f"serve-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([CLI, "serve", "-m", str(program), "--port", "0", *map(str, args)],
                                     stdout=self.log, stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            text = self.log_path.read_text()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if m and "ready:" in text:
                self.url = f"http://127.0.0.1:{m.group(1)}"
                return
            assert self.proc.poll() is None, f"serve exited early:\n{text}"
            time.sleep(0.05)
        pytest.fail("serve did not become ready:\n" + self.log_path.read_text())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.proc.wait(timeout=30)
        else:
            rc = self.proc.returncode
        self.log.close()
        return rc

    def rss_kib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def metrics(self, key=None):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        text = urllib.request.urlopen(urllib.request.Request(self.url + "/metrics", headers=headers), timeout=10).read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values


@pytest.fixture(scope="module")
def server(program, tmp_path_factory):
    s = Server(program, tmp_path_factory.mktemp("log"), "--parallel", "4", "--api-key", "secret",
               "--max-queue", "64", "--max-body", "65536")
    yield s
    assert s.stop() == 0, s.log_path.read_text()[-3000:]


@pytest.fixture(scope="module")
def slow_server(program, tmp_path_factory):
    """20 ms per step: a reply takes seconds, so clients can stop or vanish mid-stream."""
    s = Server(program, tmp_path_factory.mktemp("log"), "--parallel", "4", "--max-queue", "128", "--step-delay-ms", "20")
    yield s
    assert s.stop() == 0, s.log_path.read_text()[-3000:]


def post(url, path, body, key="secret", raw=None, timeout=30):
    """(status, parsed JSON body, headers) of a POST; `raw` sends bytes as they are."""
    data = raw if raw is not None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url + path, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read()), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}"), e.headers


def node(script, *args, timeout=120):
    need_node()
    r = subprocess.run(["node", str(ROOT / "tests" / "server" / script), *map(str, args)], capture_output=True,
                       text=True, timeout=timeout, cwd=ROOT)
    assert r.returncode == 0, f"{script}: rc {r.returncode}\n{r.stderr}"
    return json.loads(r.stdout)


def test_openai_client(server, program):
    out = node("openai_client.js", "--url", server.url, "--api-key", "secret", "--prompt", PROMPT)
    assert out["models"] == ["stories4"]
    # Greedy completions equal `hfstatic run` on the same program and prompt.
    ref = json.loads(cli("run", "-m", program, "-p", PROMPT, "-n", 30, "--temp", 0, "--json", check=True).stdout)
    assert out["completion"]["text"] == ref["text"] and ref["text"]
    assert out["completion"]["finish"] == "length"
    assert out["completion"]["usage"]["completion_tokens"] == 30
    assert out["completion"]["usage"]["prompt_tokens"] == ref["stats"]["prompt_tokens"]
    assert out["completion_stream"]["text"] == ref["text"]
    assert out["completion_stream"]["chunks"] >= 1
    # Chat: the template's rendering, the same text whole and streamed, usage in the last chunk.
    assert out["chat"]["object"] == "chat.completion" and out["chat"]["role"] == "assistant"
    assert out["chat"]["text"] and out["chat"]["text"] == out["chat_stream"]["text"]
    assert out["chat_stream"]["role"] == "assistant" and out["chat_stream"]["finish"] == "length"
    assert out["chat_stream"]["usage"]["completion_tokens"] == 24 == out["chat"]["usage"]["completion_tokens"]
    # Stop strings: the text up to the stop string's first occurrence, never the stop string itself.
    stop = out["stop_string"]
    want = ref["text"][:ref["text"].index(stop)]
    assert out["stopped"]["text"] == want and out["stopped"]["finish"] == "stop"
    assert out["stopped_stream"]["text"] == want and out["stopped_stream"]["finish"] == "stop"
    assert out["stopped"]["usage"]["completion_tokens"] < 30
    assert out["max_tokens"] == {"finish": "length", "usage": out["max_tokens"]["usage"]}
    assert out["max_tokens"]["usage"]["completion_tokens"] == 7
    # Seeded sampling is reproducible (alone or beside another request); another seed differs.
    assert out["seed_a"] == out["seed_b"] and out["seed_a"] != out["seed_other"]
    # The second turn reuses the first turn's prompt from the cache.
    t1, t2 = out["turn1_usage"], out["turn2_usage"]
    assert t2["prompt_tokens"] > t1["prompt_tokens"]
    assert t2["prompt_tokens_details"]["cached_tokens"] >= t1["prompt_tokens"] - 1, (t1, t2)
    m = server.metrics("secret")
    assert m["hfstatic_cached_prompt_tokens_total"] >= t2["prompt_tokens_details"]["cached_tokens"]
    assert m["hfstatic_time_to_first_token_seconds_count"] >= 10


@pytest.mark.parametrize("path,body,key,status,param,words", [
    ("/v1/chat/completions", None, "secret", 400, None, "not valid JSON"),
    ("/v1/chat/completions", {"messages": "hi"}, "secret", 400, "messages", "must be an array"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]}, "secret", 400, "messages[0].content", "string"),
    ("/v1/completions", {"prompt": PROMPT, "max_tokens": "ten"}, "secret", 400, "max_tokens", "integer"),
    ("/v1/completions", {"prompt": PROMPT, "temperature": -1}, "secret", 400, "temperature", "[0, 2]"),
    ("/v1/completions", {"prompt": PROMPT, "stream": "yes"}, "secret", 400, "stream", "boolean"),
    ("/v1/completions", {"prompt": PROMPT, "n": 5}, "secret", 400, "n", "--parallel"),
    ("/v1/completions", {"prompt": PROMPT, "logprobs": 30}, "secret", 400, "logprobs", "[0, 20]"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
     "secret", 400, "tools", "'tools[0]' must be"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
     "json_schema": {"name": "n", "schema": {"type": "integer", "not": {"const": 0}}}}},
     "secret", 400, "response_format", 'unsupported keyword "not"'),
    ("/v1/completions", {"prompt": PROMPT, "model": "gpt-4"}, "secret", 404, "model", "does not exist"),
    ("/v1/completions", {"prompt": " ".join(["Once upon a time"] * 80)}, "secret", 400, "prompt", "context is 256"),
    ("/v1/completions", {"prompt": PROMPT}, "wrong", 401, None, "invalid API key"),
    ("/v1/completions", {"prompt": PROMPT}, None, 401, None, "missing API key"),
    ("/v1/completions", {"prompt": PROMPT, "logit_bias": {"99999": 1}}, "secret", 400, "logit_bias", "vocabulary"),
])
def test_bad_input(server, path, body, key, status, param, words):
    got, j, _ = post(server.url, path, body, key=key, raw=b"{not json" if body is None else None)
    assert got == status, j
    assert words in j["error"]["message"], j
    assert j["error"]["param"] == param
    assert j["error"]["type"]
    # The server keeps serving.
    ok, j, _ = post(server.url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 2, "temperature": 0})
    assert ok == 200 and j["usage"]["completion_tokens"] == 2


def test_oversized_body_and_extras(server):
    got, j, _ = post(server.url, "/v1/completions", None, raw=b'{"prompt": "' + b"a" * 70000 + b'"}')
    assert got == 413 and "65536 bytes" in j["error"]["message"]
    # Informational fields real clients send are accepted.
    got, j, _ = post(server.url, "/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 3,
                                                         "user": "u", "metadata": {"a": "b"}, "store": False, "n": 1})
    assert got == 200 and j["choices"][0]["message"]["content"] is not None
    # The page and /health need no key; everything else does.
    assert urllib.request.urlopen(server.url + "/health", timeout=10).status == 200
    page = urllib.request.urlopen(server.url + "/", timeout=10).read().decode()
    assert page == (ROOT / "src" / "server" / "web" / "index.html").read_text()
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(server.url + "/metrics", timeout=10)
    assert e.value.code == 401
    got, j, _ = post(server.url, "/tokenize", {"content": PROMPT})
    assert got == 200
    got, d, _ = post(server.url, "/detokenize", {"tokens": j["tokens"]})
    assert got == 200 and d["content"].endswith(PROMPT)


def test_web_chat_page(slow_server):
    if not Path(os.environ.get("HFS_CHROMIUM", "/usr/bin/chromium")).exists():
        pytest.fail("chromium is needed for the chat page test: run scripts/install-deps (or set HFS_CHROMIUM)")
    out = node("web_chat.js", slow_server.url, timeout=150)
    assert out["title"] == "hfstatic chat" and out["model"] == "stories4"
    assert out["page_errors"] == []
    assert len(out["reply"]) > 10
    # The reply grew in several steps (streamed), and the page reported the token count and rate.
    assert len([n for n in out["lengths"] if n > 0]) >= 3, out["lengths"]
    assert "tokens" in out["status"] and "tok/s" in out["status"], out["status"]
    # Stopped mid-stream: said so, and the text stopped growing.
    assert out["stopped_status"].startswith("stopped"), out["stopped_status"]
    assert out["after_stop_length"] == out["stopped_reply_length"] > 20
    # An error mid-stream: shown in the reply's bubble after the text that came, said in the status (not
    # "0 tokens"); the next turn's request carries neither the error nor the failed exchange.
    assert "Half an answer" in out["midstream_bubble"] and "the step failed" in out["midstream_bubble"], out
    assert out["midstream_bubble_is_error"] and "error" in out["midstream_status"], out["midstream_status"]
    assert out["after_error_request"]["messages"] == [{"role": "user", "content": "Second question"}], out["after_error_request"]
    assert "tokens" in out["after_error_status"], out["after_error_status"]
    # Past the context: the page says so and offers to drop the oldest turn; the retry is sent without it.
    assert out["overflow_status"].startswith("context full"), out["overflow_status"]
    assert "context" in out["overflow_bubble"] and out["overflow_offers_drop"], out["overflow_bubble"]
    assert [m["role"] for m in out["retry_request"]["messages"]] == ["user"], out["retry_request"]
    assert out["retry_request"]["messages"][0]["content"].startswith("One day"), out["retry_request"]
    assert out["retry_errors"] == 0 and out["dropped"] == 2 and "tokens" in out["retry_status"], out
    deadline = time.time() + 5
    while slow_server.metrics()["hfstatic_busy_sequences"] != 0 and time.time() < deadline:
        time.sleep(0.05)
    assert slow_server.metrics()["hfstatic_busy_sequences"] == 0


def test_load_concurrent_answers_match_solo(server):
    need_node()
    p = subprocess.Popen(["node", str(ROOT / "tests" / "server" / "load.js"), "--url", server.url, "--clients", "16",
                          "--requests", "200", "--api-key", "secret", "--checkpoint-after", "100"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = p.stderr.readline()
    assert line.strip() == "checkpoint", line + p.stderr.read()
    rss_100 = server.rss_kib()
    p.stdin.write("\n")
    p.stdin.flush()
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    r = json.loads(out)
    rss_end = server.rss_kib()
    assert r["answered"] == 200 and r["failures"] == 0 and r["mismatches"] == 0, r
    assert abs(rss_end - rss_100) <= 0.05 * rss_100, (rss_100, rss_end)
    m = server.metrics("secret")
    assert m["hfstatic_busy_sequences"] == 0 and m["hfstatic_queue_length"] == 0


def stream_request(url, body):
    """A raw HTTP/1.1 streaming request on its own socket; returns the socket once the response began."""
    s = socket.create_connection((url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1])), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    return s


def test_cancellation_frees_every_sequence(slow_server):
    n = 100
    got_data = []

    def client(i):
        s = stream_request(slow_server.url, {"prompt": PROMPT, "max_tokens": 250, "stream": True, "temperature": 0})
        buf = b""
        while b"data: {" not in buf and b": keep-alive" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        got_data.append(b"200 OK" in buf)
        s.close()  # gone mid-stream (running, or still queued)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(got_data) == n and all(got_data)
    # Generating to the end would take the running four 250 steps × 20 ms = 5 s, and the rest 25 × that;
    # cancelled, every sequence is free within a few writes' time.
    deadline = time.time() + 3
    m = slow_server.metrics()
    while (m["hfstatic_busy_sequences"] or m["hfstatic_queue_length"]) and time.time() < deadline:
        time.sleep(0.1)
        m = slow_server.metrics()
    assert m["hfstatic_busy_sequences"] == 0 and m["hfstatic_queue_length"] == 0, m
    assert m["hfstatic_cancelled_requests_total"] >= n
    # Still serving, with every slot back.
    got, j, _ = post(slow_server.url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 3}, key=None)
    assert got == 200


def read_stream(s):
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk
        if b"data: [DONE]" in buf:
            return buf


def test_queue_full_and_sigterm(program, tmp_path):
    srv = Server(program, tmp_path, "--parallel", "1", "--max-queue", "1", "--step-delay-ms", "10")
    try:
        body = {"prompt": PROMPT, "max_tokens": 60, "stream": True, "temperature": 0}
        running = stream_request(srv.url, body)
        time.sleep(0.3)
        queued = stream_request(srv.url, body)
        time.sleep(0.3)
        got, j, headers = post(srv.url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 2}, key=None)
        assert got == 429 and headers["Retry-After"] == "1" and "--max-queue" in j["error"]["message"], j
        srv.proc.send_signal(signal.SIGTERM)
        # In-flight and queued streams finish; /health says draining meanwhile; new requests are refused.
        # The signal is taken by the server's own thread: /health turns 503 once it has (within moments).
        health = urllib.request.Request(srv.url + "/health")
        deadline = time.time() + 10
        while True:
            try:
                urllib.request.urlopen(health, timeout=10)
            except urllib.error.HTTPError as e:
                assert e.code == 503
                break
            assert time.time() < deadline, "/health still answers 200 ten seconds after SIGTERM"
            time.sleep(0.02)
        for s in (running, queued):
            out = read_stream(s)
            assert b'"finish_reason":"length"' in out and b"data: [DONE]" in out, out[-300:]
            s.close()
        assert srv.proc.wait(timeout=30) == 0
        assert "stopped" in srv.log_path.read_text()
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()


def test_bad_options_and_unusable_program(program, tmp_path):
    r = cli("serve", "-m", program, "--port", "70000")
    assert r.returncode == 2 and "--port" in r.stderr
    r = cli("serve", "-m", program, "--parallel", "0")
    assert r.returncode == 2 and "--parallel" in r.stderr
    r = cli("serve", "-m", program, "--threads", "2000")
    assert r.returncode == 2 and "--threads" in r.stderr and "[0, 1024]" in r.stderr, r.stderr
    # A program that cannot be loaded: the port was opened (for /health), then the error and exit 1.
    r = cli("serve", "-m", tmp_path / "missing.hfs", "--port", "0", timeout=60)
    assert r.returncode == 1 and "missing.hfs" in r.stderr, r.stderr
    # A port already taken.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        r = cli("serve", "-m", program, "--port", taken.getsockname()[1], timeout=60)
    assert r.returncode == 1 and "cannot listen" in r.stderr, r.stderr


def test_checkpoint_directory_is_exported_for_parallel(stories_dir, tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([CLI, "serve", "-m", str(stories_dir), "--port", "0", "--parallel", "2",
                             "--threads", "1"], stdout=log,
                            stderr=log, env=env)
    try:
        deadline = time.time() + 120
        while "ready:" not in (tmp_path / "serve.log").read_text():
            assert proc.poll() is None and time.time() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.1)
        port = re.search(r"127\.0\.0\.1:(\d+)", (tmp_path / "serve.log").read_text()).group(1)
        models = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10).read())
        assert models["data"][0]["id"] == "stories260K" and models["data"][0]["meta"]["parallel"] == 2
        # The kernel level that ran, as `inspect` names it for this machine (docs/determinism.md).
        meta = models["data"][0]["meta"]
        assert meta["backends"] == ["cpu_fast"]
        inspect = subprocess.run([CLI, "inspect", str(next((tmp_path / "cache" / "hfstatic").glob("stories260K-*.hfs")))],
                                 capture_output=True, text=True, check=True).stdout
        level = re.search(r"kernels: cpu_fast (\w+)", inspect).group(1)
        assert meta["kernels"] == {"cpu_fast": level} and level in ("scalar", "avx2", "avx512", "amx")
        # A model without a chat template: chat renders the "plain" format (contents joined by newlines, with
        # the tokenizer's special tokens), so a chat answer is the completion of that text.
        url = f"http://127.0.0.1:{port}"
        msgs = [{"role": "system", "content": "Once upon a time"}, {"role": "user", "content": "there was a cat"}]
        got, chat, _ = post(url, "/v1/chat/completions", {"messages": msgs, "max_tokens": 6, "temperature": 0}, key=None)
        assert got == 200, chat
        joined = "Once upon a time\nthere was a cat"
        got, comp, _ = post(url, "/v1/completions", {"prompt": joined, "max_tokens": 6, "temperature": 0}, key=None)
        assert got == 200, comp
        got, tok, _ = post(url, "/tokenize", {"content": joined}, key=None)
        assert chat["usage"]["prompt_tokens"] == len(tok["tokens"]) == comp["usage"]["prompt_tokens"]
        # (a reply is its tokens decoded on their own, as HF decodes new tokens: SentencePiece drops the first
        # piece's leading space, which a completion, continuing its prompt's text, keeps)
        assert chat["choices"][0]["message"]["content"] == comp["choices"][0]["text"].lstrip(" ")
        assert list((tmp_path / "cache" / "hfstatic").glob("stories260K-*.hfs"))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        log.close()


def test_kept_sequences_give_way_in_a_small_pool(stories_dir, program, tmp_path):
    """A pool of 2 sequences' worth of slots for 4 sequences: finished sequences kept for the prompt cache
    must not starve running ones of blocks (each answer below needs 205 of the 512 slots)."""
    small = tmp_path / "small_pool.hfs"
    cli("export", stories_dir, "-o", small, "--sequences", "4", "--context", "256", "--prefill-chunk", "16",
        "--pool-slots", "512", check=True)
    srv = Server(small, tmp_path, "--parallel", "4")
    try:
        def long_answer(prompt):
            # End-of-sequence banned: exactly max_tokens tokens unless the pool ran out.
            got, j, _ = post(srv.url, "/v1/completions", {"prompt": prompt, "max_tokens": 200, "temperature": 0,
                                                          "logit_bias": {"2": -100}}, key=None, timeout=120)
            assert got == 200, j
            return j
        for p in ["Once upon a time", "The cat sat"]:  # kept afterwards, holding ~410 slots
            assert long_answer(p)["usage"]["completion_tokens"] == 200
        answers = [None, None]
        threads = [threading.Thread(target=lambda i=i, p=p: answers.__setitem__(i, long_answer(p)))
                   for i, p in enumerate(["A dog ran", "Lily and Tom"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        for a in answers:
            assert a["usage"]["completion_tokens"] == 200 and a["choices"][0]["finish_reason"] == "length", a
    finally:
        assert srv.stop() == 0


def test_timeout_ends_generation_and_queued_requests(program, tmp_path):
    """--timeout 1 at 20 ms a step: a 200-token answer ends early with "length"; the time a request waits in
    the queue counts (one queued 0.8 s behind it has about 0.2 s left to generate)."""
    srv = Server(program, tmp_path, "--parallel", "1", "--timeout", "1", "--step-delay-ms", "20")
    try:
        results = {}
        body = {"prompt": PROMPT, "max_tokens": 200, "temperature": 0, "logit_bias": {"2": -100}}
        first = threading.Thread(target=lambda: results.__setitem__("first", post(srv.url, "/v1/completions", body, key=None)))
        first.start()
        time.sleep(0.2)
        results["second"] = post(srv.url, "/v1/completions", body, key=None)
        first.join(timeout=30)
        got, j, _ = results["first"]
        assert got == 200 and j["choices"][0]["finish_reason"] == "length", j
        assert 5 < j["usage"]["completion_tokens"] < 200, j["usage"]
        first_tokens = j["usage"]["completion_tokens"]
        got, j, _ = results["second"]
        assert got == 200 and j["choices"][0]["finish_reason"] == "length", j
        assert j["usage"]["completion_tokens"] < first_tokens / 2, (j["usage"], first_tokens)
    finally:
        assert srv.stop() == 0


def test_answer_alone_equals_answer_among_fifteen_others(stories_dir, tmp_path):
    """Batch invariance (docs/determinism.md): one request alone, then the same request among 15 concurrent
    others (other prompts, lengths, temperatures and seeds, sharing its steps and taking pool blocks before
    and after it) gets the same text, greedy and at temperature 1 with a fixed seed. stories260K exported
    for 16 sequences; about 2 s. Text flips only where rounding meets a near-tie, so this guards the path
    end to end (seeds, slots, the prompt cache); the bits are checked in tests/llm/determinism_test.cpp."""
    prog = tmp_path / "stories16.hfs"
    cli("export", stories_dir, "-o", prog, "--sequences", "16", "--context", "256", "--prefill-chunk", "16",
        check=True)
    s = Server(prog, tmp_path, "--parallel", "16", "--max-queue", "64")
    try:
        targets = [{"prompt": "Lily and Ben went to the park", "max_tokens": 80, "temperature": 0},
                   {"prompt": "Lily and Ben went to the park", "max_tokens": 80, "temperature": 1.0, "seed": 7}]
        alone = []
        for b in targets:
            status, body, _ = post(s.url, "/v1/completions", b, key=None)
            assert status == 200, body
            alone.append(body["choices"][0]["text"])
        starts = ["Once upon a time", "The cat sat", "One day, a little bird", "Tom had a red ball",
                  "The sun was", "A big dog", "She wanted to"]
        for i, b in enumerate(targets):
            others = [{"prompt": starts[k % len(starts)] * (1 + k % 3), "max_tokens": 10 + 9 * k,
                       "temperature": 0.8 if k % 2 else 0, "seed": 100 + k} for k in range(15)]
            bodies = others[:7] + [b] + others[7:]
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                got = list(pool.map(lambda x: post(s.url, "/v1/completions", x, key=None, timeout=120), bodies))
            status, body, _ = got[7]
            assert status == 200, body
            assert body["choices"][0]["text"] == alone[i], (b, alone[i], body["choices"][0]["text"])
            assert all(g[0] == 200 for g in got), [g[1] for g in got if g[0] != 200]
    finally:
        assert s.stop() == 0, s.log_path.read_text()[-3000:]


def test_draft_program_answers_equal_plain_answers(server, program, stories_dir, tmp_path):
    """`serve --draft PATH`: every request's sequence drafts with its own runner of the draft program (here
    stories260K itself, so drafts are accepted); concurrent greedy answers equal the plain server's."""
    draft = tmp_path / "draft.hfs"
    cli("export", stories_dir, "-o", draft, "--context", "256", check=True)
    s = Server(program, tmp_path, "--parallel", "4", "--draft", draft, "--draft-max", "4")
    try:
        prompts = ["Once upon a time", "The cat sat", "Lily and Ben went to the park", "One day, a little bird"]
        bodies = [{"prompt": p, "max_tokens": 48, "temperature": 0} for p in prompts]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda b: post(s.url, "/v1/completions", b, key=None), bodies))
        for (status, body, _), b in zip(got, bodies):
            assert status == 200, body
            want_status, want, _ = post(server.url, "/v1/completions", b)
            assert want_status == 200 and body["choices"][0]["text"] == want["choices"][0]["text"], b["prompt"]
        m = s.metrics()
        assert m["hfstatic_draft_accepted_total"] > 0, m
    finally:
        assert s.stop() == 0, s.log_path.read_text()[-3000:]


def test_response_format_json_schema_and_json_object(server, tmp_path):
    """response_format through the npm openai client's shape: every reply is JSON valid against its schema
    (checked by ajv, an independent validator), streamed or not; json_object replies are JSON objects. The
    schema is compiled once: later requests with it, however spaced, take the cached grammar."""
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                               "mood": {"enum": ["happy", "sad"]}, "age": {"type": "integer"}},
              "required": ["name", "mood", "age"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "character", "schema": schema, "strict": True}}
    before = server.metrics("secret")
    texts = []
    for seed in range(4):
        body = {"messages": [{"role": "user", "content": "Describe a character."}], "max_tokens": 200,
                "temperature": 1.0, "seed": seed, "response_format": fmt}
        status, j, _ = post(server.url, "/v1/chat/completions", body)
        assert status == 200, j
        assert j["choices"][0]["finish_reason"] == "stop", j
        texts.append(j["choices"][0]["message"]["content"])
    req = urllib.request.Request(server.url + "/v1/completions", method="POST", data=json.dumps(
        {"prompt": "Once upon a time", "max_tokens": 200, "seed": 9, "temperature": 1.0, "stream": True,
         "response_format": fmt}).encode(), headers={"Content-Type": "application/json", "Authorization": "Bearer secret"})
    with urllib.request.urlopen(req, timeout=60) as r:
        streamed = r.read().decode()
    pieces = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: {")]
    texts.append("".join(p["choices"][0]["text"] for p in pieces if p.get("choices")))
    # The same schema spelt with other whitespace: the same canonical text, so the cached grammar.
    spaced = {"prompt": "Once", "max_tokens": 200, "seed": 5, "temperature": 1.0, "response_format": fmt}
    status, j, _ = post(server.url, "/v1/completions", None, raw=json.dumps(spaced, indent=3).encode())
    assert status == 200, j
    texts.append(j["choices"][0]["text"])
    # Properties come in the schema's order; keys in another order are another schema (compiled anew).
    for t in texts:
        assert list(json.loads(t)) == ["name", "mood", "age"], t
    reordered = json.loads(json.dumps(schema), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    status, j, _ = post(server.url, "/v1/completions", {**spaced, "response_format": {"type": "json_schema", "json_schema": {
        "name": "character", "schema": reordered}}})
    assert status == 200, j
    assert list(json.loads(j["choices"][0]["text"])) == ["age", "mood", "name"], j
    texts.append(j["choices"][0]["text"])
    after = server.metrics("secret")
    assert after["hfstatic_grammar_cache_misses_total"] - before["hfstatic_grammar_cache_misses_total"] == 2, (before, after)
    assert after["hfstatic_grammar_cache_hits_total"] - before["hfstatic_grammar_cache_hits_total"] == 5, (before, after)
    cases = [{"schema": schema, "text": t} for t in texts]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    r = subprocess.run(["node", str(ROOT / "tests" / "tools" / "validate_json.js"), str(path)], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["failures"] == [], (r.stdout, r.stderr, texts)
    # json_object: any object, so a reply may run to max_tokens inside a string (then it is a valid prefix).
    for seed in range(3):
        status, j, _ = post(server.url, "/v1/completions", {"prompt": "Once", "max_tokens": 300, "seed": seed,
                                                            "response_format": {"type": "json_object"}})
        assert status == 200, j
        text, why = j["choices"][0]["text"], j["choices"][0]["finish_reason"]
        assert text.lstrip().startswith("{")
        if why == "stop":
            assert isinstance(json.loads(text), dict), text


def test_self_bench_times_the_engine_then_serves(program, tmp_path):
    """--self-bench: the server's own engine timed in-process before it serves, then the same engine serves
    as if nothing had run: every sequence it added was removed, and a greedy answer is still `hfstatic
    run`'s."""
    s = Server(program, tmp_path, "--parallel", "4", "--self-bench", "1,4", "--self-bench-prompt", "8",
               "--self-bench-gen", "6")
    try:
        line = next(l for l in s.log_path.read_text().splitlines() if l.startswith('{"self_bench"'))
        bench = json.loads(line)["self_bench"]
        assert (bench["prompt_tokens"], bench["gen_tokens"], bench["max_sequences"]) == (8, 6, 4)
        assert [r["sequences"] for r in bench["sequences"]] == [1, 4]
        for r in bench["sequences"]:
            assert r["prefill_tok_s"] > 0 and r["decode_tok_s"] > 0 and r["ttft_max_ms"] > 0
        # Four requests at once: all of the program's sequences are free again.
        ref = json.loads(cli("run", "-m", program, "-p", PROMPT, "-n", 12, "--temp", 0, "--json", check=True).stdout)
        body = {"model": "stories4", "prompt": PROMPT, "max_tokens": 12, "temperature": 0}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: post(s.url, "/v1/completions", body, key=None), range(4)))
        for status, answer, _ in answers:
            assert status == 200 and answer["choices"][0]["text"] == ref["text"], answer
    finally:
        assert s.stop() == 0, s.log_path.read_text()[-3000:]
    # Counts over the program's sequences, or a prompt + gen past its context: named, nothing served.
    r = cli("serve", "-m", program, "--port", "0", "--self-bench", "1,9", timeout=60)
    assert r.returncode == 1 and "--self-bench" in r.stderr and "sequences 9" in r.stderr, r.stderr
    r = cli("serve", "-m", program, "--port", "0", "--self-bench", "1", "--self-bench-prompt", "250",
            "--self-bench-gen", "10", timeout=60)
    assert r.returncode == 1 and "context of 256" in r.stderr, r.stderr
    r = cli("serve", "-m", program, "--self-bench", "1,,2")
    assert r.returncode == 2 and "--self-bench" in r.stderr, r.stderr
    r = cli("serve", "-m", program, "--self-bench-gen", "3")
    assert r.returncode == 2 and "--self-bench" in r.stderr, r.stderr


def test_bench_endpoint_times_the_engine_between_requests(program, server, tmp_path):
    """--bench-endpoint: POST /bench/engine times the engine in-process while requests come and go (what
    bench/serve pairs each round of requests with). It asks for all 4 of the program's sequences while 4
    requests run, so it succeeds only if it waits for them and drops the sequences the prompt cache keeps
    after them; the requests sent meanwhile wait and then answer `hfstatic run`'s greedy text."""
    s = Server(program, tmp_path, "--parallel", "4", "--bench-endpoint", "--step-delay-ms", "20")
    try:
        ref = json.loads(cli("run", "-m", program, "-p", PROMPT, "-n", 12, "--temp", 0, "--json", check=True).stdout)
        body = {"model": "stories4", "prompt": PROMPT, "max_tokens": 12, "temperature": 0}
        with concurrent.futures.ThreadPoolExecutor(9) as pool:
            first = [pool.submit(post, s.url, "/v1/completions", body, None) for _ in range(4)]
            time.sleep(0.1)
            bench = pool.submit(post, s.url, "/bench/engine", {"sequences": [1, 4], "prompt": 8, "gen": 6}, None)
            time.sleep(0.05)
            later = [pool.submit(post, s.url, "/v1/completions", body, None) for _ in range(4)]
            status, out, _ = bench.result()
            assert status == 200, out
            assert (out["prompt_tokens"], out["gen_tokens"], out["max_sequences"]) == (8, 6, 4)
            assert [r["sequences"] for r in out["sequences"]] == [1, 4]
            assert all(r["prefill_tok_s"] > 0 and r["decode_tok_s"] > 0 for r in out["sequences"])
            for f in first + later:
                status, answer, _ = f.result()
                assert status == 200 and answer["choices"][0]["text"] == ref["text"], answer
        for bad, words in [({"sequences": []}, "'sequences'"), ({"sequences": [1], "gen": 0}, "'gen'"),
                           ({"sequences": [9]}, "sequences 9"), ({"sequences": [1], "prompt": 250, "gen": 10},
                                                                 "context of 256")]:
            status, out, _ = post(s.url, "/bench/engine", bad, None)
            assert status == 400 and words in out["error"]["message"], (bad, out)
    finally:
        assert s.stop() == 0, s.log_path.read_text()[-3000:]
    # Without the flag the endpoint does not exist.
    status, out, _ = post(server.url, "/bench/engine", {"sequences": [1]})
    assert status == 404 and out["error"]["code"] == "not_found", out


def test_disk_prompt_cache_survives_a_restart(program, tmp_path):
    """serve --cache-dir: a finished request's tokens and cache rows are on disk when the server stops; the
    next server on the same directory serves a prompt that extends them from the file (cached_tokens > 0)
    and answers what a server without the cache answers. Three short-lived servers, ~3 s."""
    cache = tmp_path / "cache"
    first = "Once upon a time, there was a little dog"

    def complete(prompt, *args):
        s = Server(program, tmp_path, *args)
        try:
            status, body, _ = post(s.url, "/v1/completions", {"prompt": prompt, "max_tokens": 12, "temperature": 0},
                                   key=None)
        finally:
            assert s.stop() == 0, s.log_path.read_text()[-3000:]
        assert status == 200, body
        return body["choices"][0]["text"], body["usage"]

    text1, usage1 = complete(first, "--cache-dir", cache, "--cache-size", 10_000_000)
    assert usage1["prompt_tokens_details"]["cached_tokens"] == 0
    assert [p.suffix for p in cache.iterdir()] == [".session"]
    longer = first + text1 + " and"
    text2, usage2 = complete(longer, "--cache-dir", cache, "--cache-size", 10_000_000)
    assert usage2["prompt_tokens_details"]["cached_tokens"] >= usage1["prompt_tokens"], (usage1, usage2)
    text3, usage3 = complete(longer)
    assert usage3["prompt_tokens_details"]["cached_tokens"] == 0
    assert text2 == text3
