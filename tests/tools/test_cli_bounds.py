"""Bounded inputs on the command line: files too large to read whole, nesting too deep to compile, Ctrl-C
while loading or exporting, and options whose values would abort or silently disable something.

Each case runs the real CLI in a subprocess with a timeout; the large-file cases also run under an
address-space cap (RLIMIT_AS), so reading such a file whole would fail with std::bad_alloc instead of an
error that names the limit.
"""
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CLI, cli

sys.path.insert(0, str(Path(__file__).resolve().parent))

LIMIT = 64 << 20  # tools/common.h kMaxTextFileBytes


def capped(limit_bytes):
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return cap


def run_capped(args, limit_bytes=1 << 30, timeout=60):
    return subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=capped(limit_bytes))


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)
    return path


@pytest.mark.parametrize("size", [1 << 30, 1 << 40])
def test_huge_prompt_file_is_an_error_naming_the_limit(stories_program, tmp_path, size):
    big = sparse(tmp_path / "prompt.txt", size)
    r = run_capped(["run", "-m", stories_program, "-f", big, "-n", "1"], limit_bytes=1 << 30)
    assert 0 < r.returncode < 128, (r.returncode, r.stderr)
    assert "bad_alloc" not in r.stderr
    assert "%d bytes" % size in r.stderr and "limit of %d bytes" % LIMIT in r.stderr, r.stderr
    assert str(big) in r.stderr


def test_huge_grammar_schema_and_tokenize_files_are_errors_naming_the_limit(stories_program, tmp_path):
    big = sparse(tmp_path / "big.json", 1 << 30)
    for args in (["run", "-m", stories_program, "-p", "x", "--json-schema-file", big],
                 ["run", "-m", stories_program, "-p", "x", "--grammar-file", big],
                 ["tokenize", "-m", stories_program, "-f", big]):
        r = run_capped(args)
        assert 0 < r.returncode < 128, (args, r.returncode, r.stderr)
        assert "bad_alloc" not in r.stderr and "limit of %d bytes" % LIMIT in r.stderr, (args, r.stderr)


