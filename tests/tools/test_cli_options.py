"""CLI robustness: every option value of every subcommand is checked, nothing silently clamped or ignored.

Each numeric or enumerated option, given each class of bad value (NaN, infinities, negatives, out of range,
junk suffixes, other bases, empty), must end in a usage error: exit status 2 (never a signal or a hang),
the option's name on stderr, nothing on stdout. The boundary values of each range are accepted. Also:
--version, unknown commands, conflicting options, tokenize's input sources, export's context limits,
chat's invalid input lines, and non-finite logits (a program with NaN weights) on both CPU backends.

Run: HFS_CLI=build/hfstatic /usr/bin/python3 -m pytest -q tests/tools/test_cli_options.py
"""
import json
import os
import struct
import subprocess
import sys

import pytest

from conftest import CLI, ROOT, STORIES, cli, export_with_chat_template

USAGE = 2  # exit status of a usage error (hfstatic --help)
TIMEOUT = 60

# Bad values every numeric option rejects, whatever its range.
NON_NUMBERS = ["nan", "NaN", "inf", "-inf", "infinity", "1x", "x", " 1", "1 ", "", "0x10", "1,5"]
INT_ONLY = ["1.5", "1e3", "+1"]  # numbers, but not plain decimal integers

FLOATS = {  # sampling options of run and chat: out-of-range values beyond NON_NUMBERS
    "--temp": ["-1", "-0.001", "1e39", "-1e-30"],
    "--top-p": ["0", "-0.5", "2", "1.001", "1e39"],
    "--min-p": ["-0.01", "1.5", "2"],
    "--repeat-penalty": ["0", "-1", "-0", "1e39"],
    "--presence-penalty": ["-2.01", "2.5", "1e39"],
    "--frequency-penalty": ["-3", "2.001"],
}
INTS = {  # (command, option): out-of-range values beyond NON_NUMBERS and INT_ONLY
    ("run", "--n-predict"): ["-1", "2147483648"],
    ("run", "--top-k"): ["-1", "2147483648"],
    ("run", "--seed"): ["-1", "18446744073709551616", "99999999999999999999999"],
    ("chat", "--n-predict"): ["0", "-1", "2147483648"],
    ("chat", "--top-k"): ["-1"],
    ("chat", "--seed"): ["-1", "18446744073709551616"],
    ("bench", "--prompt"): ["0", "-5", "2147483648"],
    ("bench", "--gen"): ["-1", "2147483648"],
    ("bench", "--threads"): ["-1", "1025"],
    ("bench", "--reps"): ["0", "-1", "101"],
    ("bench", "--vs-threads"): ["0", "-1", "1025"],
    ("bench", "--vs-pairs"): ["0", "-1", "101"],
    ("bench", "--verify-pairs"): ["0", "-1", "10001"],
    ("bench", "--draft-max"): ["0", "-1", "1025"],
    ("export", "--prefill-chunk"): ["0", "-1", "9223372036854775808"],
    ("export", "--context"): ["0", "-1", "9223372036854775808"],
    ("export", "--sequences"): ["0", "-1", "4097"],
    ("run", "--draft-max"): ["0", "-1", "1025"],
    ("run", "--threads"): ["-1", "1025"],
    ("chat", "--threads"): ["-1", "1025"],
    ("chat", "--draft-max"): ["0", "1025"],
    ("export", "--pool-slots"): ["0", "-1", "9223372036854775808"],
    ("perplexity", "--chunk"): ["0", "1", "-1", "2147483648"],
    ("perplexity", "--max-tokens"): ["0", "-1", "9223372036854775808"],
    ("perplexity", "--threads"): ["-1", "1025"],
}
CHOICES = {  # (command, option): values outside the set
    ("run", "--tail"): ["none", "AUTO", ""],
    ("run", "--backend"): ["gpu", ""],
    ("chat", "--backend"): ["gpu"],
    ("bench", "--backend"): ["gpu"],
    ("inspect", "--backend"): ["gpu"],
    ("perplexity", "--backend"): ["gpu"],
    ("export", "--cache-dtype"): ["f64", ""],
    ("export", "--weights"): ["int3", "F16", ""],
    ("export", "--logits"): ["first", ""],
    ("run", "--draft"): ["medusa", "NGRAM", ""],
    ("chat", "--draft"): ["eagle"],
    ("bench", "--draft"): ["medusa"],
}


