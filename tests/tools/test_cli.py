"""End-to-end CLI checks that need a process: `chat` (template, cache kept across turns), `run -m DIR`
(cached export), `inspect`, `tokenize` on a program, and `bench --json` fields.

Run: /usr/bin/python3 -m pytest tests/tools   (HFS_CLI=path/to/hfstatic)
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "reference"))
CLI = os.environ.get("HFS_CLI", str(ROOT / "build" / "hfstatic"))
from conftest import STORIES, export_with_chat_template  # noqa: E402  (tests/fixtures.py: $HFS_SHARED_DIR)

# A ChatML-style template using the stories tokenizer's special tokens.
TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{{ eos_token }}{% endfor %}"
            "{% if add_generation_prompt %}assistant:{% endif %}")


@pytest.fixture(autouse=True)
def _needs_stories(stories_dir):
    """Every test here runs on stories260K: a missing fixture fails with how to provide it."""


def sh(*args, stdin=None, env=None):
    r = subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, f"{args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def chat_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("chatmodel")
    return d, export_with_chat_template(d, TEMPLATE)


def test_chat_keeps_cache_across_turns(chat_program):
    _, prog = chat_program
    r = sh(CLI, "chat", "-m", prog, "--temp", "0", "-n", "12", stdin="Hello\n/stats\nTell me more\n/stats\n")
    positions = [int(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("position ")]
    assert len(positions) == 2 and positions[1] > positions[0] > 0
    assert r.stdout.strip()
    # Only the new turn was prefilled: the second /stats shows more prompt tokens than the first by exactly
    # the new tokens (not the whole conversation again).
    prompts = [int(l.split("prompt ")[1].split()[0]) for l in r.stderr.splitlines() if "| prompt " in l or l.startswith("load")]
    assert len(prompts) == 2
    second_turn_new = prompts[1] - prompts[0]
    assert 0 < second_turn_new < positions[0], (prompts, positions)


def test_run_accepts_checkpoint_dir_and_caches_export(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    a = sh(CLI, "run", "-m", STORIES, "--tokens", "1", "-n", "20", "--temp", "0", "--json", env=env)
    assert "exporting" in a.stderr
    b = sh(CLI, "run", "-m", STORIES, "--tokens", "1", "-n", "20", "--temp", "0", "--json", env=env)
    assert "exporting" not in b.stderr
    assert json.loads(a.stdout)["tokens"] == json.loads(b.stdout)["tokens"]
    assert len(list((tmp_path / "cache" / "hfstatic").glob("*.hfs"))) == 1


def test_inspect_json_and_bench_json(tmp_path):
    prog = tmp_path / "s.hfs"
    sh(CLI, "export", STORIES, "-o", prog, "--prefill-chunk", "32", "--context", "512")
    info = json.loads(sh(CLI, "inspect", prog, "--json").stdout)
    assert info["metadata"]["hf_static.prefill_tokens"] == 32
    methods = {m["name"]: m for m in info["methods"]}
    assert methods["decode"]["inputs"][0] == {"name": "input_ids", "dtype": "i32", "shape": [1, 1], "role": "input"}
    assert methods["prefill"]["plan"]["arena_bytes"] > 0
    assert methods["prefill"]["ops"]["kv_cache_write"] == 10  # 5 layers x (K, V)
    # The caches: K and V of every layer, [kv heads, context, head dim] f32 (the default cache dtype).
    md = info["metadata"]
    assert md["hf_static.cache_dtype"] == "f32"
    assert info["caches"] == {"context_length": 512, "bytes": 2 * md["hf_static.n_layers"] * md["hf_static.n_kv_heads"] *
                              md["hf_static.head_dim"] * 512 * 4}
    bench = json.loads(sh(CLI, "bench", "-m", prog, "--prompt", "64", "--gen", "16", "--json").stdout)
    for k in ["prefill_tok_s", "decode_tok_s", "ttft_ms", "peak_rss_mib", "bandwidth_gbs", "roofline_share"]:
        assert bench[k] > 0, k
    # --reps: every run starts from an empty cache (same prompt, same token counts), and the reported
    # speeds are the medians of the runs'.
    reps = json.loads(sh(CLI, "bench", "-m", prog, "--prompt", "40", "--gen", "9", "--reps", "3", "--json").stdout)
    assert reps["reps"] == 3 and len(reps["runs"]) == 3
    assert reps["prompt_tokens"] == 40 and reps["generated_tokens"] == 9
    for k in ["prefill_tok_s", "decode_tok_s", "ttft_ms"]:
        assert reps[k] == pytest.approx(sorted(r[k] for r in reps["runs"])[1], rel=1e-9), k
    # --vs-threads: a second runner prefills in turn with the first; the speedup is the median of the
    # pairs' time ratios, and the main numbers stay those of the --threads runner.
    vs = json.loads(sh(CLI, "bench", "-m", prog, "--prompt", "40", "--gen", "3", "--threads", "2", "--vs-threads",
                       "1", "--reps", "3", "--json").stdout)
    assert vs["vs_threads"] == 1 and vs["vs_prefill_tok_s"] > 0 and vs["prefill_speedup_vs_threads"] > 0
    assert vs["generated_tokens"] == 3 and len(vs["runs"]) == 3 and len(vs["prefill_speedup_pairs"]) == 3
    # --vs-pairs sets the pair count apart from --reps; the speedup is the middle one of the pairs listed.
    vp = json.loads(sh(CLI, "bench", "-m", prog, "--prompt", "40", "--gen", "2", "--threads", "2", "--vs-threads",
                       "1", "--vs-pairs", "5", "--json").stdout)
    assert len(vp["prefill_speedup_pairs"]) == 5 and "runs" not in vp
    assert vp["prefill_speedup_vs_threads"] == pytest.approx(sorted(vp["prefill_speedup_pairs"])[2], rel=1e-12)
    r = subprocess.run([CLI, "bench", "-m", prog, "--vs-threads", "0"], capture_output=True, text=True)
    assert r.returncode != 0 and "--vs-threads" in r.stderr
    r = subprocess.run([CLI, "bench", "-m", prog, "--vs-threads", "1", "--vs-pairs", "0"], capture_output=True, text=True)
    assert r.returncode != 0 and "--vs-pairs" in r.stderr
    r = subprocess.run([CLI, "bench", "-m", prog, "--vs-pairs", "3"], capture_output=True, text=True)
    assert r.returncode != 0 and "--vs-threads" in r.stderr  # pairs of what: it needs --vs-threads
    r = subprocess.run([CLI, "bench", "-m", prog, "--reps", "0"], capture_output=True, text=True)
    assert r.returncode != 0 and "--reps" in r.stderr
    tok = json.loads(sh(CLI, "tokenize", "-m", prog, "--json", "Once upon a time").stdout)
    assert tok["ids"][0] == 1


def test_killed_export_never_leaves_a_partial_program(tmp_path):
    # SIGKILL the exporter at many points during its run: the output path either does not exist or holds
    # a complete program that loads (the writer renames a fully written temp file into place).
    import signal
    import time
    out = tmp_path / "k.hfs"
    outcomes = set()
    for i in range(25):
        if out.exists():
            out.unlink()
        p = subprocess.Popen([CLI, "export", STORIES, "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.002 * i)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if out.exists():
            r = subprocess.run([CLI, "inspect", out, "--json"], capture_output=True, text=True)
            assert r.returncode == 0, f"partial program after kill at {2 * i} ms: {r.stderr}"
            outcomes.add("complete")
        else:
            outcomes.add("absent")
    assert "absent" in outcomes  # the kill did land mid-export at least once


def test_chat_replies_follow_a_json_schema(chat_program, tmp_path):
    """`chat --json-schema-file FILE`: every reply, turn after turn, is a document valid against the schema."""
    _, prog = chat_program
    schema = tmp_path / "reply.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"},
                                                                   "mood": {"enum": ["calm", "glad"]}},
                                  "required": ["n", "mood"], "additionalProperties": False}))
    r = sh(CLI, "chat", "-m", prog, "--temp", "0.9", "--seed", "4", "-n", "80", "--json-schema-file", schema,
           stdin="Hello\nAnd again\nOnce more\n")
    assert r.returncode == 0, r.stderr
    decoder, text, pos, replies = json.JSONDecoder(), r.stdout, 0, []
    while pos < len(text.rstrip()):
        while text[pos].isspace():
            pos += 1
        value, pos = decoder.raw_decode(text, pos)
        replies.append(value)
    assert len(replies) == 3, text
    for v in replies:
        assert set(v) == {"n", "mood"} and isinstance(v["n"], int) and v["mood"] in ("calm", "glad"), v
    bad = subprocess.run([CLI, "chat", "-m", str(prog), "--json-schema-file", str(schema), "--regex", "a"], input="",
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--json-schema-file and --regex cannot be used together" in bad.stderr
