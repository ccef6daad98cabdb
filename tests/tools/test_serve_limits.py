"""`hfstatic serve` against hostile and unlucky clients: every limit of docs/server.md ("Limits") on a live
server, over raw sockets where a client library would hide what is on the wire. Each case once crashed,
stalled or bloated the server; each checks the answer the HTTP/1.1 and OpenAI contracts call for and that the
server still answers a normal request afterwards. $HFS_CLI names the binary (an ASan build works too).
"""
import json
import signal
import socket
import threading
import time
import urllib.request

import pytest

from test_serve import PROMPT, Server, post, program  # noqa: F401  (program: the module's fixture)

READ_TIMEOUT = 2


@pytest.fixture(scope="module")
def srv(program, tmp_path_factory):  # noqa: F811
    s = Server(program, tmp_path_factory.mktemp("log"), "--parallel", "4", "--api-key", "secret", "--max-body", "1048576",
               "--read-timeout", READ_TIMEOUT, "--max-connections", "48")
    yield s
    assert s.stop() == 0, s.log_path.read_text()[-3000:]


def addr(url):
    host, port = url.split("//")[1].rsplit(":", 1)
    return host, int(port)


def connect(url, timeout=10):
    return socket.create_connection(addr(url), timeout=timeout)


class Reader:
    """Reads HTTP/1.1 responses off one socket, one at a time (Content-Length, chunked, or to EOF)."""

    def __init__(self, sock):
        self.s, self.buf = sock, b""

    def _more(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self):
        status = int(self._line().split(b" ")[1])
        headers = {}
        while line := self._line():
            k, v = line.decode().split(":", 1)
            headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding") == "chunked":
            body = b""
            while (n := int(self._line().split(b";")[0], 16)) > 0:
                body += self._take(n)
                self._take(2)
            self._line()
        elif "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        else:
            try:
                while True:
                    self._more()
            except EOFError:
                pass
            body, self.buf = self.buf, b""
        return status, headers, body

    def closed(self, timeout):
        """True when the server closes the connection within `timeout` with nothing more sent."""
        self.s.settimeout(timeout)
        try:
            return self.s.recv(1) == b"" and self.buf == b""
        except (socket.timeout, TimeoutError):
            return False
        except ConnectionResetError:
            return self.buf == b""


def request(method, path, body=b"", key="secret", headers=()):
    head = [f"{method} {path} HTTP/1.1", "Host: x"]
    if key:
        head.append(f"Authorization: Bearer {key}")
    if body or method == "POST":
        head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    head += list(headers)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def healthy(url):
    """A normal completion is answered, and correctly."""
    got, j, _ = post(url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 2, "temperature": 0}, timeout=20)
    assert got == 200 and j["usage"]["completion_tokens"] == 2, j


def deep(n, leaf="1"):
    return "[" * n + leaf + "]" * n


# Every endpoint that takes JSON, each with a field nested deeply (300 000 levels: far past any stack).
DEEP_CASES = [
    ("/v1/completions", '{"prompt": ' + deep(300000) + "}"),
    ("/v1/completions", '{"prompt": "x", "n": ' + deep(300000) + "}"),
    ("/v1/completions", '{"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "n", '
                        '"schema": {"type": "object", "properties": {"a": ' + deep(300000, "{}") + "}}}}}"),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": ' + deep(300000, '"x"') + "}]}"),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": "x"}], "stop": ' + deep(300000) + "}"),
    ("/tokenize", '{"content": ' + deep(300000) + "}"),
    ("/detokenize", '{"tokens": ' + deep(300000) + "}"),
    ("/detokenize", "{" * 300000),
]


@pytest.mark.parametrize("path,body", DEEP_CASES, ids=[f"{p}:{i}" for i, (p, _) in enumerate(DEEP_CASES)])
def test_deep_json_is_refused_with_the_depth_limit(srv, path, body):
    got, j, _ = post(srv.url, path, None, raw=body.encode())
    assert got == 400, j
    assert j["error"]["code"] == "json_too_deep" and "64 levels" in j["error"]["message"], j
    assert srv.proc.poll() is None
    healthy(srv.url)


def test_json_at_the_depth_limit_is_parsed(srv):
    # 64 levels is allowed: the request is refused for what it holds, not for its depth.
    got, j, _ = post(srv.url, "/detokenize", None, raw=('{"tokens": ' + deep(63) + "}").encode())
    assert got == 400 and "token ids" in j["error"]["message"], j
    got, j, _ = post(srv.url, "/detokenize", None, raw=('{"tokens": ' + deep(64) + "}").encode())
    assert got == 400 and j["error"]["code"] == "json_too_deep", j


def chunked(body, size=4096):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


