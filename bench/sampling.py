#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Statistical sampling's cost and agreement (bench/sampling.sh; docs/benchmarks.md).

1. Cost at 1 kHz on bench/sampled.c (built with frame pointers, no instrumentation), side by
   side in rotating rounds: the program alone; libsonde.so preloaded and sampling
   (SONDE_SAMPLE=1000, SONDE_SAMPLE_ONLY=1: what `sonde run --sample` sets for a program without
   probes); `sonde run --sample` itself (the tool's fork and wait too); `perf record -e cpu-clock -F 1000 -g`; gperftools (LD_PRELOAD=libprofiler.so,
   CPUPROFILE_FREQUENCY=1000). Wall time and CPU time (user+sys of the whole process tree,
   profiler included) per run; overheads are medians of the per-round ratios to the program
   alone, so a slow phase of the machine falls on both sides of a ratio.
2. Agreement: the instrumented build (sonde cc) under `sonde run --sample`: per function, the
   sampled inclusive share against the measured (compensated) inclusive share of the same run,
   in standard errors of the sampled share, and against the shares the program was built with.

Usage: sampling.py BUILD_BENCH_DIR SONDE ROUNDS_OF_WORK
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

PROFILER = "/usr/lib/x86_64-linux-gnu/libprofiler.so"
WEIGHTS = {"big": 8, "medium": 4, "small": 1, "deep": 3}  # units of work, bench/sampled.c


