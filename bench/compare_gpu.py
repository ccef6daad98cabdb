"""`bench/compare --backend vulkan`: hfstatic's Vulkan backend against llama.cpp's GPU builds, in one invocation.

The same random-weight checkpoints, GGUFs and .hfs programs as the CPU comparison (bench/compare makes them), but:
- hfstatic runs `bench --backend vulkan` (every op on the GPU; the JSON's decode_step splits a decode step into
  device time and host overhead, from the backend's timestamp queries);
- the peers are llama.cpp's prebuilt Vulkan and CUDA builds (npm @node-llama-cpp/linux-x64-vulkan and
  linux-x64-cuda, the same release as the CPU peer, which `npm install node-llama-cpp` fetches as optional
  packages), each driven by bench/llamacpp/driver.cpp linked against that build's libraries, with
  --gpu-layers 99 (llama.cpp's -ngl 99: every layer and the output on the GPU). A build whose libraries are
  missing, or that finds no GPU (the CUDA build without an NVIDIA driver), becomes an error in its columns;
  the others still run;
- multi-sequence rows: aggregate decode at B = 1 and 16 (--sequences), hfstatic's engine on the GPU and
  llama.cpp's batched decode, with each engine's B/B1 ratio.

At the end the issue's targets are checked against the medians and printed (decode >= 1.2x llama.cpp Vulkan and
>= 1.0x CUDA, prefill >= 1.0x Vulkan, host overhead <= 5 % of a decode step, B = 16 aggregate >= 8x B = 1).

--llama-bundle DIR replaces the npm tree: DIR/<build>/driver with that build's libraries beside it (the layout
scripts/device-check prepares, so a machine without network runs the comparison). See bench/README.md.
"""

import json
import os
import statistics

GPU_BUILDS = {  # peer -> npm package folder under @node-llama-cpp
    "vulkan": "linux-x64-vulkan",
    "cuda": "linux-x64-cuda",
}
TARGETS = {  # what the issue asks of a GPU run
    "decode_vs_vulkan": 1.2,
    "decode_vs_cuda": 1.0,
    "prefill_vs_vulkan": 1.0,
    "host_overhead_share_max": 0.05,
    "b16_over_b1": 8.0,
}


def peer_lib_dir(C, build):
    pkg = GPU_BUILDS[build]
    return os.path.join(C.NPM_DIR, "node_modules", "@node-llama-cpp", pkg, "bins", pkg)


def build_driver(C, build, tag):
    """The driver linked against one GPU build's libraries (same release as the headers): build/bench-llamacpp/
    driver-<build>, rpath to the npm folder and then $ORIGIN (so a copy beside the libraries runs elsewhere)."""
    lib_dir = peer_lib_dir(C, build)
    if not os.path.isdir(lib_dir):
        raise RuntimeError(f"{lib_dir} missing: npm did not install @node-llama-cpp/{GPU_BUILDS[build]}")
    with open(os.path.join(lib_dir, "_nlcBuildMetadata.json")) as f:
        bin_tag = json.load(f)["buildOptions"]["llamaCpp"]["release"]
    if bin_tag != tag:
        raise RuntimeError(f"{lib_dir} holds llama.cpp {bin_tag}, the headers are {tag}")
    driver = os.path.join(C.BUILD, "bench-llamacpp", "driver-" + build)
    if not os.path.isfile(driver) or os.path.getmtime(driver) < os.path.getmtime(C.DRIVER_SRC):
        libs = sorted(os.listdir(lib_dir))
        llama = next(n for n in libs if n.startswith("libllama.") and "common" not in n)
        ggml = next(n for n in libs if n.startswith("libggml.") and n.endswith(".so"))
        C.log(f"compiling {driver} against {tag} headers and {llama}, {ggml}")
        C.run(["g++", "-O2", "-std=c++17", "-Wall", "-Wextra", f"-I{C.SRC_DIR}/include",
               f"-I{C.SRC_DIR}/ggml/include", C.DRIVER_SRC, "-o", driver, f"-L{lib_dir}", f"-l:{llama}", f"-l:{ggml}",
               "-l:libggml-base.so", f"-Wl,-rpath,{lib_dir}:$ORIGIN"])
    return driver, lib_dir


def peers(C, a, tag):
    """build -> (driver, backend dir) or an error string."""
    out = {}
    for build in a.llama_builds:
        if a.llama_bundle:
            d = os.path.join(a.llama_bundle, build)
            drv = os.path.join(d, "driver")
            out[build] = (drv, d) if os.access(drv, os.X_OK) else f"{drv} missing (not in the bundle)"
            continue
        try:
            out[build] = build_driver(C, build, tag)
        except (RuntimeError, StopIteration, OSError) as e:
            out[build] = str(e)
    return out


