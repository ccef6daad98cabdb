"""HFS_CPU_FAST_HALF_GEMV through the CLI: a forced f16/bf16 decode kernel variant runs, a bad name fails the load."""
import os

from conftest import cli


def _env(value):
    env = dict(os.environ)
    env["HFS_CPU_FAST_HALF_GEMV"] = value
    return env


def test_forced_variant_runs_and_unknown_fails_the_load(stories_dir, tmp_path):
    program = tmp_path / "stories-bf16.hfs"
    cli("export", stories_dir, "-o", program, "--weights", "bf16", "--context", "64", check=True)
    args = ("run", "-m", program, "-p", "Once upon a time", "-n", "8", "--temp", "0")
    base = cli(*args, env=_env("default"), check=True)
    forced = cli(*args, env=_env("ymm-r1-nopf"), check=True)
    assert forced.stdout == base.stdout  # greedy text is the same whichever kernel reads the weights
    bad = cli(*args, env=_env("zmm-r9-warp"), check=False)
    assert bad.returncode == 1
    assert "HFS_CPU_FAST_HALF_GEMV='zmm-r9-warp' is not a GEMV variant" in bad.stderr
    assert "choices: default, tune, ymm-default" in bad.stderr
    assert bad.stdout == ""


def test_unknown_variant_fails_even_without_16_bit_weights(stories_program):
    bad = cli("run", "-m", stories_program, "-p", "Hi", "-n", "2", env=_env("nope"), check=False)
    assert bad.returncode == 1
    assert "HFS_CPU_FAST_HALF_GEMV='nope'" in bad.stderr
