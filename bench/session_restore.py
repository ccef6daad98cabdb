"""A restored session's first logits against prefilling the same prompt (docs/sessions.md).

Usage: PYTHONPATH=build/python python3 bench/session_restore.py PROGRAM.hfs N_TOKENS
(the HISTORY entry: the default model exported with --context 4096, N_TOKENS 4000). Random token ids in
[3, 2000); best of 3; checks the two logits are bit-identical.
"""
import sys, time, os, random
import tempfile

import numpy as np
import hfstatic
P, N = sys.argv[1], int(sys.argv[2])
random.seed(0)
SESSION = os.path.join(tempfile.mkdtemp(), "bench.session")
toks = [1] + [random.randrange(3, 2000) for _ in range(N - 1)]
setup = hfstatic.Runner(P)
setup.prefill(toks[:-1]); setup.save(SESSION)
size = os.path.getsize(SESSION)
best_p = best_r = 1e9
for rep in range(3):
    a = hfstatic.Runner(P)
    t = time.perf_counter(); a.prefill(toks); la = np.copy(a.logits); tp = time.perf_counter() - t
    b = hfstatic.Runner(P)
    t = time.perf_counter(); b.restore(SESSION); b.prefill(toks[-1:]); lb = np.copy(b.logits); tr = time.perf_counter() - t
    assert np.array_equal(la, lb), "restored != recomputed"
    best_p, best_r = min(best_p, tp), min(best_r, tr)
print(f"{N} tokens: prefill -> first logits {best_p*1000:.1f} ms; restore ({size/1e6:.1f} MB file) + 1-token prefill {best_r*1000:.2f} ms; {best_p/best_r:.0f}x; logits bit-identical")