def peer_env(backend_dir):
    env = dict(os.environ, HFS_GGML_BACKEND_DIR=backend_dir)
    env["LD_LIBRARY_PATH"] = backend_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def measure_peer(C, peer, gguf, a, batched=False):
    drv, d = peer
    cmd = [drv, "batched" if batched else "bench", gguf, "--prompt", str(a.prompt), "--gen", str(a.gen),
           "--threads", str(a.threads), "--reps", str(a.inner_reps), "--gpu-layers", "99"]
    if batched:
        cmd += ["--sequences", ",".join(map(str, a.seq_list))]
    return C.last_json(C.run(cmd, timeout=a.timeout, env=peer_env(d)).stdout)


def measure_hfs(C, hfstatic, hfs, a, batched=False):
    cmd = [hfstatic, "bench", "-m", hfs, "--prompt", str(a.prompt), "--gen", str(a.gen), "--json",
           "--reps", str(a.inner_reps), "--backend", "vulkan"]
    if batched:
        cmd += ["--sequences", ",".join(map(str, a.seq_list))]
    if a.device is not None:
        cmd += ["--device", str(a.device)]
    r = C.run(cmd, timeout=a.timeout, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"hfstatic bench --backend vulkan exit {r.returncode}: "
                           + " | ".join((r.stderr or r.stdout).strip().splitlines()[-2:]))
    return C.last_json(r.stdout)


def step_med(runs, key):
    xs = [r["decode_step"][key] for r in runs if r.get("decode_step") and r["decode_step"].get(key) is not None]
    return statistics.median(xs) if xs else None


def single_row(C, hfstatic, name, prec, ckpt, ps, a):
    row = {"model": name, "precision": prec, "gguf_type": C.GGUF_TYPE[prec], "peers": {}}
    gguf = C.ensure_gguf(name, ckpt, prec, a.threads)
    hfs, err = C.try_run(lambda: C.ensure_hfs(hfstatic, name, ckpt, prec))
    H, P = [], {b: [] for b in ps}
    perr = {b: (p if isinstance(p, str) else None) for b, p in ps.items()}
    for rep in range(a.reps):  # A B C A B C ...
        if hfs and not err:
            r, err = C.try_run(lambda: measure_hfs(C, hfstatic, hfs, a))
            H += [r] if r else []
        for b, p in ps.items():
            if not perr[b]:
                r, perr[b] = C.try_run(lambda: measure_peer(C, p, gguf, a))
                P[b] += [r] if r else []
        C.log(f"{name} {prec} rep {rep + 1}/{a.reps}: hfstatic vulkan "
              f"{'%.1f' % H[-1]['decode_tok_s'] if H and not err else 'ERR'}"
              + "".join(f" | llama.cpp {b} {'%.1f' % P[b][-1]['decode_tok_s'] if P[b] and not perr[b] else 'ERR'}"
                        for b in ps) + " decode tok/s")
    if err:
        row["error"] = err
    row["hfstatic_decode_tps"] = C.med(H, "decode_tok_s") if not err else None
    row["hfstatic_prefill_tps"] = C.med(H, "prefill_tok_s") if not err else None
    row["decode_step_ms"] = step_med(H, "step_ms")
    row["decode_device_ms"] = step_med(H, "device_ms")
    row["decode_host_overhead_ms"] = step_med(H, "host_overhead_ms")
    row["decode_host_overhead_share"] = step_med(H, "host_overhead_share")
    row["decode_device_timed"] = all(r.get("decode_step", {}).get("device_timed") for r in H) if H else None
    row["hfstatic_runs"] = H
    for b in ps:
        e = {"decode_tps": C.med(P[b], "decode_tok_s"), "prefill_tps": C.med(P[b], "prefill_tok_s"),
             "gpu_devices": P[b][0].get("gpu_devices") if P[b] else None, "runs": P[b]}
        if perr[b]:
            e["error"] = perr[b]
        e["decode_ratio"] = C.ratio(row["hfstatic_decode_tps"], e["decode_tps"])
        e["prefill_ratio"] = C.ratio(row["hfstatic_prefill_tps"], e["prefill_tps"])
        row["peers"][b] = e
    return row


