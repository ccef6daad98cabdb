"""CLI robustness: paths that are not regular files, write errors, Ctrl-C during prefill, huge prompts.

Every case runs with a timeout, so a CLI that blocks (on a FIFO, in a prefill that ignores Ctrl-C, writing
into a closed pipe) fails the test instead of hanging the suite.
"""
import json
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import CLI, cli

NOT_REGULAR = [("dir", "a directory"), ("fifo", "a FIFO"), ("/dev/zero", "a character device"),
               ("/dev/null", "a character device")]


@pytest.fixture
def specials(tmp_path):
    """name → path for a directory, a FIFO and two devices."""
    d = tmp_path / "dir"
    d.mkdir()
    f = tmp_path / "fifo"
    os.mkfifo(f)
    return {"dir": d, "fifo": f, "/dev/zero": "/dev/zero", "/dev/null": "/dev/null"}


@pytest.fixture
def own_null(tmp_path):
    """A device node to write at. A writer that renames over its output (the bug these tests catch) must not
    get the real /dev/null where it could replace it (as root): a private node is made where mknod is
    allowed; elsewhere /dev/null is safe only because /dev is not writable."""
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return node
    except PermissionError:
        if os.access("/dev", os.W_OK):
            pytest.skip("cannot make a private device node, and /dev/null could be replaced")
        return "/dev/null"


@pytest.fixture(scope="module")
def long_program(stories_dir, tmp_path_factory):
    """stories260K with a context of 8192 (its config raised to allow it) and 16-token chunks: a prompt of
    thousands of tokens takes hundreds of prefill steps."""
    d = tmp_path_factory.mktemp("long")
    for f in os.listdir(stories_dir):
        if f.endswith((".json", ".safetensors")):
            shutil.copy(stories_dir / f, d / f)
    cfg = json.loads((d / "config.json").read_text())
    cfg["max_position_embeddings"] = 8192
    (d / "config.json").write_text(json.dumps(cfg))
    out = d / "long.hfs"
    cli("export", d, "-o", out, "--prefill-chunk", "16", "--context", "8192", check=True)
    return out


@pytest.fixture(scope="module")
def chat_program(stories_dir, tmp_path_factory):
    """stories260K with a chat template, for `chat`."""
    d = tmp_path_factory.mktemp("chat")
    for f in os.listdir(stories_dir):
        if f.endswith((".json", ".safetensors")):
            shutil.copy(stories_dir / f, d / f)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    out = d / "chat.hfs"
    cli("export", d, "-o", out, "--prefill-chunk", "16", "--context", "256", check=True)
    return out


def prompt_text(words):
    base = "once upon a time there was a little girl named lily who liked to play in the park with her dog".split()
    return " ".join(base[i % len(base)] for i in range(words))


# --- paths that are not regular files -------------------------------------------------------------------

@pytest.mark.parametrize("name,kind", NOT_REGULAR)
def test_prompt_file_that_is_not_a_regular_file_is_refused_at_once(stories_program, specials, name, kind):
    r = cli("run", "-m", stories_program, "-f", specials[name], "-n", "2", timeout=20, check=False)
    assert f"not a regular file ({kind})" in r.stderr, r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("name,kind", [k for k in NOT_REGULAR if k[0] != "dir"])
@pytest.mark.parametrize("cmd", [["run", "-p", "hi", "-m"], ["chat", "-m"], ["bench", "-m"], ["tokenize", "hi", "-m"],
                                 ["inspect"]])
def test_program_path_that_is_not_a_regular_file_is_refused_at_once(specials, cmd, name, kind):
    r = cli(*cmd, specials[name], stdin="", timeout=20, check=False)
    assert f"not a regular file ({kind})" in r.stderr, r.stderr


@pytest.mark.parametrize("cmd", [["run", "-p", "hi", "-m"], ["chat", "-m"], ["bench", "-m"], ["tokenize", "hi", "-m"],
                                 ["inspect"]])
def test_program_path_that_is_a_directory_is_a_clean_error(specials, cmd):
    # run/chat read a directory as a checkpoint, tokenize as a tokenizer directory; none of them is one.
    r = cli(*cmd, specials["dir"], stdin="", timeout=20, check=False)
    assert r.stderr.strip(), "no message"


def test_checkpoint_and_tokenizer_files_that_are_fifos_are_refused(stories_dir, tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    for f in ["config.json", "generation_config.json", "tokenizer_config.json", "model.safetensors"]:
        shutil.copy(stories_dir / f, ck / f)
    os.mkfifo(ck / "tokenizer.json")
    r = cli("tokenize", "-m", ck, "hi", timeout=20, check=False)
    assert "tokenizer.json: not a regular file (a FIFO)" in r.stderr, r.stderr
    # A sharded checkpoint whose shard is a FIFO: the exporter refuses it instead of waiting for a writer.
    os.remove(ck / "tokenizer.json")
    shutil.copy(stories_dir / "tokenizer.json", ck / "tokenizer.json")
    os.remove(ck / "model.safetensors")
    os.mkfifo(ck / "shard-1.safetensors")
    (ck / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"model.norm.weight": "shard-1.safetensors"}}))
    r = cli("export", ck, "-o", tmp_path / "o.hfs", timeout=20, check=False)
    assert "shard-1.safetensors: not a regular file (a FIFO)" in r.stderr, r.stderr


