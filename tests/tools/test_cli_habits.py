"""What users coming from llama-cli type: constraint text on the command line, stop strings, penalties and
logit bias, threads, a system prompt, chat on a model without a chat template, and the llama-cli flags that
do not apply here (refused with what to do instead). Also the sampling defaults: temperature 0.8 everywhere
and a random seed, printed so a run can be repeated.

References are independent of the code under test: Python's json/re for constrained output, numpy over the
raw logits (--dump-logits) for the penalties, the unstopped greedy text for stop strings.
Cost: about 60 CLI runs of stories260K (a few tokens each), ~15 s on 2 cores.
"""
import json
import re
import subprocess

import numpy as np
import pytest

from conftest import CLI, STORIES, cli, export_with_chat_template

USAGE = 2
PROMPT = "Once upon a time"


def run_json(program, *args, check=True):
    r = cli("run", "-m", program, "--json", *args, check=check)
    return json.loads(r.stdout) if check else r


def greedy(program, *args, n=24):
    return run_json(program, "-p", PROMPT, "-n", n, "--temp", "0", *args)


# --- constraints as text ---------------------------------------------------------------------------------

def test_grammar_and_json_schema_take_text(stories_program):
    j = run_json(stories_program, "-p", PROMPT, "-n", "8", "--grammar", 'root ::= "yes" | "no"')
    assert j["text"] in ("yes", "no") and j["stop"] == "stop_token", j
    schema = '{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], ' \
             '"additionalProperties": false}'
    for flag in ("-j", "--json-schema"):
        j = run_json(stories_program, "-p", PROMPT, "-n", "40", flag, schema)
        assert j["stop"] == "stop_token", j
        assert isinstance(json.loads(j["text"])["ok"], bool)


def test_grammar_and_schema_files(stories_program, tmp_path):
    g = tmp_path / "g.gbnf"
    g.write_text('root ::= [0-9]{3}\n')
    s = tmp_path / "s.json"
    s.write_text('{"enum": ["red", "green"]}')
    assert re.fullmatch(r"[0-9]{3}", run_json(stories_program, "-p", PROMPT, "-n", "8", "--grammar-file", g)["text"])
    assert json.loads(run_json(stories_program, "-p", PROMPT, "-n", "8", "--json-schema-file", s)["text"]) in ("red", "green")
    # The old use (a path given to --grammar / --json-schema) still works: no path is also grammar or schema text.
    r = cli("run", "-m", stories_program, "-p", PROMPT, "-n", "8", "--json", "--grammar", g, check=True)
    assert re.fullmatch(r"[0-9]{3}", json.loads(r.stdout)["text"]) and "--grammar-file" in r.stderr
    r = cli("run", "-m", stories_program, "-p", PROMPT, "-n", "8", "--json", "--json-schema", s, check=True)
    assert json.loads(json.loads(r.stdout)["text"]) in ("red", "green") and "--json-schema-file" in r.stderr


@pytest.mark.parametrize("flag, value, says", [
    ("--grammar", "no_rules_here", "expected GBNF text"),
    ("--json-schema", "schema.json", "expected a JSON Schema"),
    ("--grammar-file", "missing.gbnf", "--grammar-file"),
    ("--json-schema", '{"type": "string", "pattern": "(?=x)"}', "--json-schema"),
])
def test_bad_constraint_text_is_an_error_naming_the_option(stories_program, flag, value, says):
    r = cli("run", "-m", stories_program, "-p", PROMPT, flag, value, check=False)
    assert says in r.stderr and r.stdout == "", r.stderr


def test_two_constraints_are_a_usage_error(stories_program, tmp_path):
    g = tmp_path / "g.gbnf"
    g.write_text('root ::= "a"\n')
    r = cli("run", "-m", stories_program, "-p", PROMPT, "--grammar", 'root ::= "a"', "--grammar-file", g)
    assert r.returncode == USAGE and "cannot be used together" in r.stderr


# --- stop strings ------------------------------------------------------------------------------------------

def test_stop_strings_cut_the_text_before_them(stories_program):
    full = greedy(stories_program, n=40)
    assert "girl" in full["text"] and "Lily" in full["text"], full["text"]
    for args, first in [(["--stop", "Lily"], "Lily"), (["-r", "Lily", "-r", "girl"], "girl"),
                        (["--reverse-prompt", "girl"], "girl")]:
        j = greedy(stories_program, *args, n=40)
        assert j["stop"] == "stop_string", j
        assert j["text"] == full["text"][:full["text"].index(first)]
    # Printed text: the prompt, then the same cut text.
    r = cli("run", "-m", stories_program, "-p", PROMPT, "-n", "40", "--temp", "0", "-r", "Lily", check=True)
    assert r.stdout == PROMPT + full["text"][:full["text"].index("Lily")] + "\n"
    # A stop string that never comes changes nothing.
    assert greedy(stories_program, "--stop", "zebra!", n=40)["text"] == full["text"]


