"""Run to run, across processes (docs/determinism.md): the same program and prompt in two processes, one
pinned to one CPU (cpu_fast then runs 1 thread) and one on every CPU the test may use, give byte-identical
logits (`--dump-logits`) and text, for f16 (float prefill rows through decode's kernel) and int4 weights.
About 1 s: stories260K, a 40-token prompt over a 32-token chunk and its tail, 8 generated tokens."""
import os
import shutil
import subprocess

import pytest

from conftest import CLI, cli

PROMPT = ",".join(str(7 * i % 500 + 3) for i in range(40))


def _run(program, logits, cpu=None):
    """`hfstatic run` greedily; `cpu`: pinned there by taskset, whose affinity sets cpu_fast's thread count."""
    env = dict(os.environ)
    env.pop("HFS_CPU_FAST_HALF_GEMV", None)
    args = [CLI, "run", "-m", str(program), "--tokens", PROMPT, "-n", "8", "--temp", "0", "--dump-logits", str(logits)]
    if cpu is not None:
        args = ["taskset", "-c", str(cpu)] + args
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, f"{args}: rc {r.returncode}\n{r.stderr}"
    return r


@pytest.mark.parametrize("weights", ["f16", "int4"])
def test_two_processes_on_one_and_every_cpu_give_the_same_bits(stories_dir, tmp_path, weights):
    if len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None:
        pytest.skip("needs 2 CPUs and taskset to compare thread counts")
    program = tmp_path / f"stories-{weights}.hfs"
    cli("export", stories_dir, "-o", program, "--weights", weights, "--context", "64", "--prefill-chunk", "32",
        "--cache-dtype", "f16", check=True)
    one, every = tmp_path / "one.bin", tmp_path / "every.bin"
    a = _run(program, one, cpu=min(os.sched_getaffinity(0)))
    b = _run(program, every)
    assert a.stdout == b.stdout
    assert len(one.read_bytes()) > 0
    assert one.read_bytes() == every.read_bytes()