def base_args(command, flag, program, tmp_path):
    """Arguments that make `command` valid apart from `flag`, the option under test."""
    return {
        "run": ["run", "-m", program, "--tokens", "1", "-n", "2"],
        "chat": ["chat", "-m", program],
        "bench": ["bench", "-m", program, "--prompt", "4", "--gen", "2"] + (["--vs-threads", "1"] if flag == "--vs-pairs" else [])
                 + (["--verify", "1"] if flag == "--verify-pairs" else []),
        "inspect": ["inspect", program],
        "export": ["export", STORIES, "-o", tmp_path / "out.hfs"],
        "perplexity": ["perplexity", "-m", program, "-f", tmp_path / "text.txt"],
    }[command]


def cases():
    for flag, extra in FLOATS.items():
        for command in ("run", "chat"):
            for v in NON_NUMBERS + extra:
                yield command, flag, v
    for (command, flag), extra in INTS.items():
        for v in NON_NUMBERS + INT_ONLY + extra:
            yield command, flag, v
    for (command, flag), values in CHOICES.items():
        for v in values:
            yield command, flag, v


def assert_usage_error(r, flag):
    assert r.returncode == USAGE, f"rc {r.returncode}\n{r.stderr}"
    assert flag in r.stderr, r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("command, flag, value", list(cases()))
def test_bad_option_value_is_a_usage_error_naming_the_option(stories_program, tmp_path, command, flag, value):
    # --flag=value, so that values starting with '-' reach the option as they are.
    args = base_args(command, flag, stories_program, tmp_path)
    r = cli(*args, f"{flag}={value}", stdin="", timeout=TIMEOUT)
    assert_usage_error(r, flag)
    if value:  # (an empty value is reported as missing)
        assert f"expected " in r.stderr and f"got '{value}'" in r.stderr, r.stderr
    assert not (tmp_path / "out.hfs").exists()


@pytest.mark.parametrize("flag, value", [("--temp", "-1"), ("--temp", "-inf"), ("--seed", "-1"), ("-n", "-1"),
                                         ("--top-p", "nan")])
def test_bad_value_as_a_separate_argument(stories_program, flag, value):
    r = cli("run", "-m", stories_program, "--tokens", "1", flag, value, timeout=TIMEOUT)
    assert r.returncode == USAGE, r.stderr
    assert (flag if flag != "-n" else "--n-predict") in r.stderr and f"'{value}'" in r.stderr


def test_readable_messages(stories_program):
    r = cli("run", "-m", stories_program, "--tokens", "1", "--temp", "nan", timeout=TIMEOUT)
    assert r.stderr.splitlines()[0] == ("hfstatic run: --temp: expected a finite number >= 0 (0 = greedy), "
                                        "got 'nan'")
    r = cli("bench", "-m", stories_program, "--reps", "0", timeout=TIMEOUT)
    assert r.stderr.splitlines()[0] == "hfstatic bench: --reps: expected an integer in [1, 100], got '0'"
    assert "not in range" not in r.stderr and "1797" not in r.stderr  # CLI11's raw range text
    r = cli("export", STORIES, "-o", stories_program.parent / "x.hfs", "--context", "0", timeout=TIMEOUT)
    assert r.stderr.splitlines()[0] == "hfstatic export: --context: expected an integer >= 1, got '0'"


GOOD_RUN = [
    ["--temp", "0"], ["--temp", "1e30"], ["--temp", "0.000001"], ["--top-p", "1"], ["--top-p", "1e-30"],
    ["--min-p", "0"], ["--min-p", "1"], ["--repeat-penalty", "1e-30"], ["--repeat-penalty", "1e30"],
    ["--top-k", "0"], ["--top-k", "2147483647"], ["--seed", "0"], ["--seed", "18446744073709551615"],
    ["-n", "0"], ["--seed", "007"], ["--temp", "-0"], ["--tail", "decode"], ["--backend", "cpu_ref"],
    ["--presence-penalty", "-2"], ["--frequency-penalty", "2"], ["-t", "1"], ["--threads", "0"], ["-s", "5"],
]