def test_chunked_bodies_are_decoded_and_bounded(srv):
    s = connect(srv.url)
    r = Reader(s)
    body = json.dumps({"content": PROMPT}).encode()
    head = (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    s.sendall(head + chunked(body, 5))
    status, _, out = r.response()
    assert status == 200 and len(json.loads(out)["tokens"]) > 2
    # 200 MiB announced in chunks: refused at the chunk that passes 1 MiB, long before it is all sent.
    rss = srv.rss_kib()
    s.sendall(head)
    sent, refused = 0, None
    try:
        while sent < 200 << 20:
            s.sendall(b"100000\r\n" + b"a" * (1 << 20) + b"\r\n")
            sent += 1 << 20
    except (BrokenPipeError, ConnectionResetError):
        pass
    s.settimeout(10)
    status, headers, out = r.response()
    assert status == 413 and "1048576 bytes" in json.loads(out)["error"]["message"] and headers["connection"] == "close"
    assert sent <= 8 << 20, sent
    assert srv.rss_kib() - rss < 64 << 10, (rss, srv.rss_kib())
    s.close()
    healthy(srv.url)


@pytest.mark.parametrize("ctype", ["application/json", "text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", "application/octet-stream"])
def test_one_body_limit_for_every_content_type_and_coding(srv, ctype):
    body = b"a" * ((1 << 20) + 1)
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Type: " +
            ctype.encode() + b"\r\n")
    s = connect(srv.url)
    s.sendall(head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    status, _, out = Reader(s).response()  # answered from the head alone: the body is never read
    assert status == 413 and json.loads(out)["error"]["code"] == "body_too_large"
    s.close()
    s = connect(srv.url)
    try:
        s.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(body, 65536))
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, _, out = Reader(s).response()
    assert status == 413 and json.loads(out)["error"]["code"] == "body_too_large"
    s.close()


@pytest.mark.parametrize("key,want,coding", [("secret", 200, "length"), ("wrong", 401, "length"),
                                             ("secret", 200, "chunked"), ("wrong", 401, "chunked")])
def test_a_body_that_arrives_late_is_the_same_request(srv, key, want, coding):
    s = connect(srv.url)
    r = Reader(s)
    body = json.dumps({"content": PROMPT}).encode()
    if coding == "chunked":
        head = request("POST", "/tokenize", key=key, headers=["Transfer-Encoding: chunked"]).replace(b"Content-Length: 0\r\n", b"")
        s.sendall(head)
        time.sleep(0.8)
        s.sendall(chunked(body, 7))
    else:
        s.sendall(request("POST", "/tokenize", body, key=key)[:-len(body)])
        time.sleep(0.8)
        s.sendall(body)
    status, _, out = r.response()
    assert status == want and ("tokens" in json.loads(out)) == (want == 200)
    # Exactly one answer: nothing more comes for the body (it was not taken for a second request).
    s.settimeout(0.5)
    with pytest.raises((socket.timeout, TimeoutError)):
        s.recv(1)
    s.close()


def test_a_body_that_never_comes_closes_the_connection(srv):
    s = connect(srv.url)
    r = Reader(s)
    start = time.time()
    s.sendall(request("POST", "/tokenize", b'{"content": "abc"}')[:-5])
    s.settimeout(READ_TIMEOUT + 5)
    status, headers, out = r.response()
    assert status == 408 and "--read-timeout" in json.loads(out)["error"]["message"]
    assert READ_TIMEOUT - 0.5 <= time.time() - start <= READ_TIMEOUT + 2
    assert r.closed(3)
    s.close()


def test_headers_trickled_slowly_are_cut_off(srv):
    s = connect(srv.url)
    start = time.time()
    s.sendall(b"GET /health HTTP/1.1\r\n")
    status = None
    try:
        for _ in range(40):  # a byte every 0.2 s: the whole head never arrives within the read timeout
            s.sendall(b"X")
            time.sleep(0.2)
    except (BrokenPipeError, ConnectionResetError):
        pass
    s.settimeout(5)
    try:
        status = Reader(s).response()[0]
    except (EOFError, ConnectionResetError):
        pass
    assert status in (408, None) and time.time() - start < READ_TIMEOUT + 6
    s.close()


def test_pipelined_requests_are_answered_in_order(srv):
    s = connect(srv.url)
    r = Reader(s)
    words = ["Once", "upon", "a", "time"]
    s.sendall(b"".join(request("POST", "/tokenize", json.dumps({"content": w, "add_special": False}).encode())
                       for w in words) + request("GET", "/health"))
    want = [post(srv.url, "/tokenize", {"content": w, "add_special": False})[1]["tokens"] for w in words]
    for w in want:
        status, _, out = r.response()
        assert status == 200 and json.loads(out)["tokens"] == w
    status, _, out = r.response()
    assert status == 200 and json.loads(out) == {"status": "ok"}
    s.close()