def test_prompt_file_at_the_limit_is_still_read(stories_program, tmp_path):
    """Just under the limit is not refused for its size (it is then too long for the context)."""
    f = tmp_path / "p.txt"
    f.write_bytes(b"a " * (LIMIT // 2))
    r = cli("run", "-m", stories_program, "-f", f, "-n", "1", check=False, timeout=300)
    assert "limit of" not in r.stderr, r.stderr


@pytest.mark.parametrize("flag,text", [
    ("--json-schema-file", '{"type": "array", "items": ' * 100000 + "true" + "}" * 100000),
    ("--grammar-file", "root ::= " + "(" * 100000 + '"a"' + ")" * 100000 + "\n"),
], ids=["json-schema", "grammar"])
def test_deeply_nested_constraint_files_are_refused_naming_the_limit(stories_program, tmp_path, flag, text):
    f = tmp_path / "c.txt"
    f.write_text(text)
    r = cli("run", "-m", stories_program, "-p", "x", "-n", "1", flag, f, check=False, timeout=30)
    assert "max_nesting" in r.stderr and "deeper than" in r.stderr, r.stderr


def test_deeply_nested_regex_is_refused_naming_the_limit(stories_program):
    # 20 000 levels: as deep as one command-line argument (128 KiB at most) holds.
    r = cli("run", "-m", stories_program, "-p", "x", "-n", "1", "--regex", "(" * 20000 + "a" + ")" * 20000,
            check=False, timeout=30)
    assert "--regex" in r.stderr and "max_nesting" in r.stderr, r.stderr


def wait_for(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def catches_sigint(pid):
    """Whether the process has installed its SIGINT handler (main() has started): /proc's SigCgt mask."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    except OSError:
        pass
    return False


def test_ctrl_c_during_export_exits_130_and_leaves_no_temp_file(stories_dir, tmp_path):
    """SIGINT at a spread of moments through an export (reading, converting, writing): each run exits 130
    promptly (or 0 if it had finished), and nothing but a complete program is ever left beside -o."""
    interrupted = 0
    for i, delay in enumerate([0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6, 0.8]):
        out = tmp_path / ("p%d.hfs" % i)
        p = subprocess.Popen([CLI, "export", str(stories_dir), "-o", str(out)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        wait_for(lambda: catches_sigint(p.pid) or p.poll() is not None, 10)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        _, err = p.communicate(timeout=30)
        assert time.monotonic() - t0 < 5, "did not end promptly"
        assert p.returncode in (0, 130), (delay, p.returncode, err)
        if p.returncode == 130:
            interrupted += 1
        if out.exists():  # renamed into place before the signal: a complete program
            cli("inspect", out, check=True)
        leftovers = [f.name for f in tmp_path.iterdir() if ".tmp." in f.name]
        assert not leftovers, (delay, leftovers)
    assert interrupted > 0, "no run was still exporting when interrupted"


def test_ctrl_c_during_model_load_exits_130(tmp_path):
    """A Hub model whose weights take long to arrive: Ctrl-C while it is loading ends the run at once with
    130 (it used to run on, or die by the signal)."""
    from hub_server import HubServer, Repo
    from test_hub import REPO, env_for, stories_files
    hub = HubServer({REPO: Repo({"main": stories_files()})}).start()
    try:
        hub.delay = 30  # every CDN body waits 30 s
        env = env_for(tmp_path, hub.url)
        p = subprocess.Popen([CLI, "run", "-m", REPO, "-p", "Once", "-n", "4"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        assert wait_for(lambda: any(path.startswith("/cdn/") for _, path, _ in hub.requests), 20)
        p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = p.communicate(timeout=20)
        assert time.monotonic() - t0 < 5
        assert p.returncode == 130, (p.returncode, err)
        assert out == ""
    finally:
        hub.stop()


def test_serve_api_key_empty_is_an_error(stories_program):
    r = cli("serve", "-m", stories_program, "--api-key", "", "--port", "0", check=False, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "--api-key" in r.stderr and "empty" in r.stderr


def test_serve_threads_beyond_the_cpus_is_capped(stories_program):
    """--threads 1024 is capped to the CPUs (said on stderr) and the server comes up and answers."""
    p = subprocess.Popen([CLI, "serve", "-m", stories_program, "--threads", "1024", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        port = None
        t_end = time.monotonic() + 60
        while time.monotonic() < t_end and port is None:
            line = p.stderr.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"https?://[\d.]+:(\d+)", line)
            if m:
                port = int(m.group(1))
        text = "".join(lines)
        assert re.search(r"--threads 1024 is more than the \d+ CPUs", text), text
        assert port, text
        import urllib.error
        import urllib.request

        def ready():  # 503 while the engine loads, then 200
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=10) as resp:
                    return resp.status == 200
            except urllib.error.HTTPError:
                return False
        assert wait_for(ready, 60), "never became ready"
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)


def test_tokenize_decode_of_an_id_past_the_vocabulary_is_an_error(stories_program):
    r = cli("tokenize", "-m", stories_program, "--decode", "1,512", check=False)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "id 512" in r.stderr and "vocabulary of 512 tokens" in r.stderr, r.stderr
    assert r.stdout == ""
    cli("tokenize", "-m", stories_program, "--decode", "0,511", check=True)  # the last id is fine


def test_endless_stdin_to_tokenize_is_an_error_naming_the_limit(stories_program):
    """`yes | hfstatic tokenize`: the input stops at the limit instead of growing until memory runs out."""
    with subprocess.Popen(["yes", "a b c"], stdout=subprocess.PIPE) as yes:
        try:
            r = subprocess.run([CLI, "tokenize", "-m", str(stories_program), "-"], stdin=yes.stdout, capture_output=True,
                               text=True, timeout=120, preexec_fn=capped(1 << 30))
        finally:
            yes.kill()
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "stdin: more than the limit of %d bytes" % LIMIT in r.stderr, r.stderr