@pytest.mark.parametrize("extra", GOOD_RUN, ids=lambda a: " ".join(a))
def test_run_accepts_boundary_values(stories_program, extra):
    n = [] if "-n" in extra else ["-n", "3"]
    r = cli("run", "-m", stories_program, "--tokens", "1,5", *n, "--json", *extra, timeout=TIMEOUT, check=True)
    out = json.loads(r.stdout)
    assert len(out["tokens"]) == (0 if extra == ["-n", "0"] else 3)


def test_seed_is_the_value_given(stories_program):
    # "007" is seven (not octal), and the largest seed is itself, not a wrapped or saturated stand-in.
    def tokens(seed):
        r = cli("run", "-m", stories_program, "--tokens", "1", "-n", "12", "--temp", "1.5", "--seed", seed, "--json",
                timeout=TIMEOUT, check=True)
        return json.loads(r.stdout)["tokens"]
    assert tokens("007") == tokens("7")
    assert tokens("010") == tokens("10") != tokens("8")


@pytest.mark.parametrize("extra", [
    ["--reps", "1"], ["--reps", "100"], ["--threads", "0"], ["--threads", "1"], ["--vs-threads", "1", "--vs-pairs", "1"],
    ["--vs-threads", "2", "--vs-pairs", "100"],
], ids=lambda a: " ".join(a))
def test_bench_accepts_boundary_values(stories_program, extra):
    r = cli("bench", "-m", stories_program, "--prompt", "2", "--gen", "1", "--json", *extra, timeout=TIMEOUT,
            check=True)
    assert json.loads(r.stdout)["prompt_tokens"] == 2


def test_bench_sizes_must_fit_the_context_and_are_never_clamped(stories_program):
    # The fixture's context is 256 tokens.
    for args, says in [(["--prompt", "250", "--gen", "7"], "--prompt 250 + --gen 7 tokens exceed"),
                       (["--prompt", "257"], "--prompt 257 exceeds"),
                       (["--gen", "256"], "--gen 256 leaves no room for a prompt")]:
        r = cli("bench", "-m", stories_program, *args, timeout=TIMEOUT)
        assert r.returncode == USAGE and r.stdout == "", r.stderr
        assert says in r.stderr and "context of 256 tokens" in r.stderr, r.stderr
    full = json.loads(cli("bench", "-m", stories_program, "--prompt", "250", "--gen", "6", "--json", timeout=TIMEOUT,
                          check=True).stdout)
    assert full["prompt_tokens"] == 250 and full["generated_tokens"] == 6
    # Defaults (512 and 128) give way to the context; a size given alone is kept and the default fits around it.
    dflt = json.loads(cli("bench", "-m", stories_program, "--json", timeout=TIMEOUT, check=True).stdout)
    assert dflt["prompt_tokens"] == 255 and dflt["generated_tokens"] == 1
    gen = json.loads(cli("bench", "-m", stories_program, "--gen", "100", "--json", timeout=TIMEOUT, check=True).stdout)
    assert gen["prompt_tokens"] == 156 and gen["generated_tokens"] == 100


def test_export_context_beyond_the_model_is_an_error(tmp_path):
    out = tmp_path / "c.hfs"
    r = cli("export", STORIES, "-o", out, "--context", "513", timeout=TIMEOUT)
    assert r.returncode == 1 and not out.exists()
    assert "context 513 exceeds the model's max_position_embeddings 512" in r.stderr, r.stderr
    r = cli("export", STORIES, "-o", out, "--context", "64", "--prefill-chunk", "65", timeout=TIMEOUT)
    assert r.returncode == 1 and "prefill chunk 65 exceeds the context length 64" in r.stderr, r.stderr
    r = cli("export", STORIES, "-o", out, "--prefill-chunk", "600", timeout=TIMEOUT)
    assert r.returncode == 1 and "(the default context" in r.stderr, r.stderr
    # The boundaries are accepted: context = max_position_embeddings, chunk = context.
    cli("export", STORIES, "-o", out, "--context", "512", "--prefill-chunk", "512", "--prefill-variants", "none",
        timeout=TIMEOUT, check=True)
    meta = json.loads(cli("inspect", out, "--json", timeout=TIMEOUT, check=True).stdout)["metadata"]
    assert meta["hf_static.context_length"] == 512 and meta["hf_static.prefill_tokens"] == 512