def test_the_request_after_a_401_is_answered(srv):
    s = connect(srv.url)
    r = Reader(s)
    body = json.dumps({"content": PROMPT}).encode()
    s.sendall(request("POST", "/tokenize", body, key="wrong") + request("POST", "/tokenize", body))
    status, _, out = r.response()
    assert status == 401 and json.loads(out)["error"]["code"] == "invalid_api_key"
    status, _, out = r.response()
    assert status == 200 and len(json.loads(out)["tokens"]) > 2
    s.close()


@pytest.mark.parametrize("raw,status", [
    (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
    (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", 400),
    (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    (b"GET /health HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
    (b"GET /he alth HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    (b"GET /health HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 40000 + b"\r\n\r\n", 431),
])
def test_ambiguous_framing_is_refused_and_closed(srv, raw, status):
    s = connect(srv.url)
    r = Reader(s)
    s.sendall(raw + request("GET", "/health"))  # a request smuggled behind it is never answered
    got, headers, _ = r.response()
    assert got == status and headers["connection"] == "close"
    assert r.closed(3)
    s.close()


def test_access_log_fields_cannot_forge_lines(srv):
    forged = "hfstatic serve: 6.6.6.6 GET /forged 200 0.1 ms"
    got, j, _ = post(srv.url, "/v1/completions", {"prompt": PROMPT, "model": "m\n" + forged})
    assert got == 404
    s = connect(srv.url)
    s.sendall(request("GET", "/v1/x\"%0a" + forged.replace(" ", "%20")))
    assert Reader(s).response()[0] == 404
    s.close()
    time.sleep(0.2)
    lines = srv.log_path.read_text().splitlines()
    assert not any(line.startswith(forged) for line in lines)
    assert any("m\\x0a" + forged in line for line in lines)


def test_range_requests_get_the_plain_page(srv):
    page = urllib.request.urlopen(srv.url + "/", timeout=10).read()
    s = connect(srv.url)
    s.sendall(request("GET", "/", key=None, headers=["Range: bytes=" + ",".join(["0-"] * 2000)]))
    status, headers, body = Reader(s).response()
    assert status == 200 and body == page and "content-range" not in headers
    s.close()


def test_connection_cap_answers_503(srv):
    socks = []
    try:
        for _ in range(60):  # 48 allowed; the rest are answered 503 at once
            socks.append(connect(srv.url))
        refused = 0
        for s in socks[48:]:
            s.settimeout(5)
            status, headers, out = Reader(s).response()
            assert status == 503 and headers["retry-after"] == "1" and "--max-connections" in json.loads(out)["error"]["message"]
            refused += 1
        assert refused == 12
    finally:
        for s in socks:
            s.close()
    deadline = time.time() + 5
    while True:  # the idle 48 are closed as they go
        try:
            healthy(srv.url)
            break
        except (AssertionError, ConnectionError, OSError):
            assert time.time() < deadline
            time.sleep(0.1)


FOREIGN = [
    ("guided_whitespace_pattern", " "), ("regex", "a+"), ("n_predict", 5), ("ignore_eos", True), ("min_tokens", 3),
    ("stop_token_ids", [2]), ("repeat_penalty", 1.3), ("typical_p", 0.5),
]


@pytest.mark.parametrize("field,value", FOREIGN, ids=[f for f, _ in FOREIGN])
def test_fields_that_would_change_the_answer_are_refused_by_name(srv, field, value):
    for path, body in [("/v1/completions", {"prompt": PROMPT}), ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]})]:
        got, j, _ = post(srv.url, path, {**body, "max_tokens": 2, field: value})
        assert got == 400 and j["error"]["param"] == field and f"'{field}'" in j["error"]["message"], j
    # Their neutral values change nothing and are accepted.
    got, j, _ = post(srv.url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 2, "ignore_eos": False, "min_tokens": 0,
                                                  "skip_special_tokens": True, "grammar": None})
    assert got == 200, j


def test_sigterm_ends_within_the_drain_even_with_stuck_clients(program, tmp_path):  # noqa: F811
    s = Server(program, tmp_path, "--parallel", "1", "--drain", "2", "--step-delay-ms", "50", "--read-timeout", "30")
    stuck = []
    try:
        for _ in range(20):  # half a head each, never finished
            c = connect(s.url)
            c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n")
            stuck.append(c)
        for _ in range(3):  # streams whose client never reads, and a queued one
            c = connect(s.url)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.sendall(request("POST", "/v1/completions", json.dumps({"prompt": PROMPT, "max_tokens": 200, "stream": True}).encode(), key=None))
            stuck.append(c)
        c = connect(s.url)  # an idle keep-alive connection
        c.sendall(request("GET", "/health", key=None))
        stuck.append(c)
        time.sleep(0.5)
        start = time.time()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=15) == 0
        assert time.time() - start < 2 + 4, time.time() - start
    finally:
        for c in stuck:
            c.close()
        if s.proc.poll() is None:
            s.proc.kill()
        s.log.close()