def sequences_row(C, hfstatic, name, prec, ckpt, ps, a):
    row = {"model": name, "precision": prec, "gguf_type": C.GGUF_TYPE[prec], "context": C.seq_context(a),
           "peers": {}, "per_sequences": []}
    gguf = C.ensure_gguf(name, ckpt, prec, a.threads)
    hfs, err = C.try_run(lambda: C.ensure_hfs_seq(hfstatic, name, ckpt, prec, a))
    H, P = [], {b: [] for b in ps}
    perr = {b: (p if isinstance(p, str) else None) for b, p in ps.items()}
    for rep in range(a.reps):
        if hfs and not err:
            r, err = C.try_run(lambda: measure_hfs(C, hfstatic, hfs, a, batched=True))
            H += [r] if r else []
        for b, p in ps.items():
            if not perr[b]:
                r, perr[b] = C.try_run(lambda: measure_peer(C, p, gguf, a, batched=True))
                P[b] += [r] if r else []
    if err:
        row["error"] = err
    base = a.seq_list[0]
    for n in a.seq_list:
        e = {"sequences": n,
             "hfstatic_decode_tps": C.med([x for x in (C.per_b(r, n) for r in H) if x], "decode_tok_s"),
             "hfstatic_vs_base": C.scaling(H, n, base)}
        for b in ps:
            e[f"llamacpp_{b}_decode_tps"] = C.med([x for x in (C.per_b(r, n) for r in P[b]) if x], "decode_tok_s")
            e[f"llamacpp_{b}_vs_base"] = C.scaling(P[b], n, base)
        row["per_sequences"].append(e)
    for b in ps:
        row["peers"][b] = {"error": perr[b]} if perr[b] else {}
    row["scaling_base"] = base
    row["hfstatic_runs"] = H
    row["llamacpp_runs"] = P
    return row


def check_targets(rows, srows, emulated=False):
    """Each target against each row: {"target": ..., "row": ..., "value": ..., "bound": ..., "met": bool|None}
    (None: not measured, or measured on a CPU emulation, where no GPU target means anything)."""
    out = []

    def add(name, row, value, target, higher=True):
        met = None if value is None or emulated else (value >= target if higher else value <= target)
        out.append({"target": name, "row": row, "value": value, "bound": target, "met": met})

    for r in rows:
        label = f"{r['model']} {r['precision']}"
        add("decode >= 1.2x llama.cpp vulkan", label, r["peers"].get("vulkan", {}).get("decode_ratio"),
            TARGETS["decode_vs_vulkan"])
        add("decode >= 1.0x llama.cpp cuda", label, r["peers"].get("cuda", {}).get("decode_ratio"),
            TARGETS["decode_vs_cuda"])
        add("prefill >= 1.0x llama.cpp vulkan", label, r["peers"].get("vulkan", {}).get("prefill_ratio"),
            TARGETS["prefill_vs_vulkan"])
        add("host overhead <= 5% of a decode step", label, r.get("decode_host_overhead_share"),
            TARGETS["host_overhead_share_max"], higher=False)
    for r in srows:
        top = r["per_sequences"][-1]
        if top["sequences"] >= 16 and r["scaling_base"] == 1:
            add(f"B={top['sequences']} aggregate >= 8x B=1", f"{r['model']} {r['precision']}",
                top["hfstatic_vs_base"], TARGETS["b16_over_b1"])
    return out