def test_export_sequences_and_step_sizes(tmp_path):
    """--sequences writes contract version 2 with a pool and default step methods; one sequence without
    --step-sizes writes the same bytes as before the options existed; bad lists name the option."""
    one, default = tmp_path / "one.hfs", tmp_path / "default.hfs"
    cli("export", STORIES, "-o", one, "--context", "64", "--sequences", "1", timeout=TIMEOUT, check=True)
    cli("export", STORIES, "-o", default, "--context", "64", timeout=TIMEOUT, check=True)
    assert one.read_bytes() == default.read_bytes()
    meta = json.loads(cli("inspect", one, "--json", timeout=TIMEOUT, check=True).stdout)["metadata"]
    assert meta["io.contract_version"] == 1 and "hf_static.step_methods" not in meta
    multi = tmp_path / "multi.hfs"
    cli("export", STORIES, "-o", multi, "--context", "64", "--sequences", "3", timeout=TIMEOUT, check=True)
    meta = json.loads(cli("inspect", multi, "--json", timeout=TIMEOUT, check=True).stdout)["metadata"]
    assert meta["io.contract_version"] == 2 and meta["hf_static.max_sequences"] == 3
    assert meta["hf_static.global_pool_slots"] == 3 * 64
    assert meta["hf_static.step_tokens"] == [2, 4, 8, 16]
    assert meta["hf_static.step_methods"] == ["step_2", "step_4", "step_8", "step_16"]
    steps = tmp_path / "steps.hfs"
    cli("export", STORIES, "-o", steps, "--context", "64", "--step-sizes", "3,5", "--pool-slots", "100",
        "--sequences", "2", timeout=TIMEOUT, check=True)
    meta = json.loads(cli("inspect", steps, "--json", timeout=TIMEOUT, check=True).stdout)["metadata"]
    assert meta["hf_static.step_tokens"] == [3, 5] and meta["hf_static.global_pool_slots"] == 100
    for flag, value, want in [("--step-sizes", "1,4", "step size 1 must be in [2, 64]"),
                              ("--step-sizes", "4,4", "step size 4 is listed twice"),
                              ("--step-sizes", "65", "step size 65 must be in [2, 64]"),
                              ("--pool-slots", "32", "pool slots 32 must be in [context 64"),
                              ("--pool-slots", "100", "pool slots 100 need sequences > 1")]:
        args = ["--sequences", "2"] if flag == "--pool-slots" and value == "32" else []
        r = cli("export", STORIES, "-o", tmp_path / "bad.hfs", "--context", "64", flag, value, *args, timeout=TIMEOUT)
        assert r.returncode == 1 and want in r.stderr, (flag, value, r.stderr)
    r = cli("export", STORIES, "-o", tmp_path / "bad.hfs", "--step-sizes", "2,x", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--step-sizes" in r.stderr, r.stderr


def test_run_with_ngram_drafts_gives_the_same_tokens(tmp_path):
    """run --draft ngram verifies drafts in step methods and prints exactly what run without drafts prints."""
    prog = tmp_path / "steps.hfs"
    cli("export", STORIES, "-o", prog, "--context", "512", "--step-sizes", "4,8,16", timeout=TIMEOUT, check=True)
    # The model's own greedy text up to where it has repeated one sentence twice; it goes on repeating it, so
    # the first draft verified is accepted whatever the step times (the policy may pause drafting after it:
    # on this model a verification step costs several decode steps).
    looping = ("Lily and Ben went to the park. They saw a big box with a big box. They wanted to play with it. They "
               "wanted to play with the box. They wanted to play with the box.\n\"Look, Ben, I found a box. It is a "
               "big box.\" Lily said.\n\"OK, it is not a box. It is a box. It is a box. It is not a box. It is not a "
               "box. It is not a box. It is not a boy. It is not a boy.")
    for prompt, accepted in [("Once upon a time, there was a little girl named Lily.", False), (looping, True)]:
        args = ["run", "-m", prog, "-p", prompt, "-n", "200", "--temp", "0", "--json"]
        plain = json.loads(cli(*args, timeout=TIMEOUT, check=True).stdout)
        spec = json.loads(cli(*args, "--draft", "ngram", "--draft-max", "6", timeout=TIMEOUT, check=True).stdout)
        assert spec["tokens"] == plain["tokens"] and spec["text"] == plain["text"]
        assert spec["stats"]["verify_steps"] > 0 and (spec["stats"]["draft_accepted"] > 0) >= accepted
        assert plain["stats"]["verify_steps"] == 0


@pytest.mark.parametrize("weights", ["int8", "f16"])
def test_ngram_drafts_give_the_same_tokens_on_quantized_and_16bit_weights(tmp_path, weights):
    """Greedy run --draft ngram prints what plain run prints, 250 tokens, on a random-weight tiny llama exported
    as int8 and as f16 with step methods of 2..16 rows: a verified draft row must compute what decode computes
    bit for bit (linears and attention alike), or greedy decoding with drafts diverges at a near tie: with
    step kernels that rounded differently from decode's, the int8 case gave different tokens on 2 threads.
    Pinned to 2 CPUs where there are 2, so decode splits attention over slot ranges as it did then."""
    ckpt = tmp_path / "ckpt"
    r = subprocess.run([sys.executable, ROOT / "scripts" / "make-checkpoint", "llama", ckpt, "--preset", "tiny",
                        "--seed", "3"], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    prog = tmp_path / f"{weights}.hfs"
    cli("export", ckpt, "-o", prog, "--weights", weights, "--context", "512", "--step-sizes", "2,4,8,16",
        timeout=TIMEOUT, check=True)
    cpus = sorted(os.sched_getaffinity(0))[:2]

    def run(*extra):
        args = [CLI, "run", "-m", prog, "-p", "word14 182 the a and story number 14", "-n", "250", "--temp", "0",
                "--json", *extra]
        r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=TIMEOUT,
                           preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    plain, spec = run(), run("--draft", "ngram")
    assert len(plain["tokens"]) == 250 and spec["stats"]["verify_steps"] > 0
    assert spec["tokens"] == plain["tokens"]


def test_bench_context_fill_rows_and_capacity(stories_program):
    # The fixture's context is 256 tokens: 0.25k fills it exactly; 257 or 1k are refused naming it.
    r = json.loads(cli("bench", "-m", stories_program, "--context-fill", "32,0.25k", "--gen", "4", "--json",
                       timeout=TIMEOUT, check=False).stdout or "{}")
    assert r == {}  # 0.25k is not a count
    j = json.loads(cli("bench", "-m", stories_program, "--context-fill", "32,256", "--gen", "4", "--reps", "2",
                       "--json", timeout=TIMEOUT, check=True).stdout)
    assert [row["live_tokens"] for row in j["context_fill"]] == [32, 256]
    assert all(row["decode_tok_s"] > 0 and len(row["runs_step_ms"]) == 2 for row in j["context_fill"])
    assert j["context_length"] == 256 and j["cache_bytes"] > 0 and j["peak_rss_bytes"] >= j["cache_bytes"]
    for args, says in [(["--context-fill", "1k"], "--context-fill 1024 exceeds the program's context of 256 tokens"),
                       (["--context-fill", "257"], "--context-fill 257 exceeds"),
                       (["--context-fill", "8", "--gen", "8"], "--context-fill 8 must be more than --gen 8"),
                       (["--context-fill", "1,,2"], "--context-fill: expected"),
                       (["--context-fill", "-1k"], "--context-fill: expected")]:
        r = cli("bench", "-m", stories_program, *args, timeout=TIMEOUT)
        assert r.returncode == USAGE and r.stdout == "", r.stderr
        assert says in r.stderr, r.stderr


def test_bench_sequences(tmp_path):
    """bench --sequences runs B sequences through the engine; counts above the program's are usage errors."""
    prog = tmp_path / "multi.hfs"
    cli("export", STORIES, "-o", prog, "--context", "64", "--sequences", "4", timeout=TIMEOUT, check=True)
    out = json.loads(cli("bench", "-m", prog, "--sequences", "1,4", "--prompt", "8", "--gen", "6", "--json",
                         timeout=TIMEOUT, check=True).stdout)
    rows = out["sequences"]
    assert [r["sequences"] for r in rows] == [1, 4] and out["max_sequences"] == 4
    assert all(r["decode_tok_s"] > 0 for r in rows) and rows[0]["decode_vs_first"] == 1
    # Four sequences decode in steps of four rows: each step after the prompts carries every sequence.
    assert rows[1]["rows_per_step"] > 2
    r = cli("bench", "-m", prog, "--sequences", "8", "--prompt", "8", "--gen", "4", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--sequences 8 exceeds the program's 4" in r.stderr, r.stderr
    r = cli("bench", "-m", prog, "--sequences", "1,,2", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--sequences" in r.stderr, r.stderr
    r = cli("bench", "-m", prog, "--sequences", "2", "--vs-threads", "1", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--vs-threads" in r.stderr, r.stderr


def test_bench_verify_and_draft(tmp_path, stories_program):
    """bench --verify times steps of K + 1 rows against decode steps; bench --draft ngram generates the same
    tokens with and without drafts and reports the drafts' statistics."""
    prog = tmp_path / "steps.hfs"
    cli("export", STORIES, "-o", prog, "--context", "128", "--step-sizes", "2,4", timeout=TIMEOUT, check=True)
    out = json.loads(cli("bench", "-m", prog, "--verify", "3,1", "--prompt", "16", "--verify-pairs", "3", "--json",
                         timeout=TIMEOUT, check=True).stdout)
    rows = out["verify"]
    assert [r["drafts"] for r in rows] == [3, 1] and [r["method_rows"] for r in rows] == [4, 2]
    assert out["prompt_tokens"] == 16 and out["pairs"] == 3
    assert all(r["decode_ms"] > 0 and r["step_ms"] > 0 and r["step_over_decode"] > 0 for r in rows)
    r = cli("bench", "-m", prog, "--verify", "4", "--prompt", "16", timeout=TIMEOUT)
    assert r.returncode == 1 and "K = 4 needs a step method of at least 5 rows; the program's largest is step_4" in r.stderr
    r = cli("bench", "-m", stories_program, "--verify", "1", timeout=TIMEOUT)
    assert r.returncode == 1 and "no step methods" in r.stderr, r.stderr
    r = cli("bench", "-m", prog, "--verify", "1,,2", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--verify" in r.stderr, r.stderr
    r = cli("bench", "-m", prog, "--verify", "1", "--vs-threads", "1", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--vs-threads" in r.stderr, r.stderr

    text = tmp_path / "prompt.txt"
    text.write_text("Once upon a time, there was a little girl named Lily.")
    out = json.loads(cli("bench", "-m", prog, "--draft", "ngram", "--text-file", text, "--gen", "40", "--reps", "2",
                         "--json", timeout=TIMEOUT, check=True).stdout)
    assert out["same_tokens"] is True and out["gen_tokens"] == 40 and out["reps"] == 2 and out["draft_max"] == 8
    ids = json.loads(cli("tokenize", text.read_text(), "-m", prog, "--json", timeout=TIMEOUT, check=True).stdout)["ids"]
    assert out["prompt_tokens"] == len(ids) == 16  # the text encoded as run -f encodes it, BOS first
    assert 0 <= out["acceptance_rate"] <= 1 and out["tokens_per_step"] >= 1 and out["verify_steps_per_run"] >= 1
    assert len(out["speedup_pairs"]) == 2 and out["plain_decode_tok_s"] > 0 and out["draft_decode_tok_s"] > 0
    r = cli("bench", "-m", prog, "--draft", "ngram", "--text-file", text, "--gen", "120", timeout=TIMEOUT)
    assert r.returncode == USAGE and "exceed the program's context of 128" in r.stderr, r.stderr
    r = cli("bench", "-m", prog, "--draft", "ngram", "--text-file", tmp_path / "missing.txt", timeout=TIMEOUT)
    assert r.returncode == 1 and "--text-file" in r.stderr, r.stderr
    r = cli("bench", "-m", prog, "--draft", "ngram", "--verify", "1", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--verify" in r.stderr, r.stderr
    r = cli("bench", "-m", prog, "--text-file", text, timeout=TIMEOUT)
    assert r.returncode == USAGE and "--text-file requires --draft" in r.stderr, r.stderr


def test_version_and_unknown_commands():
    r = cli("--version", check=True)
    assert r.stdout.startswith("hfstatic ") and r.stdout.split()[1][0].isdigit()
    r = cli("frobnicate")
    assert r.returncode == USAGE and r.stdout == ""
    assert "unknown command 'frobnicate'; commands: " in r.stderr
    for c in ["run", "chat", "bench", "export", "inspect", "tokenize"]:
        assert c in r.stderr
    r = cli()
    assert r.returncode == USAGE and "no command" in r.stderr
    r = cli("--bogus")
    assert r.returncode == USAGE and "unknown option '--bogus'" in r.stderr
    r = cli("run", "--no-such-flag", "-m", "x")
    assert r.returncode == USAGE and "--no-such-flag" in r.stderr and r.stdout == ""
    assert "Exit status" in cli("--help", check=True).stdout


@pytest.mark.parametrize("a, b", [(["-p", "hi"], ["-f", "prompt.txt"]), (["-p", "hi"], ["--tokens", "1"]),
                                  (["-f", "prompt.txt"], ["--tokens", "1"])])
def test_conflicting_prompt_options_are_rejected(stories_program, tmp_path, a, b):
    (tmp_path / "prompt.txt").write_text("hello")
    a = [str(tmp_path / x) if x == "prompt.txt" else x for x in a]
    b = [str(tmp_path / x) if x == "prompt.txt" else x for x in b]
    r = cli("run", "-m", stories_program, *a, *b, timeout=TIMEOUT)
    assert r.returncode == USAGE and r.stdout == ""
    long_name = {"-p": "--prompt", "-f": "--file", "--tokens": "--tokens"}
    assert long_name[a[0]] in r.stderr and long_name[b[0]] in r.stderr and "cannot be used together" in r.stderr


def test_tokenize_reads_argument_file_and_stdin(stories_program, tmp_path):
    text = "Once upon a time"
    want = cli("tokenize", "-m", stories_program, "--json", text, check=True).stdout
    f = tmp_path / "t.txt"
    f.write_text(text)
    assert cli("tokenize", "-m", stories_program, "--json", "-f", f, check=True).stdout == want
    assert cli("tokenize", "-m", stories_program, "--json", "-", stdin=text, check=True).stdout == want
    assert cli("tokenize", "-m", stories_program, "--json", stdin=text, check=True).stdout == want
    r = cli("tokenize", "-m", stories_program, "-f", tmp_path / "missing.txt")
    assert r.returncode == 1 and r.stderr.startswith("hfstatic tokenize: ") and "missing.txt" in r.stderr
    r = cli("tokenize", "-m", stories_program, "-f", f, "text")
    assert r.returncode == USAGE and "--file" in r.stderr
    r = cli("tokenize", "-m", stories_program, "--decode", "1,x")
    assert r.returncode == USAGE and r.stderr.startswith("hfstatic tokenize: --decode") and r.stdout == ""


# A template that refuses one message, to make a line the template cannot render.
TEMPLATE = ("{{ bos_token }}{% for m in messages %}{% if m['content'] == 'boom' %}{{ raise_exception('no boom') }}"
            "{% endif %}{{ m['role'] }}: {{ m['content'] }}{{ eos_token }}{% endfor %}"
            "{% if add_generation_prompt %}assistant:{% endif %}")


@pytest.fixture(scope="module")
def chat_program(tmp_path_factory):
    return export_with_chat_template(tmp_path_factory.mktemp("chatopts"), TEMPLATE)


def test_chat_reports_an_invalid_line_and_goes_on(chat_program):
    lines = ["/nonsense", "boom", "bad \udcff bytes", "word " * 300, "Hello", "/stats"]
    stdin = "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"
    r = subprocess.run([CLI, "chat", "-m", chat_program, "--temp", "0", "-n", "4"], input=stdin, capture_output=True,
                       timeout=TIMEOUT)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0, err
    assert "unknown command '/nonsense'" in err and "/reset" in err
    assert "raise_exception: no boom" in err
    assert "not valid UTF-8" in err
    assert "context full" in err
    # None of the refused lines was kept: the one turn that ran holds only "Hello" and its reply.
    position = [int(l.split()[1]) for l in err.splitlines() if l.startswith("position ")]
    assert len(position) == 1 and 0 < position[0] < 30, err
    assert r.stdout.strip()


def nan_program(src, dst, tensor, row):
    """A copy of program `src` with one row of an f32 matrix constant set to NaN (docs/program-format.md)."""
    b = bytearray(src.read_bytes())
    moff, msize, doff = struct.unpack_from("<QQQ", b, 16)
    for t in json.loads(b[moff:moff + msize])["tensors"]:
        if t["name"] == tensor:
            assert t["dtype"] == "f32"
            cols = t["shape"][1]
            at = doff + t["offset"] + row * cols * 4
            b[at:at + cols * 4] = struct.pack("<f", float("nan")) * cols
            dst.write_bytes(bytes(b))
            return dst
    raise AssertionError(f"no constant {tensor}")


@pytest.mark.parametrize("backend", ["cpu_ref", "cpu_fast"])
def test_nan_logits_are_an_error_naming_the_step(stories_program, tmp_path, backend):
    # stories260K ties its embeddings: row 7 of the table is also the LM head's row for id 7.
    prog = nan_program(stories_program, tmp_path / "nan.hfs", "embed_tokens.weight", 7)
    r = cli("run", "-m", prog, "--tokens", "1,5,9", "-n", "5", "--temp", "0", "--backend", backend, timeout=TIMEOUT)
    assert r.returncode == 1, r.stderr
    assert "the prompt's last step (position 2): logits contain NaN at id 7" in r.stderr, r.stderr
    assert r.stdout == ""  # not a stream of token 0


def test_run_and_bench_with_a_draft_program(tmp_path):
    """--draft PATH.hfs drafts with another program (here stories260K drafting for itself, and a shorter-context
    export of it): run prints exactly what run without drafts prints; bench --draft PATH reports the drafts and
    the draft program's time; a path that does not exist is a usage error naming --draft."""
    prog, short = tmp_path / "steps.hfs", tmp_path / "short.hfs"
    cli("export", STORIES, "-o", prog, "--context", "512", "--step-sizes", "4,8", timeout=TIMEOUT, check=True)
    cli("export", STORIES, "-o", short, "--context", "48", timeout=TIMEOUT, check=True)
    args = ["run", "-m", prog, "-p", "Once upon a time, there was a little girl named Lily.", "-n", "200", "--temp",
            "0", "--json"]
    plain = json.loads(cli(*args, timeout=TIMEOUT, check=True).stdout)
    for draft in (prog, short):
        spec = json.loads(cli(*args, "--draft", draft, "--draft-max", "4", timeout=TIMEOUT, check=True).stdout)
        assert spec["tokens"] == plain["tokens"] and spec["text"] == plain["text"], draft
        assert spec["stats"]["draft_tokens"] > 0 and spec["stats"]["draft_program_steps"] > 0, draft
    # The same weights draft what the target picks.
    assert spec["stats"]["draft_accepted"] >= 0.9 * spec["stats"]["draft_tokens"]
    r = cli(*args, "--draft", tmp_path / "missing.hfs", timeout=TIMEOUT)
    assert r.returncode == USAGE and "--draft" in r.stderr and "no such file" in r.stderr, r.stderr
    assert "missing.hfs" in r.stderr and r.stdout == ""
    out = json.loads(cli("bench", "-m", prog, "--draft", prog, "--prompt", "8", "--gen", "40", "--reps", "1",
                         "--json", timeout=TIMEOUT, check=True).stdout)
    assert out["same_tokens"] is True and out["draft_program"] == str(prog)
    assert out["draft_program_steps_per_run"] > 0 and out["draft_program_ms_per_run"] > 0
    for command in ("run", "chat", "bench"):
        assert "PATH.hfs" in cli(command, "--help", timeout=TIMEOUT, check=True).stdout, command