# --- export -o ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kind", [("dir", "a directory"), ("fifo", "a FIFO"), ("device", "a character device")])
def test_export_never_replaces_something_that_is_not_a_regular_file(stories_dir, specials, own_null, name, kind):
    path = own_null if name == "device" else specials[name]
    before = sorted(os.listdir(os.path.dirname(specials["fifo"])))
    r = cli("export", stories_dir, "-o", path, timeout=60, check=False)
    assert f"not a regular file ({kind})" in r.stderr, r.stderr
    mode = os.lstat(path).st_mode
    assert {"dir": stat.S_ISDIR, "fifo": stat.S_ISFIFO, "device": stat.S_ISCHR}[name](mode)  # left as it was
    assert sorted(os.listdir(os.path.dirname(specials["fifo"]))) == before  # and no temp file beside it


def test_export_empty_or_directory_like_output_is_a_readable_error(stories_dir, tmp_path):
    r = cli("export", stories_dir, "-o", "", timeout=60, check=False)
    assert "output path is empty" in r.stderr, r.stderr
    r = cli("export", stories_dir, "-o", f"{tmp_path}/sub/", timeout=60, check=False)
    assert "names a directory" in r.stderr, r.stderr


def test_export_replaces_a_symlink_and_leaves_its_target_alone(stories_dir, tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    link = tmp_path / "link.hfs"
    link.symlink_to(target)
    cli("export", stories_dir, "-o", link, "--prefill-chunk", "16", "--context", "64", timeout=120, check=True)
    assert not link.is_symlink() and link.is_file()
    assert target.read_text() == "keep me"
    cli("inspect", link, check=True)


def limited(size):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def test_export_past_a_file_size_limit_names_the_file_and_leaves_nothing(stories_dir, tmp_path):
    out = tmp_path / "big.hfs"
    r = subprocess.run([CLI, "export", stories_dir, "-o", out], capture_output=True, text=True, timeout=120,
                       preexec_fn=limited(200_000))
    assert r.returncode == 1, (r.returncode, r.stderr)  # not killed by SIGXFSZ
    assert f"{out}" in r.stderr and "File too large" in r.stderr, r.stderr
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)


# --- --dump-logits --------------------------------------------------------------------------------------

def test_dump_logits_write_error_stops_the_run_and_removes_the_file(stories_program, tmp_path):
    dump = tmp_path / "logits.bin"
    # 512 f32 logits = 2 KiB a step: the 3rd step's row crosses a 5000-byte limit.
    r = subprocess.run([CLI, "run", "-m", stories_program, "--tokens", "1", "-n", "50", "--ignore-eos",
                        "--dump-logits", dump], capture_output=True, text=True, timeout=60, preexec_fn=limited(5000))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"--dump-logits: {dump}: write failed: File too large" in r.stderr, r.stderr
    assert not dump.exists()
    assert len(r.stdout.split()) == 2  # two tokens printed; the third's logits could not be written: stopped there


def test_dump_logits_to_special_files(stories_program, specials):
    r = cli("run", "-m", stories_program, "--tokens", "1", "-n", "3", "--dump-logits", specials["fifo"], timeout=20,
            check=False)
    assert "a FIFO with no reader" in r.stderr, r.stderr
    r = cli("run", "-m", stories_program, "--tokens", "1", "-n", "3", "--dump-logits", specials["dir"], timeout=20,
            check=False)
    assert "Is a directory" in r.stderr, r.stderr
    r = cli("run", "-m", stories_program, "--tokens", "1", "-n", "3", "--dump-logits", "/dev/full", timeout=20,
            check=False)
    assert "/dev/full: write failed: No space left on device" in r.stderr, r.stderr
    cli("run", "-m", stories_program, "--tokens", "1", "-n", "3", "--dump-logits", "/dev/null", timeout=20, check=True)


# --- stdout write errors --------------------------------------------------------------------------------

PRINTING = [
    ["run", "-p", "Once upon", "-n", "5", "-m", "{prog}"],
    ["run", "--json", "-p", "Once upon", "-n", "5", "-m", "{prog}"],
    ["run", "--tokens", "1,2", "-n", "5", "-m", "{prog}"],
    ["inspect", "{prog}"],
    ["inspect", "--json", "{prog}"],
    ["tokenize", "-m", "{prog}", "Once upon a time"],
    ["tokenize", "-m", "{prog}", "--json", "--decode", "1,2,3"],
    ["bench", "--json", "--prompt", "8", "--gen", "4", "-m", "{prog}"],
    ["chat", "-n", "5", "-m", "{chat}"],
    ["--help"],
]


