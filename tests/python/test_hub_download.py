"""hfstatic.hub_download(): a checkpoint by Hub name from the loopback Hub of tests/tools/hub_server.py.

The snapshot it returns holds the fixture's bytes (the independent reference) in huggingface_hub's layout,
and failures are hfstatic.Error with the code the C++ API reports."""
import os
import sys
from pathlib import Path

import pytest

import hfstatic
from fixtures import ROOT, STORIES, require

sys.path.insert(0, str(ROOT / "tests" / "tools"))
from hub_server import HubServer, Repo  # noqa: E402

FILES = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]


@pytest.fixture()
def hub(monkeypatch, tmp_path):
    files = {f: (require(STORIES) / f).read_bytes() for f in FILES}
    server = HubServer({"test-org/stories": Repo({"main": files}), "test-org/gated": Repo({"main": files}, token="tok")}).start()
    for k in ["HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN_PATH"]:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    yield server, files
    server.stop()


def test_hub_download_returns_the_snapshot(hub, tmp_path):
    server, files = hub
    snap = Path(hfstatic.hub_download("test-org/stories"))
    commit = server.repos["test-org/stories"].refs["main"]
    assert snap == tmp_path / "hf" / "hub" / "models--test-org--stories" / "snapshots" / commit
    for f, data in files.items():
        assert (snap / f).is_symlink() and (snap / f).read_bytes() == data
    # offline from the cache: the same directory, even with the server gone
    server.stop()
    assert Path(hfstatic.hub_download("test-org/stories", offline=True)) == snap


def test_hub_download_errors(hub, tmp_path):
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.hub_download("test-org/gated")
    assert e.value.code == "permission_denied" and "HF_TOKEN" in str(e.value)
    assert Path(hfstatic.hub_download("test-org/gated", token="tok")).is_dir()
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.hub_download("nobody/nothing")
    assert e.value.code == "not_found"
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.hub_download("not a name")
    assert e.value.code == "invalid_argument"
    with pytest.raises(hfstatic.Error) as e:
        hfstatic.hub_download("test-org/stories", offline=True, cache_dir=str(tmp_path / "empty"))
    assert e.value.code == "not_found" and "HF_HUB_OFFLINE" in str(e.value)