def test_stop_string_refusals(stories_program):
    r = cli("run", "-m", stories_program, "--tokens", "1,2", "--stop", "x")
    assert r.returncode == USAGE and "--stop" in r.stderr and "text" in r.stderr
    r = cli("run", "-m", stories_program, "-p", PROMPT, "--stop=")
    assert r.returncode == USAGE and "--stop" in r.stderr


# --- penalties and logit bias --------------------------------------------------------------------------------

def read_rows(path, vocab):
    return np.fromfile(path, dtype="<f4").reshape(-1, vocab)


@pytest.mark.parametrize("presence, frequency", [("0.8", "0"), ("0", "1.5"), ("-1", "2")])
def test_presence_and_frequency_penalties_match_openai_formula(stories_program, tmp_path, presence, frequency):
    # Greedy: each token is the argmax of raw logits - frequency * count - presence * (count > 0), counts over
    # the tokens so far (the prompt's and the generated), computed here from the raw logits.
    # A prompt that repeats itself, so that the plain greedy choice is often a token already seen.
    prompt = [1] + [432, 383, 286, 261, 376, 298] * 3
    dump = tmp_path / "logits.f32"
    j = run_json(stories_program, "--tokens", ",".join(map(str, prompt)), "-n", "20", "--temp", "0",
                 "--presence-penalty", presence, "--frequency-penalty", frequency, "--dump-logits", dump)
    rows = read_rows(dump, 512)
    history = list(prompt)
    changed = 0
    for step, tok in enumerate(j["tokens"]):
        counts = np.bincount(history, minlength=512).astype(np.float32)
        adjusted = rows[step] - float(frequency) * counts - float(presence) * (counts > 0)
        assert int(np.argmax(adjusted)) == tok, (step, tok)
        changed += int(np.argmax(rows[step])) != tok
        history.append(tok)
    assert changed > 0  # the penalties changed some choice, so the check above had work to do


def test_logit_bias(stories_program):
    j = greedy(stories_program, "--logit-bias", "300+100", n=5)
    assert j["tokens"] == [300] * 5
    first = greedy(stories_program, n=5)["tokens"][0]
    j = greedy(stories_program, "--logit-bias", f"{first}-inf", "--logit-bias", "300-3.5", n=20)
    assert first not in j["tokens"] and j["tokens"][0] != first


@pytest.mark.parametrize("value", ["5", "x+1", "5+nan", "5+", "+5", "-1+2", "5+inf", "5++1", "5+1e39"])
def test_bad_logit_bias_is_a_usage_error(stories_program, value):
    r = cli("run", "-m", stories_program, "-p", PROMPT, f"--logit-bias={value}")
    assert r.returncode == USAGE and "--logit-bias" in r.stderr and "ID+BIAS" in r.stderr, r.stderr


def test_logit_bias_outside_the_vocabulary(stories_program):
    r = cli("run", "-m", stories_program, "-p", PROMPT, "--logit-bias", "512+1")
    assert r.returncode == USAGE and "token id 512 is outside the vocabulary [0, 512)" in r.stderr


# --- threads, defaults, seeds ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "chat"])
def test_threads(stories_program, command):
    args = ["run", "-m", stories_program, "-p", PROMPT, "-n", "4"] if command == "run" else \
        ["chat", "-m", stories_program, "-n", "4"]
    for t in (["-t", "1"], ["--threads", "2"], ["-t", "4096"]):
        r = cli(*args, *t, stdin="hello\n")
        assert r.returncode == (USAGE if t[1] == "4096" else 0), r.stderr
    r = cli(*args, "--threads=-1", stdin="")
    assert r.returncode == USAGE and "--threads" in r.stderr


@pytest.mark.parametrize("command", ["run", "chat"])
def test_default_temperature_is_llama_cpp_s(command):
    help_text = cli(command, "--help", check=True).stdout
    assert re.search(r"--temp NUMBER=0\.8 ", help_text), help_text


