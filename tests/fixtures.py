"""The one place Python tests learn where the shared fixtures are (tests/support/fixtures.h is the C++ twin).

$HFS_SHARED_DIR is the shared fixtures folder; by default `shared` beside the repository root (../shared).
A test that needs a fixture which is missing fails with a message saying how to provide it.
"""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HFS_SHARED_DIR") or ROOT.parent / "shared").resolve()
STORIES = SHARED / "models" / "stories260K"
# The default model lives in the repository (scripts/train-default-model): no fixture folder needed.
DEFAULT_MODEL = ROOT / "models" / "kjv-llama"


def missing_message(path):
    return (f"test fixture {path} is missing: set HFS_SHARED_DIR to the shared fixtures folder "
            f"(default: ../shared beside the repository root, holding models/stories260K)")


def require(path):
    """`path` if it exists, else fails the calling test with how to get it."""
    import pytest
    if not Path(path).exists():
        pytest.fail(missing_message(path))
    return Path(path)