def burst(url, n):
    """n connections opened at once, each sending GET /health: their statuses (None: reset or no answer)."""
    socks = []
    for _ in range(n):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(addr(url))
        socks.append(c)
    out = []
    for c in socks:
        try:
            c.settimeout(10)
            c.sendall(request("GET", "/health", key=None, headers=["Connection: close"]))
            out.append(Reader(c).response()[0])
        except (OSError, EOFError, ValueError, IndexError):
            out.append(None)
        finally:
            c.close()
    return out


def test_load_slow_clients_bursts_and_disconnects(program, tmp_path):  # noqa: F811
    """Four seconds of trickling heads, bursts of 150 connections, and streams dropped mid-answer: a normal
    client's completion is answered correctly within 3 s throughout, and every burst connection gets an
    answer (200, or 503 past --max-connections), never a reset. The attack stays under the default 256
    connections (past it, a normal client is refused 503 too: test_connection_cap_answers_503)."""
    s = Server(program, tmp_path, "--parallel", "4", "--read-timeout", "1")
    stop = threading.Event()
    failures, burst_statuses = [], []

    def slow_client():
        while not stop.is_set():
            try:
                c = connect(s.url)
                c.sendall(b"POST /v1/completions HTTP/1.1\r\n")
                while not stop.is_set():
                    c.sendall(b"X-Slow: 1\r\n")
                    time.sleep(0.2)
            except OSError:
                pass  # cut off by --read-timeout: come back
            finally:
                c.close()

    def disconnector():
        while not stop.is_set():
            try:
                c = connect(s.url)
                c.sendall(request("POST", "/v1/completions",
                                  json.dumps({"prompt": PROMPT, "max_tokens": 100, "stream": True}).encode(), key=None))
                c.recv(256)
                c.close()
                time.sleep(0.1)
            except OSError as e:
                failures.append(f"disconnector: {e}")

    def burster():
        while not stop.is_set():
            burst_statuses.extend(burst(s.url, 150))
            time.sleep(0.3)

    want = post(s.url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 4, "temperature": 0}, key=None)[1]["choices"][0]["text"]
    threads = [threading.Thread(target=f) for f in [slow_client] * 30 + [disconnector] * 4 + [burster]]
    for t in threads:
        t.start()
    latencies = []
    try:
        end = time.time() + 4
        while time.time() < end:
            t0 = time.time()
            got, j, _ = post(s.url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 4, "temperature": 0}, key=None,
                             timeout=10)
            latencies.append(time.time() - t0)
            assert got == 200 and j["choices"][0]["text"] == want, j
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=15)
        rc = s.stop()
    assert rc == 0
    assert not failures, failures[:5]
    assert len(latencies) >= 10 and max(latencies) < 3.0, latencies
    assert burst_statuses and all(st in (200, 503) for st in burst_statuses), [st for st in burst_statuses if st not in (200, 503)][:5]
    assert burst_statuses.count(200) > len(burst_statuses) // 2


def test_grammar_cache_is_bounded_in_bytes(program, tmp_path):  # noqa: F811
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}
    body = {"prompt": PROMPT, "max_tokens": 3, "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": schema}}}
    for limit, hits in [("67108864", 1), ("1000", 0)]:  # the default holds it; 1000 bytes cannot
        s = Server(program, tmp_path, "--grammar-cache-bytes", limit)
        try:
            for _ in range(2):
                got, j, _ = post(s.url, "/v1/completions", body, key=None)
                assert got == 200, j
            m = s.metrics()
            assert m["hfstatic_grammar_cache_hits_total"] == hits and m["hfstatic_grammar_cache_misses_total"] == 2 - hits, m
        finally:
            assert s.stop() == 0


def test_a_client_gone_before_a_whole_answer_frees_its_sequence(program, tmp_path):  # noqa: F811
    s = Server(program, tmp_path, "--parallel", "2", "--step-delay-ms", "20")
    try:
        for _ in range(4):  # not streamed: the server learns of the hangup only by watching the socket
            c = connect(s.url)
            c.sendall(request("POST", "/v1/completions", json.dumps({"prompt": PROMPT, "max_tokens": 250}).encode(), key=None))
            time.sleep(0.2)
            c.close()
        # Generating to the end would take 250 steps × 20 ms = 5 s for each pair.
        deadline = time.time() + 2
        while (m := s.metrics())["hfstatic_busy_sequences"] or m["hfstatic_queue_length"]:
            assert time.time() < deadline, m
            time.sleep(0.05)
        assert m["hfstatic_cancelled_requests_total"] == 4, m
        healthy(s.url)
    finally:
        assert s.stop() == 0
