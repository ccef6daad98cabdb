"""Shared pieces of the CLI tests: where the CLI and the fixtures are, and a subprocess helper.

The CLI is $HFS_CLI (CTest sets it) or build/hfstatic; fixtures come from tests/fixtures.py.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixtures  # noqa: E402
from fixtures import ROOT, STORIES, require  # noqa: E402

CLI = os.environ.get("HFS_CLI", str(ROOT / "build" / "hfstatic"))


def cli(*args, stdin=None, env=None, timeout=120, check=None):
    """Runs the CLI; check=True asserts exit 0, check=False asserts a non-zero exit (never a crash signal)."""
    r = subprocess.run([CLI] + [str(a) for a in args], input=stdin, capture_output=True, text=True, env=env,
                       timeout=timeout)
    if check is True:
        assert r.returncode == 0, f"{args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    elif check is False:
        assert 0 < r.returncode < 128, f"{args}: expected a clean error exit, got rc {r.returncode}\n{r.stderr}"
    return r


@pytest.fixture(scope="session")
def stories_dir():
    return require(STORIES)


@pytest.fixture(scope="session")
def stories_program(stories_dir, tmp_path_factory):
    """stories260K exported with a small chunk and context, so multi-chunk and capacity cases stay fast."""
    out = tmp_path_factory.mktemp("programs") / "stories.hfs"
    cli("export", stories_dir, "-o", out, "--prefill-chunk", "16", "--context", "256", check=True)
    return out


def export_with_chat_template(directory, template):
    """stories260K with `template` as its chat template, exported (chunk 16, context 256) into `directory`."""
    import json
    for f in ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "special_tokens_map.json"]:
        (directory / f).write_bytes((STORIES / f).read_bytes())
    cfg = json.loads((STORIES / "tokenizer_config.json").read_text())
    cfg["chat_template"] = template
    (directory / "tokenizer_config.json").write_text(json.dumps(cfg))
    out = directory / "chat.hfs"
    cli("export", directory, "-o", out, "--prefill-chunk", "16", "--context", "256", check=True)
    return out


def pytest_collection_modifyitems(items):
    # Without stories260K (a fresh clone, no ../shared) its tests skip with one line; CI=true fails instead.
    fixtures.skip_tests_needing_stories(items)
