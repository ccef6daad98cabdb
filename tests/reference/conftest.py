"""Shared fixtures: the make-checkpoint script imported as a module, and a cache of generated checkpoints."""

import importlib.machinery
import importlib.util
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

MAKE_CHECKPOINT = os.path.join(REPO, "scripts", "make-checkpoint")
REFERENCE_CLI = os.path.join(HERE, "reference.py")
sys.path.insert(0, os.path.dirname(HERE))
import fixtures  # noqa: E402
from fixtures import STORIES as _STORIES, missing_message  # noqa: E402

STORIES = str(_STORIES)


def _load_script(path, name):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def mc():
    return _load_script(MAKE_CHECKPOINT, "make_checkpoint")


@pytest.fixture(scope="session")
def make_ckpt(mc, tmp_path_factory):
    """make_ckpt(arch, **make_checkpoint kwargs) -> dir; identical requests share one directory."""
    cache = {}

    def make(arch, **kwargs):
        key = (arch, tuple(sorted(kwargs.items())))
        if key not in cache:
            out = str(tmp_path_factory.mktemp(f"{arch}-ckpt"))
            mc.make_checkpoint(arch, out, tokenizer_from=STORIES, **kwargs)
            cache[key] = out
        return cache[key]

    return make


@pytest.fixture(scope="session")
def stories_dir():
    if not os.path.exists(os.path.join(STORIES, "model.safetensors")):
        pytest.fail(missing_message(STORIES))
    return STORIES


def pytest_collection_modifyitems(items):
    # Without stories260K (a fresh clone, no ../shared) its tests skip with one line; CI=true fails instead.
    fixtures.skip_tests_needing_stories(items)
