"""The one place Python tests learn where the shared fixtures are (tests/support/fixtures.h is the C++ twin).

$HFS_SHARED_DIR is the shared fixtures folder; by default `shared` beside the repository root (../shared).
A test that needs a fixture which is missing is skipped with one line saying what is missing and how to
provide it; under CI=true (scripts/test in CI) it fails instead, so CI never passes by skipping.
"""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HFS_SHARED_DIR") or ROOT.parent / "shared").resolve()
STORIES = SHARED / "models" / "stories260K"
# The default model lives in the repository (scripts/train-default-model): no fixture folder needed.
DEFAULT_MODEL = ROOT / "models" / "kjv-llama"


def missing_message(path):
    return (f"test fixture {path} is missing: set HFS_SHARED_DIR to a folder holding models/stories260K "
            f"(karpathy/tinyllamas' stories260K in HF layout; default: ../shared beside the repository root)")


def fixtures_required():
    """True when a missing fixture is a failure, not a skip: CI=true (as CI services set it)."""
    return os.environ.get("CI") == "true"


def require(path):
    """`path` if it exists; else skips the calling test (fails it under CI=true) with how to get it."""
    import pytest
    if not Path(path).exists():
        if fixtures_required():
            pytest.fail(missing_message(path))
        pytest.skip(missing_message(path))
    return Path(path)


def _uses(fn, name, depth=3, seen=None):
    """True when function `fn` (or a function it names, `depth` calls deep, or a nested function or
    lambda in it) reads the global `name`."""
    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    codes, names = [code], set()
    while codes:
        c = codes.pop()
        names |= set(c.co_names)
        codes += [k for k in c.co_consts if hasattr(k, "co_names")]
    if name in names:
        return True
    g = getattr(fn, "__globals__", {})
    return depth > 0 and any(callable(g.get(n)) and _uses(g[n], name, depth - 1, seen) for n in names)


def needs_stories(item):
    """True when a collected test reads STORIES, itself or through a fixture or helper it uses."""
    if _uses(getattr(item, "function", None), "STORIES"):
        return True
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(_uses(d.func, "STORIES") for ds in defs.values() for d in ds)


def skip_tests_needing_stories(items):
    """For pytest_collection_modifyitems: when stories260K is missing, the tests that need it are skipped
    with one line saying so (under CI=true the session stops with that line instead)."""
    import pytest
    if STORIES.exists():
        return
    needing = [i for i in items if needs_stories(i)]
    if not needing:
        return
    if fixtures_required():
        raise pytest.UsageError(missing_message(STORIES))
    for i in needing:
        i.add_marker(pytest.mark.skip(reason=missing_message(STORIES)))
