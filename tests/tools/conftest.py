"""Shared pieces of the CLI tests: where the CLI and the fixtures are, and a subprocess helper.

The CLI is $HFS_CLI (CTest sets it) or build/hfstatic. The stories260K checkpoint is $HFS_STORIES_DIR, else
models/stories260K under $HFS_SHARED_DIR, else under ../shared beside the repository root.
"""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("HFS_CLI", str(ROOT / "build" / "hfstatic"))
SHARED = Path(os.environ.get("HFS_SHARED_DIR", ROOT.parent / "shared"))
STORIES = Path(os.environ.get("HFS_STORIES_DIR", SHARED / "models" / "stories260K"))


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
    if not (STORIES / "config.json").exists():
        pytest.fail(f"stories260K fixture missing at {STORIES}: set HFS_STORIES_DIR or HFS_SHARED_DIR "
                    "(the shared fixtures folder, ../shared beside the repository by default)")
    return STORIES


@pytest.fixture(scope="session")
def stories_program(stories_dir, tmp_path_factory):
    """stories260K exported with a small chunk and context, so multi-chunk and capacity cases stay fast."""
    out = tmp_path_factory.mktemp("programs") / "stories.hfs"
    cli("export", stories_dir, "-o", out, "--prefill-chunk", "16", "--context", "256", check=True)
    return out