def child_cpu():
    """CPU time (ns) of every child waited for so far, their own children included."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return int((r.ru_utime + r.ru_stime) * 1e9)


def run_timed(argv, env):
    """(wall ns, CPU ns of the process tree, stdout) of one run, pinned like every bench run."""
    full = dict(os.environ)
    full.update(env or {})
    c0 = child_cpu()
    t0 = time.perf_counter_ns()
    p = subprocess.run(benchlib.pinned(argv), env=full, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter_ns() - t0
    if p.returncode != 0:
        raise SystemExit("sampling.py: %s failed (%d): %s" % (" ".join(argv), p.returncode,
                                                             p.stderr[-300:]))
    return wall, child_cpu() - c0, p.stdout


def variants(bdir, sonde, rounds, tmp):
    base = os.path.join(bdir, "sampled.base")
    rt = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sonde))), "lib",
                      "libsonde.so")
    out = os.path.join(tmp, "out")
    v = [("program alone", [base, str(rounds)], {}),
         ("runtime sampling 1 kHz", [base, str(rounds)],
          {"LD_PRELOAD": rt, "SONDE_DIR": out, "SONDE_SAMPLE": "1000",
           "SONDE_SAMPLE_ONLY": "1"}),
         ("sonde run --sample", [sonde, "run", "--sample", "-o", out, "--", base, str(rounds)],
          {})]
    if shutil.which("perf"):
        v.append(("perf record -F 1000 -g", ["perf", "record", "-e", "cpu-clock", "-F", "1000",
                                             "-g", "-q", "-o", os.path.join(tmp, "perf.data"),
                                             "--", base, str(rounds)], {}))
    else:
        sys.stderr.write("sampling.py: perf is not installed: skipped\n")
    if os.path.exists(PROFILER):
        v.append(("gperftools 1 kHz", [base, str(rounds)],
                  {"LD_PRELOAD": PROFILER, "CPUPROFILE": os.path.join(tmp, "gperf.prof"),
                   "CPUPROFILE_FREQUENCY": "1000"}))
    else:
        sys.stderr.write("sampling.py: %s is missing: gperftools skipped\n" % PROFILER)
    return v


def cost(bdir, sonde, rounds, tmp):
    vs = variants(bdir, sonde, rounds, tmp)
    n = benchlib.runs()
    res = {name: [] for name, _, _ in vs}
    ref = None
    for r in range(n):
        k = r % len(vs)
        for name, argv, env in vs[k:] + vs[:k]:
            wall, cpu, out = run_timed(argv, env)
            f = benchlib.fields(out)
            ref = ref or f
            if f.get("checksum") != ref.get("checksum"):
                raise SystemExit("sampling.py: %s computed something else: %r" % (name, out))
            res[name].append((wall, cpu))
        sys.stderr.write("  round %d/%d done\n" % (r + 1, n))
    alone = res["program alone"]
    print("\nCost at 1 kHz, %s" % benchlib.machine())
    print("%-26s %12s %12s %10s %10s" % ("variant", "wall (med)", "CPU (med)", "wall +%",
                                        "CPU +%"))
    figures = {}
    for name, _, _ in vs:
        rs = res[name]
        wr = benchlib.median([w / a[0] for (w, _), a in zip(rs, alone)]) - 1
        cr = benchlib.median([c / a[1] for (_, c), a in zip(rs, alone)]) - 1
        figures[name] = (wr, cr)
        print("%-26s %9.1f ms %9.1f ms %9.2f%% %9.2f%%" % (
            name, benchlib.median([w for w, _ in rs]) / 1e6,
            benchlib.median([c for _, c in rs]) / 1e6, 100 * wr, 100 * cr))
    return figures


def agreement(bdir, sonde, rounds, tmp):
    inst = os.path.join(bdir, "sampled.inst")
    n = max(3, benchlib.runs() // 2)
    rows, zs, counts = {}, [], []
    for r in range(n):
        d = os.path.join(tmp, "agree%d" % r)
        subprocess.run(benchlib.pinned([sonde, "run", "--sample", "-o", d, "--", inst,
                                        str(rounds)]), check=True, stdout=subprocess.DEVNULL)
        js = json.loads(subprocess.run([sonde, "report", "--json", d], check=True,
                                       stdout=subprocess.PIPE, text=True).stdout)
        s = js["samples"]
        for t in s["threads"]:
            counts.append(t["samples"] / (t["cpu_ns"] * s["hz"] / 1e9))
        for f in s["functions"]:
            if f["name"] not in WEIGHTS or "measured_incl_share" not in f:
                continue
            se = f["total_stderr"] or 1e-9
            z = (f["total_share"] - f["measured_incl_share"]) / se
            zs.append(abs(z))
            rows.setdefault(f["name"], []).append((f["total_share"], f["measured_incl_share"],
                                                   se, z))
    print("\nSampled vs measured, one run each of %d (sonde cc build, sonde run --sample)" % n)
    print("%-8s %9s %9s %9s %9s %10s" % ("function", "built as", "sampled", "±SE",
                                        "measured", "z (med)"))
    total = sum(WEIGHTS.values())
    for name in sorted(WEIGHTS, key=lambda k: -WEIGHTS[k]):
        rs = rows.get(name, [])
        if not rs:
            continue
        print("%-8s %8.1f%% %8.1f%% %8.1f%% %8.1f%% %+10.2f" % (
            name, 100 * WEIGHTS[name] / total, 100 * benchlib.median([x[0] for x in rs]),
            100 * benchlib.median([x[2] for x in rs]), 100 * benchlib.median([x[1] for x in rs]),
            benchlib.median([x[3] for x in rs])))
    print("largest |z| over all runs and functions: %.2f; samples / (CPU time x HZ): median %.3f"
          % (max(zs) if zs else float("nan"), benchlib.median(counts) if counts else 0))
    return max(zs) if zs else float("nan")


def main():
    bdir, sonde, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tmp = tempfile.mkdtemp(prefix="sonde-sampling-", dir=benchlib.fast_dir(bdir))
    try:
        figures = cost(bdir, sonde, rounds, tmp)
        zmax = agreement(bdir, sonde, rounds, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    line = "sampling overhead at 1 kHz (CPU, median): sonde %.2f%%" % (
        100 * figures["runtime sampling 1 kHz"][1])
    for name, label in (("perf record -F 1000 -g", "perf"), ("gperftools 1 kHz", "gperftools")):
        if name in figures:
            line += ", %s %.2f%%" % (label, 100 * figures[name][1])
    print(line + "; sampled vs measured: largest |z| %.2f" % zmax)


if __name__ == "__main__":
    main()