def print_tables(C, rows, srows, targets, builds, emulated):
    def table(hdr, lines, left):
        lines = [hdr] + lines
        w = [max(len(str(l[i])) for l in lines) for i in range(len(hdr))]
        for i, l in enumerate(lines):
            print("  ".join(str(c).ljust(w[j]) if j in left else str(c).rjust(w[j]) for j, c in enumerate(l)))
            if i == 0:
                print("  ".join("-" * x for x in w))

    if rows:
        hdr = ["model", "prec", "hfs dec", "hfs pre"]
        for b in builds:
            hdr += [f"{b} dec", "dec x", f"{b} pre", "pre x"]
        hdr += ["step ms", "device ms", "host %", "note"]
        lines = []
        for r in rows:
            l = [r["model"], r["precision"], C.fmt(r["hfstatic_decode_tps"]), C.fmt(r["hfstatic_prefill_tps"])]
            notes = [("ERROR: " + r["error"][:60])] if r.get("error") else []
            for b in builds:
                e = r["peers"].get(b, {})
                l += [C.fmt(e.get("decode_tps")), C.fmt(e.get("decode_ratio"), "%.2f"), C.fmt(e.get("prefill_tps")),
                      C.fmt(e.get("prefill_ratio"), "%.2f")]
                if e.get("error"):
                    notes.append(f"{b}: {e['error'][:60]}")
            share = r.get("decode_host_overhead_share")
            l += [C.fmt(r.get("decode_step_ms"), "%.3f"), C.fmt(r.get("decode_device_ms"), "%.3f"),
                  C.fmt(share * 100 if share is not None else None, "%.1f%%"), "; ".join(notes)]
            lines.append(l)
        table(hdr, lines, {0, 1, len(hdr) - 1})
        print("tok/s medians; 'x' = hfstatic vulkan / that llama.cpp build (> 1: hfstatic faster); step ms = a decode "
              "step's wall time, device ms = its device time (timestamps), host % = (step - device) / step")
    if srows:
        print()
        hdr = ["model", "prec", "B", "hfs dec (all)", "hfs B/B1"]
        for b in builds:
            hdr += [f"{b} dec (all)", f"{b} B/B1"]
        lines = []
        for r in srows:
            for e in r["per_sequences"]:
                l = [r["model"], r["precision"], str(e["sequences"]), C.fmt(e["hfstatic_decode_tps"]),
                     C.fmt(e["hfstatic_vs_base"], "%.2fx")]
                for b in builds:
                    l += [C.fmt(e.get(f"llamacpp_{b}_decode_tps")), C.fmt(e.get(f"llamacpp_{b}_vs_base"), "%.2fx")]
                lines.append(l)
        table(hdr, lines, {0, 1})
        print("aggregate decode tok/s of B sequences at once (medians); B/B1 = aggregate at B / at the smallest B")
    if targets:
        print()
        if emulated:
            print("--emulated: a CPU emulation of a GPU (lavapipe); these numbers check that everything runs and say "
                  "nothing about GPU speed, so no target is judged")
        for t in targets:
            mark = {True: "met", False: "NOT met", None: "not judged" if emulated else "not measured"}[t["met"]]
            v = "-" if t["value"] is None else "%.3f" % t["value"]
            print(f"{mark:>12}  {t['target']}: {t['row']} = {v}")


def main(C, a, models, precs, seq_rows):
    if a.hfstatic is None:
        a.hfstatic = os.path.join(C.BUILD, "hfstatic")
    hfstatic = a.hfstatic if os.access(a.hfstatic, os.X_OK) else None
    if hfstatic is None:
        raise SystemExit(f"compare --backend vulkan: {a.hfstatic} not found (build hfstatic_cli, or --hfstatic PATH)")
    if a.llama_bundle:
        C.SRC_DIR = os.path.join(a.llama_bundle, "llama.cpp-src")  # gguf-py for to_gguf.py
        first = next((b for b in a.llama_builds if os.access(os.path.join(a.llama_bundle, b, "driver"), os.X_OK)), None)
        if first is None:
            raise SystemExit(f"compare --backend vulkan: no driver under {a.llama_bundle}/<build>/driver")
        C.DRIVER = os.path.join(a.llama_bundle, first, "driver")  # quantizes the GGUFs (on the CPU)
        C.LIB_DIR = os.path.join(a.llama_bundle, first)
        tag = open(os.path.join(a.llama_bundle, "tag")).read().strip()
    else:
        tag = C.setup_llamacpp()
    ps = peers(C, a, tag)
    for b, p in ps.items():
        if isinstance(p, str):
            C.log(f"llama.cpp {b} build unavailable: {p}")
    if a.setup_only:
        for b, p in ps.items():
            print(f"{b}\t{p if isinstance(p, str) else p[0] + chr(9) + p[1]}")
        return
    rows, srows = [], []

    def save(complete):
        # after every row, so a run cut short by its time limit still leaves the rows it finished
        out = {"backend": "vulkan", "complete": complete, "cpu": C.cpu_info(), "prompt_tokens": a.prompt,
               "gen_tokens": a.gen, "reps": a.reps, "inner_reps": a.inner_reps,
               "llamacpp": f"{tag} prebuilt (node-llama-cpp {C.NLC_VERSION}), C API driver, --gpu-layers 99",
               "llamacpp_builds": {b: (p if isinstance(p, str) else "ok") for b, p in ps.items()},
               "rows": rows, "sequences": a.seq_list if srows else [], "sequence_rows": srows,
               "emulated": a.emulated, "targets": check_targets(rows, srows, a.emulated)}
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(a.out + ".tmp", a.out)
        return out

    for m in models:
        ckpt = C.ensure_checkpoint(m)
        for p in precs if not a.sequences_only else []:
            rows.append(single_row(C, hfstatic, m, p, ckpt, ps, a))
            save(False)
        for sm, p in seq_rows:
            if sm == m:
                srows.append(sequences_row(C, hfstatic, m, p, ckpt, ps, a))
                save(False)
    out = save(True)
    print_tables(C, rows, srows, out["targets"], list(ps), a.emulated)
    print(f"wrote {a.out}")
