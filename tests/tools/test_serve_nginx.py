"""Scale-out: two `hfstatic serve` replicas behind Debian's nginx, configured by docs/nginx.conf.example (the
sample the docs give users, filled in here as they would fill it in), nginx run as this user in the
foreground. The npm `openai` client drives load through nginx while one replica is SIGKILLed: only requests
that were in flight on it may fail, every request sent after the kill succeeds, and every answer that came
back equals the solo answer of a replica asked directly.
"""
import json
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, cli
from test_serve import Server, need_node

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
TEMPLATE = ROOT / "docs" / "nginx.conf.example"
PARALLEL, QUEUE = 4, 8
FAIL_TIMEOUT = 5  # the template's fail_timeout (checked below)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def program(stories_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("nginx") / "stories4.hfs"
    cli("export", stories_dir, "-o", out, "--sequences", str(PARALLEL), "--context", "256", "--prefill-chunk", "16",
        check=True)
    return out


class Nginx:
    def __init__(self, tmp, replicas):
        if not Path(NGINX).exists():
            pytest.fail("nginx is needed for the scale-out test: run scripts/install-deps (Debian nginx-light)")
        self.dir = Path(tmp)
        self.url = f"http://127.0.0.1:{free_port()}"
        fill = {"@PREFIX@": str(self.dir), "@LISTEN@": self.url[len("http://"):],
                "@REPLICA1@": replicas[0][len("http://"):], "@REPLICA2@": replicas[1][len("http://"):]}
        text = TEMPLATE.read_text()
        assert f"fail_timeout={FAIL_TIMEOUT}s" in text
        for k, v in fill.items():
            assert k in text, f"{TEMPLATE} has no {k}"
            text = text.replace(k, v)
        assert "@" not in re.sub(r"#.*", "", text), "an unfilled @FIELD@ is left"
        (self.dir / "nginx.conf").write_text(text)
        self.proc = subprocess.Popen(
            [NGINX, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"), "-e", str(self.dir / "error.log"),
             "-g", f"daemon off; pid {self.dir / 'nginx.pid'};"],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / "stderr.log", "w"))
        deadline = time.time() + 20
        while True:
            try:
                if urllib.request.urlopen(self.url + "/health", timeout=5).status == 200:
                    return
            except OSError:
                pass
            assert self.proc.poll() is None, "nginx exited:\n" + self.log()
            assert time.time() < deadline, "nginx did not answer /health:\n" + self.log()
            time.sleep(0.1)

    def log(self):
        return "\n".join((self.dir / f).read_text() for f in ["stderr.log", "error.log"] if (self.dir / f).exists())

    def access(self):
        """(status, [upstream addresses tried]) of each proxied generation request, in order."""
        out = []
        for line in (self.dir / "access.log").read_text().splitlines():
            m = re.search(r'"POST /v1/completions [^"]*" (\d+) upstream=([^ ,]+(?:, [^ ,]+)*)', line)
            if m:
                out.append((int(m.group(1)), m.group(2).split(", ")))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: finish open requests, then exit
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def test_replica_killed_under_load(program, tmp_path):
    need_node()
    # 10 ms per step: an answer of 16-48 tokens takes about 0.2-0.5 s, so some are always in flight.
    args = ("--parallel", PARALLEL, "--max-queue", QUEUE, "--step-delay-ms", 10)
    doomed, survivor = Server(program, tmp_path, *args), Server(program, tmp_path, *args)
    nginx = node = None
    try:
        nginx = Nginx(tmp_path, [doomed.url, survivor.url])
        node = subprocess.Popen(
            ["node", str(ROOT / "tests" / "server" / "failover.js"), "--url", nginx.url, "--solo-url", survivor.url,
             "--clients", "8", "--requests", "120", "--kill-after", "30"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        line = node.stderr.readline()
        assert line.strip() == "kill", line + node.stderr.read()
        doomed.proc.send_signal(signal.SIGKILL)
        doomed.proc.wait(timeout=10)
        killed = time.monotonic()
        node.stdin.write("killed\n")
        node.stdin.flush()
        out, err = node.communicate(timeout=120)
        assert node.returncode == 0, err
        res = json.loads(out)
        # Past fail_timeout nginx tries the dead replica again: the refused connection sends the request on
        # to the survivor (the request had not been sent), so the client sees no error.
        time.sleep(max(0.0, killed + FAIL_TIMEOUT + 1 - time.monotonic()))
        for _ in range(2):
            req = urllib.request.Request(nginx.url + "/v1/completions", method="POST",
                                         data=json.dumps({"prompt": "Once", "max_tokens": 4}).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                assert r.status == 200 and json.loads(r.read())["usage"]["completion_tokens"] == 4
    finally:
        if node and node.poll() is None:
            node.kill()
        if nginx:
            nginx.stop()  # its log is complete once it has exited (a line is written after the last byte)
        doomed.stop()
        assert survivor.stop() == 0, survivor.log_path.read_text()[-3000:]

    access = nginx.access()
    killed_at, results = res["killed_at"], res["results"]
    assert killed_at is not None and len(results) == 120
    assert len(set(res["solo"])) > 1 and all(res["solo"])
    # Both replicas took requests before the kill (least_conn spreads 8 clients), through nginx's log.
    doomed_addr, survivor_addr = doomed.url[len("http://"):], survivor.url[len("http://"):]
    first = [tried[0] for _, tried in access[:30]]
    assert doomed_addr in first and survivor_addr in first, access[:30]
    # Failures: only requests sent before the kill, at most what the killed replica held (running + queued),
    # and at least one (the kill did land mid-load). Every other answer equals the solo answer.
    bad = [r for r in results if "error" in r or not r["equal"]]
    assert all(r["start"] < killed_at for r in bad), bad
    assert 1 <= len(bad) <= PARALLEL + QUEUE, bad
    assert all("error" in r for r in bad), [r for r in bad if "error" not in r]  # a wrong text is never sent
    after = [r for r in results if r["start"] > killed_at]
    assert len(after) >= 60 and all(r.get("equal") for r in after), after
    # nginx: every request after the kill was answered by the survivor; the failures were its 502s or cut
    # streams (200 whose body ended early), never a 503.
    assert len(access) == 122, len(access)
    assert all(status in (200, 502) for status, _ in access), access
    assert all(status == 200 and tried[-1] == survivor_addr for status, tried in access[-60:]), access[-60:]
    # ... and one of them (in the load, or the two requests after it) was the probe sent on to the survivor.
    assert (200, [doomed_addr, survivor_addr]) in access[-60:], access[-60:]
    # Streams are passed on as they come (proxy_buffering off): the first text long before the last. A stream
    # (48 tokens, at least 10 ms a step) buffered whole would bring its first text with its last; passed on,
    # they are at least 47 steps apart. (Not "in the first half of the request": a request that queued on a
    # loaded machine spends most of its time before its first token.)
    streams = [r for r in after if r["stream"]]
    assert sum(1 for r in streams if r["end"] - r["first"] > 100) > 0.8 * len(streams), streams  # ms