def test_seed_is_random_by_default_and_printed_to_repeat_the_run(stories_program):
    def sample(*seed):
        r = cli("run", "-m", stories_program, "-p", PROMPT, "-n", "16", "--temp", "1.5", *seed, check=True)
        printed = re.search(r"\| seed (\d+)$", r.stderr.strip().splitlines()[-1])
        assert printed, r.stderr
        return r.stdout, printed.group(1)
    text1, seed1 = sample()
    text2, seed2 = sample()
    assert seed1 != seed2 and text1 != text2
    assert sample("--seed", seed1) == (text1, seed1)
    assert sample("-s", seed2) == (text2, seed2)
    j = run_json(stories_program, "-p", PROMPT, "-n", "16", "--temp", "1.5")
    assert run_json(stories_program, "-p", PROMPT, "-n", "16", "--temp", "1.5", "--seed", j["seed"])["tokens"] == j["tokens"]


# --- chat formats -------------------------------------------------------------------------------------------

def chat(program, lines, *args):
    return cli("chat", "-m", program, "-n", "12", "--temp", "0", *args, stdin="".join(l + "\n" for l in lines),
               check=True)


def test_chat_without_a_template_uses_the_plain_format(stories_program):
    # stories260K has no chat template: plain joins the messages one per line, with BOS, as serve does.
    r = chat(stories_program, [PROMPT])
    assert "chat format plain" in r.stderr
    ran = cli("run", "-m", stories_program, "-p", PROMPT, "-n", "12", "--temp", "0", check=True).stdout
    assert ran[len(PROMPT):].strip() == r.stdout.strip()
    # -sys and --system: the system message is the first line.
    joined = cli("run", "-m", stories_program, "-p", "Tim was sad.\n" + PROMPT, "-n", "12", "--temp", "0",
                 check=True).stdout
    for flag in ("-sys", "--system"):
        r = chat(stories_program, [PROMPT], flag, "Tim was sad.")
        assert joined[len("Tim was sad.\n" + PROMPT):].strip() == r.stdout.strip(), (joined, r.stdout)


def test_chat_template_option(stories_program, tmp_path):
    r = chat(stories_program, ["hi"], "--chat-template", "chatml")
    assert "chat format chatml" in r.stderr
    t = tmp_path / "t.jinja"
    t.write_text("{% for m in messages %}{{ m.content | upper }}{% endfor %}")
    r = chat(stories_program, ["Once upon a time"], "--chat-template", t)
    assert f"chat format {t}" in r.stderr and r.stdout.strip()
    own = export_with_chat_template(tmp_path, "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}")
    assert "chat format default" in chat(own, ["hi"]).stderr
    assert "chat format plain" in chat(own, ["hi"], "--chat-template", "plain").stderr
    r = cli("chat", "-m", stories_program, "--chat-template", "no-such-template", stdin="")
    assert r.returncode == 1 and "not a built-in name (plain, chatml)" in r.stderr, r.stderr


# --- llama-cli flags that do not apply ------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "chat", "serve"])
@pytest.mark.parametrize("flag, says", [
    (["-c", "128"], "re-export with `hfstatic export"), (["--ctx-size=128"], "--context N"),
    (["-ngl", "99"], "does not offload layers"), (["--n-gpu-layers", "99"], "--backend vulkan"),
])
def test_llama_cli_flags_that_do_not_apply_say_what_to_do(stories_program, command, flag, says):
    extra = ["-p", PROMPT] if command == "run" else []
    r = cli(command, "-m", stories_program, *extra, *flag, stdin="")
    assert r.returncode == USAGE and says in r.stderr and r.stdout == "", r.stderr
    assert "--n-predict" not in r.stderr  # -ngl 99 is not read as -n gl


def test_drafts_need_step_methods(stories_program):
    for args in (["run", "-p", PROMPT], ["chat"]):
        r = cli(args[0], "-m", stories_program, *args[1:], "--draft", "ngram", stdin="")
        assert r.returncode == USAGE and "export it with --step-sizes" in r.stderr, r.stderr
    r = subprocess.run([CLI, "serve", "-m", stories_program, "--port", "0", "--draft", "ngram"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "--draft: draft: the program has no step methods" in r.stderr, r.stderr


def test_serve_takes_the_same_chat_template_choice(stories_program):
    # The choice is made by the function chat uses (ChatFormat::select): an unknown one stops serve at load.
    r = subprocess.run([CLI, "serve", "-m", stories_program, "--port", "0", "--chat-template", "no-such-template"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "not a built-in name (plain, chatml)" in r.stderr, r.stderr
