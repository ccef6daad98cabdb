"""Fixtures for the hfstatic Python module tests.

Run (after building the module): PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
Environment: HFS_SHARED_DIR (the shared fixtures, default ../shared beside the repo; tests/fixtures.py),
HFS_CLI (the hfstatic CLI, for the comparison with `hfstatic run`).
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "reference"))
sys.path.insert(0, str(ROOT / "tests"))
import fixtures  # noqa: E402
from fixtures import STORIES, require  # noqa: E402

import hfstatic  # noqa: E402

# The test program: a small context (capacity tests) and a prefill chunk that forces padding and multi-chunk
# prompts.
CONTEXT = 96
CHUNK = 8


@pytest.fixture(scope="session")
def stories_dir():
    return require(STORIES)


@pytest.fixture(scope="session")
def program_path(stories_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("programs") / "stories260K.hfs"
    assert hfstatic.export(stories_dir, out, prefill_chunk=CHUNK, context=CONTEXT) == str(out)
    return out


@pytest.fixture
def runner(program_path):
    return hfstatic.Runner(program_path)


@pytest.fixture(scope="session")
def reference(stories_dir):
    """The independent PyTorch reference model (tests/reference/hf_reference.py) and its vocab."""
    import hf_reference as ref
    return ref, ref.load_model(str(stories_dir)), ref.load_vocab(str(stories_dir))


def pytest_collection_modifyitems(items):
    # Without stories260K (a fresh clone, no ../shared) its tests skip with one line; CI=true fails instead.
    fixtures.skip_tests_needing_stories(items)
