"""`-m ORG/NAME[@REVISION]`: checkpoints downloaded from a Hub into huggingface_hub's cache layout.

The Hub is tests/tools/hub_server.py on loopback (HF_ENDPOINT), serving repositories built from the
stories260K fixture; HF_HOME and the program cache live in a temporary folder. The reference for the
generated tokens is `run` on the local stories260K directory; the reference for the cache layout is
huggingface_hub's (blobs/<etag>, snapshots/<commit>/<file> relative symlinks, refs/<revision>), asserted
path by path, and read back by huggingface_hub itself when it is installed.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLI, cli, require
from fixtures import ROOT, STORIES

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "reference"))
from hub_server import HubServer, Repo  # noqa: E402

REPO = "test-org/stories260K"
FILES = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
PROMPT = "Once upon a time"


def stories_files():
    return {f: (require(STORIES) / f).read_bytes() for f in FILES}


def sharded_files(tmp):
    """stories260K's tensors split into two shards plus the standard index (safetensors_np writes them)."""
    import safetensors_np as st
    tensors = st.read_file(str(STORIES / "model.safetensors"))
    dtypes = st.dtypes_of_file(str(STORIES / "model.safetensors"))
    names = sorted(tensors)
    halves = [names[: len(names) // 2], names[len(names) // 2:]]
    files = {f: (STORIES / f).read_bytes() for f in FILES if f != "model.safetensors"}
    weight_map = {}
    for i, half in enumerate(halves):
        shard = "model-%05d-of-00002.safetensors" % (i + 1)
        st.write_file(str(tmp / shard), {n: tensors[n] for n in half}, dtypes={n: dtypes[n] for n in half})
        files[shard] = (tmp / shard).read_bytes()
        weight_map.update({n: shard for n in half})
    st.write_index(str(tmp), weight_map, sum(len(files[s]) for s in set(weight_map.values())))
    files["model.safetensors.index.json"] = (tmp / "model.safetensors.index.json").read_bytes()
    return files


@pytest.fixture()
def hub():
    files = stories_files()
    older = {f: d for f, d in files.items() if f != "generation_config.json"}  # a tag lacking an optional file
    server = HubServer({REPO: Repo({"main": files, "v0": older}),
                        "test-org/gated": Repo({"main": files}, token="hf_test_secret")}).start()
    yield server
    server.stop()


def env_for(tmp_path, server_url, **extra):
    env = dict(os.environ)
    for k in ["HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN_PATH"]:
        env.pop(k, None)
    env.update({"HF_ENDPOINT": server_url, "HF_HOME": str(tmp_path / "hf"), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    env.update(extra)
    return env


def cache_root(tmp_path, repo=REPO):
    return tmp_path / "hf" / "hub" / ("models--" + repo.replace("/", "--"))


def run_tokens(model, env, check=True):
    r = cli("run", "-m", model, "-p", PROMPT, "-n", "24", "--temp", "0", "--json", env=env, check=check, timeout=300)
    return (json.loads(r.stdout)["tokens"] if r.returncode == 0 else None), r


@pytest.fixture(scope="module")
def local_tokens(tmp_path_factory):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path_factory.mktemp("xdg")))
    tokens, _ = run_tokens(require(STORIES), env)
    return tokens


def assert_hub_layout(root, commit, files, revision="main"):
    """huggingface_hub's layout: refs/<revision> holds the commit (no newline), each snapshot file is a
    relative symlink to ../../blobs/<etag>, an LFS file's etag being the sha256 of its bytes."""
    assert (root / "refs" / revision).read_text() == commit
    for name, data in files.items():
        link = root / "snapshots" / commit / name
        assert link.is_symlink(), name
        target = os.readlink(link)
        assert target.startswith("../../blobs/"), target
        etag = target[len("../../blobs/"):]
        if name.endswith(".safetensors"):
            assert etag == hashlib.sha256(data).hexdigest()
        else:
            assert etag == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # the server's ETag
        assert (root / "blobs" / etag).read_bytes() == data
    assert not list((root / "blobs").glob("*.incomplete"))


def hf_hub_reads(tmp_path, repo, files):
    """When huggingface_hub is installed: it finds our files offline, in place."""
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        return
    from huggingface_hub import try_to_load_from_cache
    for f in files:
        p = try_to_load_from_cache(repo, f, cache_dir=str(tmp_path / "hf" / "hub"))
        assert isinstance(p, str) and Path(p).read_bytes() == files[f]


def test_download_then_run_gives_the_local_tokens(hub, tmp_path, local_tokens):
    env = env_for(tmp_path, hub.url)
    tokens, r = run_tokens(REPO, env)
    assert tokens == local_tokens
    files = stories_files()
    commit = hub.repos[REPO].refs["main"]
    assert_hub_layout(cache_root(tmp_path), commit, files)
    hf_hub_reads(tmp_path, REPO, files)
    # stderr is not a terminal: one line per downloaded file, no bar
    for f in files:
        assert f"hfstatic: downloaded {REPO}/{f}," in r.stderr
    assert "\r" not in r.stderr
    # The LFS file came from the CDN redirect, without Range (nothing to resume).
    assert any(m == "GET" and p.startswith("/cdn/") for m, p, _ in hub.requests)
    assert hub.ranges() == []
    # export by Hub name too: the same program
    out = tmp_path / "by-name.hfs"
    cli("export", REPO, "-o", out, env=env, check=True)
    assert run_tokens(out, env)[0] == local_tokens
    # and tokenize: the snapshot's tokenizer encodes as the local directory's
    ids = cli("tokenize", "-m", REPO, "--json", PROMPT, env=env, check=True).stdout
    assert json.loads(ids) == json.loads(cli("tokenize", "-m", STORIES, "--json", PROMPT, check=True).stdout)


def test_interrupted_download_resumes_in_the_same_run(hub, tmp_path, local_tokens):
    hub.drops = 1
    tokens, r = run_tokens(REPO, env_for(tmp_path, hub.url))
    assert tokens == local_tokens
    assert "transfer interrupted" in r.stderr and "resuming" in r.stderr
    size = len(stories_files()["model.safetensors"])
    ranges = hub.ranges()
    assert len(ranges) == 1, ranges
    start = int(ranges[0][len("bytes="):-1])
    assert 0 < start < size


def test_interrupted_download_resumes_in_the_next_run(hub, tmp_path, local_tokens):
    env = env_for(tmp_path, hub.url)
    hub.drops = 100  # every attempt of the first run is cut off
    _, r = run_tokens(REPO, env, check=False)
    assert r.returncode == 1
    assert "model.safetensors" in r.stderr and "the next run resumes it" in r.stderr
    root = cache_root(tmp_path)
    commit = hub.repos[REPO].refs["main"]
    parts = list((root / "blobs").glob("*.incomplete"))
    assert len(parts) == 1
    have = parts[0].stat().st_size
    assert 0 < have < len(stories_files()["model.safetensors"])
    assert not (root / "snapshots" / commit / "model.safetensors").exists()
    hub.drops = 0
    hub.requests.clear()
    tokens, _ = run_tokens(REPO, env)
    assert tokens == local_tokens
    assert hub.ranges() == [f"bytes={have}-"]
    assert_hub_layout(root, commit, stories_files())


def test_corrupt_download_is_rejected_and_not_cached(hub, tmp_path, local_tokens):
    env = env_for(tmp_path, hub.url)
    hub.corrupt = True
    _, r = run_tokens(REPO, env, check=False)
    assert r.returncode == 1
    assert "checksum_mismatch" in r.stderr and "model.safetensors" in r.stderr and "sha256" in r.stderr
    assert "deleted" in r.stderr
    root = cache_root(tmp_path)
    sha = hashlib.sha256(stories_files()["model.safetensors"]).hexdigest()
    assert not (root / "blobs" / sha).exists() and not (root / "blobs" / (sha + ".incomplete")).exists()
    assert not list((root / "snapshots").glob("*/model.safetensors"))
    assert not (root / "refs" / "main").exists()
    hub.corrupt = False
    assert run_tokens(REPO, env)[0] == local_tokens


def test_gated_repository_needs_the_token(hub, tmp_path, local_tokens):
    _, r = run_tokens("test-org/gated", env_for(tmp_path, hub.url), check=False)
    assert r.returncode == 1
    assert "permission_denied" in r.stderr and "'test-org/gated'" in r.stderr
    assert "HTTP 401" in r.stderr and "set HF_TOKEN" in r.stderr and "license" in r.stderr
    _, r = run_tokens("test-org/gated", env_for(tmp_path, hub.url, HF_TOKEN="hf_wrong"), check=False)
    assert r.returncode == 1 and "was refused" in r.stderr
    hub.requests.clear()
    tokens, _ = run_tokens("test-org/gated", env_for(tmp_path, hub.url, HF_TOKEN="hf_test_secret"))
    assert tokens == local_tokens
    resolves = [h for m, p, h in hub.requests if "/resolve/" in p]
    assert resolves and all(h.get("Authorization") == "Bearer hf_test_secret" for h in resolves)


def test_token_file_in_hf_home(hub, tmp_path, local_tokens):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "token").write_text("hf_test_secret\n")
    assert run_tokens("test-org/gated", env_for(tmp_path, hub.url))[0] == local_tokens


def test_cache_reused_without_network_and_offline(hub, tmp_path, local_tokens):
    env = env_for(tmp_path, hub.url)
    assert run_tokens(REPO, env)[0] == local_tokens
    dead = hub.url
    hub.stop()
    # the network is down: the cached snapshot of refs/main, with a note
    tokens, r = run_tokens(REPO, env_for(tmp_path, dead))
    assert tokens == local_tokens
    assert "using the cached snapshot" in r.stderr and dead in r.stderr
    # offline: no request at all
    tokens, r = run_tokens(REPO, env_for(tmp_path, dead, HF_HUB_OFFLINE="1"))
    assert tokens == local_tokens and "note" not in r.stderr
    # neither network nor cache: the URL and curl's reason; offline: what is missing
    fresh = tmp_path / "fresh"
    _, r = run_tokens(REPO, env_for(fresh, dead), check=False)
    assert r.returncode == 1 and "network" in r.stderr
    assert f"{dead}/{REPO}/resolve/main/config.json" in r.stderr and "onnect" in r.stderr  # "Couldn't connect"
    _, r = run_tokens(REPO, env_for(fresh, dead, HF_HUB_OFFLINE="1"), check=False)
    assert r.returncode == 1 and "offline mode (HF_HUB_OFFLINE=1)" in r.stderr and "not in the cache" in r.stderr


def test_revision_tag_and_commit(hub, tmp_path, local_tokens):
    env = env_for(tmp_path, hub.url)
    repo = hub.repos[REPO]
    old = repo.refs["v0"]
    assert run_tokens(REPO + "@v0", env)[0] == local_tokens
    root = cache_root(tmp_path)
    older = {f: d for f, d in stories_files().items() if f != "generation_config.json"}
    assert_hub_layout(root, old, older, revision="v0")
    # the optional file the tag lacks is remembered as huggingface_hub does
    assert (root / ".no_exist" / old / "generation_config.json").is_file()
    assert not (root / "refs" / "main").exists()
    # a commit hash: resolved directly, and once cached, no request at all
    main = repo.refs["main"]
    assert run_tokens(f"{REPO}@{main}", env)[0] == local_tokens
    assert (root / "snapshots" / main / "model.safetensors").is_symlink()
    hub.requests.clear()
    assert run_tokens(f"{REPO}@{main}", env)[0] == local_tokens
    assert hub.requests == []
    _, r = run_tokens(REPO + "@nope", env, check=False)
    assert r.returncode == 1 and "no revision 'nope'" in r.stderr and "not_found" in r.stderr


def test_sharded_checkpoint(tmp_path, local_tokens):
    files = sharded_files(tmp_path)
    server = HubServer({"test-org/sharded": Repo({"main": files})}).start()
    try:
        env = env_for(tmp_path, server.url)
        assert run_tokens("test-org/sharded", env)[0] == local_tokens
        root = cache_root(tmp_path, "test-org/sharded")
        assert_hub_layout(root, server.repos["test-org/sharded"].refs["main"], files)
        assert not (root / "snapshots" / server.repos["test-org/sharded"].refs["main"] / "model.safetensors").exists()
    finally:
        server.stop()


def test_unknown_repository_and_missing_weights(hub, tmp_path):
    env = env_for(tmp_path, hub.url)
    _, r = run_tokens("nobody/nothing", env, check=False)
    assert r.returncode == 1
    assert "not_found" in r.stderr and "'nobody/nothing' not found" in r.stderr and "HTTP 404" in r.stderr
    server = HubServer({"test-org/no-weights": Repo({"main": {"config.json": stories_files()["config.json"]}})}).start()
    try:
        _, r = run_tokens("test-org/no-weights", env_for(tmp_path, server.url), check=False)
        assert r.returncode == 1 and "has neither model.safetensors nor model.safetensors.index.json" in r.stderr
    finally:
        server.stop()


def test_concurrent_downloads_of_one_blob_fetch_it_once(hub, tmp_path):
    # Two processes at once: the blob's lock (huggingface_hub's .locks/ file) makes the second wait and
    # link what the first downloaded, instead of both writing the same .incomplete file.
    hub.delay = 1.0
    env = env_for(tmp_path, hub.url)
    procs = [subprocess.Popen([CLI, "export", REPO, "-o", str(tmp_path / f"p{i}.hfs")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    cdn_gets = [p for m, p, _ in hub.requests if m == "GET" and p.startswith("/cdn/")]
    assert len(cdn_gets) == 1, cdn_gets
    sha = hashlib.sha256(stories_files()["model.safetensors"]).hexdigest()
    assert (tmp_path / "hf" / "hub" / ".locks" / ("models--" + REPO.replace("/", "--")) / (sha + ".lock")).exists()
    assert (tmp_path / "p0.hfs").read_bytes() == (tmp_path / "p1.hfs").read_bytes()


def test_names_that_are_not_hub_names_stay_paths(tmp_path):
    # a missing .hfs with one slash, and a path of two slashes: the usual file error, no request
    for name in ["models/missing.hfs", "a/b/c"]:
        r = cli("run", "-m", name, "-p", PROMPT, env=env_for(tmp_path, "http://127.0.0.1:9"), check=False)
        assert r.returncode != 0 and "resolve" not in r.stderr, r.stderr


def test_body_longer_than_announced_is_stopped_at_the_announced_size(hub, tmp_path):
    """HEAD announces config.json's few hundred bytes; the GET sends 200 MiB more. The client stops at the
    announced size (what went out is what the socket buffers held, not the 200 MiB), names the file and the
    size, and caches nothing."""
    hub.extra = 200 << 20
    env = env_for(tmp_path, hub.url)
    r = cli("export", REPO, "-o", str(tmp_path / "p.hfs"), env=env, check=False, timeout=120)
    assert r.returncode != 0
    m = re.search(r"file '([^']+)': the server sent more than the announced (\d+) bytes", r.stderr)
    assert m, r.stderr
    assert int(m.group(2)) == len((STORIES / m.group(1)).read_bytes())
    assert hub.sent < (32 << 20), hub.sent
    root = cache_root(tmp_path)
    assert not list(root.glob("blobs/*")), list(root.glob("blobs/*"))
    assert not (tmp_path / "p.hfs").exists()


def test_endless_unsized_body_is_capped(hub, tmp_path):
    """A small file announced with no size and sent as an endless chunked body stops at the cap for unsized
    files (256 MiB), named in the error, and nothing is cached."""
    hub.unsized = True
    env = env_for(tmp_path, hub.url)
    r = cli("export", REPO, "-o", str(tmp_path / "p.hfs"), env=env, check=False, timeout=300)
    assert r.returncode != 0
    assert re.search(r"file '[^']+\.json': the server sent more than 268435456 bytes", r.stderr), r.stderr
    assert "max_unsized_bytes" in r.stderr
    assert hub.sent < (256 << 20) + (64 << 20), hub.sent
    assert not list(cache_root(tmp_path).glob("blobs/*"))
