"""A generation's text is exact: what `hfstatic run` streams after the prompt equals transformers.js'
decode(prompt + generated) minus decode(prompt), byte for byte — in the stream and in `--json` `text`.
(Every tokenizer family is covered without a model by the streamed-generation lines of the tokenizer
goldens; this runs the real CLI path on the stories260K program.)
"""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, cli

PROMPTS = ["Once", "Once upon a ", "Lily wa", "The cat sat on the mat. ", "Tom said, \"", "café ☕ 你"]


def reference(tokenizer_dir, cases):
    r = subprocess.run(["node", str(Path(__file__).with_name("stream_reference.js"))], cwd=ROOT, timeout=120,
                       input=json.dumps({"tokenizer_dir": str(tokenizer_dir), "cases": cases}),
                       capture_output=True, text=True)
    assert r.returncode == 0, f"transformers.js reference failed (scripts/install-deps installs it):\n{r.stderr}"
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def generations(stories_dir, stories_program):
    out = []
    for p in PROMPTS:
        j = json.loads(cli("run", "-m", stories_program, "-p", p, "-n", "12", "--temp", "0", "--json", check=True).stdout)
        plain = cli("run", "-m", stories_program, "-p", p, "-n", "12", "--temp", "0", check=True).stdout
        out.append((p, j, plain))
    ref = reference(stories_dir, [{"prompt": p, "gen": j["tokens"]} for p, j, _ in out])
    return [(p, j, plain, r) for (p, j, plain), r in zip(out, ref)]


@pytest.mark.parametrize("i", range(len(PROMPTS)))
def test_json_text_is_reference_continuation(generations, i):
    prompt, j, _, ref = generations[i]
    assert ref["cont"] is not None, prompt
    assert j["text"] == ref["cont"], (prompt, j["tokens"])


@pytest.mark.parametrize("i", range(len(PROMPTS)))
def test_stream_is_prompt_then_reference_continuation(generations, i):
    prompt, _, plain, ref = generations[i]
    assert plain == prompt + ref["cont"] + "\n"


def test_first_token_keeps_its_space(generations):
    # The reported case: "Once" then "▁upon" must read "Once upon", not "Onceupon".
    prompt, j, plain, _ = generations[0]
    assert prompt == "Once" and plain.startswith("Once ") and j["text"].startswith(" ")