@pytest.mark.parametrize("args", PRINTING, ids=lambda a: " ".join(a[:2]))
def test_full_stdout_is_an_error_for_every_printing_command(stories_program, chat_program, args):
    args = [{"{prog}": str(stories_program), "{chat}": str(chat_program)}.get(a, a) for a in args]
    with open("/dev/full", "w") as full:
        r = subprocess.run([CLI] + args, stdout=full, stderr=subprocess.PIPE, input="hello\n", text=True, timeout=60)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "hfstatic: io: writing to stdout: No space left on device" in r.stderr, r.stderr
    assert r.stderr.count("writing to stdout") == 1, r.stderr  # reported once


def test_closed_pipe_stops_generation_promptly(long_program):
    # Thousands of tokens to generate; the reader takes 10 bytes and goes away.
    p = subprocess.Popen([CLI, "run", "-m", long_program, "--tokens", "1", "-n", "8000", "--ignore-eos"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = b""
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        if select.select([p.stdout], [], [], 1)[0]:
            got += os.read(p.stdout.fileno(), 10)
    p.stdout.close()
    try:  # the timeout only catches a hang: how promptly it stops is not timed (a busy machine varies)
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("kept generating into a closed pipe")
    assert len(got) >= 10
    assert p.returncode == 1, (p.returncode, err)
    assert b"writing to stdout: Broken pipe" in err, err


# --- Ctrl-C and huge prompts ----------------------------------------------------------------------------

def wait_for_output(p, timeout):
    """Blocks until the process writes something on stdout (the prompt echo comes right before prefill)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([p.stdout], [], [], 0.5)[0]:
            return os.read(p.stdout.fileno(), 1 << 20)
    return b""


@pytest.mark.parametrize("backend", ["cpu_ref", "cpu_fast"])
def test_ctrl_c_during_a_long_prefill_stops_within_a_chunk(long_program, tmp_path, backend):
    prompt = tmp_path / "p.txt"
    prompt.write_text(prompt_text(4000))  # 5904 tokens: 10 s of prefill with cpu_fast on 2 cores, 60 with cpu_ref
    p = subprocess.Popen([CLI, "run", "-m", long_program, "-f", prompt, "-n", "5", "--backend", backend],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert wait_for_output(p, 60), "no prompt echo"
    time.sleep(0.3)
    assert p.poll() is None, "the prefill finished before Ctrl-C: use a longer prompt"
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("prefill ran on after Ctrl-C")
    err = err.decode()
    assert p.returncode == 0, (p.returncode, err)  # as a cancelled decode: the stats, exit 0
    # Promptness is counted, not timed: the prompt tokens it fed stop at a chunk boundary short of the end.
    stats = [l for l in err.splitlines() if l.startswith("load ")]
    assert len(stats) == 1, err
    prompt_tok = int(stats[0].split("prompt ")[1].split()[0])
    assert 0 < prompt_tok < 5904 and prompt_tok % 16 == 0, stats  # whole chunks, far from all of them
    assert "generated 0 tok" in stats[0], stats


def test_second_ctrl_c_exits_at_once(chat_program):
    # chat waiting for a line ignores the first Ctrl-C (it would cancel a reply); the second exits, 130.
    p = subprocess.Popen([CLI, "chat", "-m", chat_program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)  # loaded and reading stdin
        p.send_signal(signal.SIGINT)
        time.sleep(0.3)
        assert p.poll() is None
        p.send_signal(signal.SIGINT)
        p.wait(timeout=5)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, p.returncode


def test_prompt_over_capacity_is_refused_before_it_is_echoed(stories_program, tmp_path):
    prompt = tmp_path / "p.txt"
    prompt.write_text(prompt_text(400))
    r = cli("run", "-m", stories_program, "-f", prompt, timeout=30, check=False)
    assert r.stdout == ""
    assert "prompt has " in r.stderr and "the program holds at most 256 (context 256)" in r.stderr, r.stderr
    n = int(r.stderr.split("prompt has ")[1].split()[0])
    assert n > 256


PEAK_RSS = """
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
print(r.stderr, file=sys.stderr)
"""


def peak_rss(*args):
    """Peak RSS in bytes of one CLI run, measured from a fresh interpreter whose only child it is."""
    r = subprocess.run([sys.executable, "-c", PEAK_RSS, CLI] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=300)
    return int(r.stdout.split()[0]), r.stderr


def test_memory_for_a_10_mb_prompt_stays_a_small_multiple_of_it(stories_program, tmp_path):
    big = tmp_path / "big.txt"
    text = prompt_text(2_300_000)[:10_000_000]
    big.write_text(text)
    base, _ = peak_rss("run", "-m", stories_program, "-p", "hi", "-n", "1")
    peak, err = peak_rss("run", "-m", stories_program, "-f", big)
    assert "the program holds at most 256" in err, err
    # The text, its normalized copy and the ids: about 4.5x the file on top of the model. Per-character
    # merge state over the whole prompt (the old behaviour) was over 40x.
    assert peak - base < 6 * len(text), (peak, base)
