"""The bundled default model (models/kjv-llama): a user's first command runs on it, from a clean clone.

Its greedy text must be recognisably the King James Version's English: nearly every word it writes is a
word of the KJV, read independently from Debian's bible-kjv text (not from the model's tokenizer). The same
measure on a random-weight model over the same tokenizer shows the check can fail.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, cli

sys.path.insert(0, str(ROOT / "tests"))
from fixtures import DEFAULT_MODEL  # noqa: E402

PROMPT = "And God said"


@pytest.fixture(scope="module")
def kjv_words():
    if shutil.which("bible") is None:
        pytest.fail("the `bible` program is missing: scripts/install-deps installs bible-kjv + bible-kjv-text")
    text = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True, text=True,
                          env={"COLUMNS": "100000", "PATH": "/usr/bin:/bin"}).stdout
    return {w.lower() for w in re.findall(r"[A-Za-z]+", text)}


def generated_words(model, tmp_path, *options):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = cli("run", "-m", model, "-p", PROMPT, "-n", "150", "--temp", "0", *options, env=env, check=True).stdout
    assert out.startswith(PROMPT), out[:200]
    return [w.lower() for w in re.findall(r"[A-Za-z]+", out[len(PROMPT):])]


def kjv_share(words, vocabulary):
    return sum(w in vocabulary for w in words) / max(1, len(words))


@pytest.mark.parametrize("penalty", ["1", "1.3"])
def test_default_model_writes_kjv_english(tmp_path, kjv_words, penalty):
    # The checkpoint directory itself is what the Quick start runs (exported once into the program cache),
    # greedy with the demo's repetition penalty (1.3: a model this small loops on a phrase without one).
    words = generated_words(DEFAULT_MODEL, tmp_path, "--repeat-penalty", penalty)
    assert len(words) >= 60, words
    if penalty != "1":
        assert len(set(words)) >= 40, f"the text loops on a few words: {' '.join(words)}"
    share = kjv_share(words, kjv_words)
    assert share >= 0.95, f"only {share:.0%} of the words are KJV words: {' '.join(words)}"


def test_an_untrained_model_fails_the_same_measure(tmp_path, kjv_words):
    untrained = tmp_path / "untrained"
    subprocess.run([sys.executable, ROOT / "scripts" / "make-checkpoint", "llama", untrained,
                    "--tokenizer-from", DEFAULT_MODEL, "--vocab-size", "2048", "--seed", "3"], check=True,
                   capture_output=True)
    share = kjv_share(generated_words(untrained, tmp_path), kjv_words)
    assert share < 0.8, f"random weights reached {share:.0%}: the measure cannot tell a trained model apart"
