# SPDX-License-Identifier: MIT
"""Driver of bench/sync.sh: lock/unlock cost and shared-memory compensation error (medians)."""
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

B, SONDE, ROUNDS, WORK = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
RUN_DIR = os.path.join(B, "sync-run")


def pair_variants():
    prog = [os.path.join(B, "sync_pair")]
    return [benchlib.Variant("alone", prog),
            benchlib.Variant("sonde run", [SONDE, "run", "-o", RUN_DIR + "-p1", "--"] + prog),
            benchlib.Variant("sonde run --sync",
                             [SONDE, "run", "--sync", "-o", RUN_DIR + "-p2", "--"] + prog)]


def pair_costs():
    res = benchlib.rounds(pair_variants())
    figs = {}
    for name, runs in res.items():
        m = [float(re.search(r"mutex_ns (\S+)", out).group(1)) for _, out in runs]
        s = [float(re.search(r"spin_ns (\S+)", out).group(1)) for _, out in runs]
        figs[name] = (statistics.median(m), statistics.median(s))
    print("\nUncontended lock/unlock pair, ns (medians of %d rounds; fastest of 7 batches each)"
          % benchlib.runs())
    print("%-18s %10s %10s %12s %12s" % ("", "mutex", "spin", "mutex added", "spin added"))
    for name, (m, s) in figs.items():
        print("%-18s %10.2f %10.2f %12.2f %12.2f" % (name, m, s, m - figs["alone"][0],
                                                     s - figs["alone"][1]))
    return figs


def elapsed(out):
    return int(re.search(r"elapsed_ns (\d+)", out).group(1))


def compensated(out):
    """The instrumented run: (its elapsed, T_m, fork-join T_a, T_par) from the report, with main's
    own elapsed time compensated as the process is: elapsed - (T_m - T)."""
    p = subprocess.run([SONDE, "report", "--json", RUN_DIR], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("sync.py: sonde report failed: " + p.stderr)
    pr = json.loads(p.stdout)["sync"]["processes"][0]
    e = elapsed(out)
    return "%d %d %d" % (e, e - (pr["T_m_ns"] - pr["T_a_ns"]), e - (pr["T_m_ns"] - pr["T_par_ns"]))


def comp_errors():
    rows = []
    saved = os.environ.get("BENCH_CPU")
    os.environ["BENCH_CPU"] = "none"  # the threads must run in parallel
    for mode in ("handoff", "barrier", "lock"):
        args = [mode, ROUNDS, WORK]
        base = benchlib.Variant("plain", [os.path.join(B, "sync_comp.base")] + args)
        hooks = benchlib.Variant("hooks", [os.path.join(B, "sync_comp.inst")] + args)
        inst = benchlib.Variant(
            "sync", [SONDE, "run", "--sync", "--throttle", "off", "-o", RUN_DIR, "--",
                     os.path.join(B, "sync_comp.inst")] + args,
            after=compensated)
        res = benchlib.rounds([base, hooks, inst])
        t = statistics.median(elapsed(o) for _, o in res["plain"])
        h = statistics.median(elapsed(o) for _, o in res["hooks"])
        vals = [tuple(int(v) for v in o.split()) for _, o in res["sync"]]
        m = statistics.median(v[0] for v in vals)
        a = statistics.median(v[1] for v in vals)
        par = statistics.median(v[2] for v in vals)
        rows.append((mode, t, m, a, par, h))
    if saved is None:
        del os.environ["BENCH_CPU"]
    else:
        os.environ["BENCH_CPU"] = saved
    print("\nShared-memory compensation, main's elapsed time in ms (medians of %d rounds)"
          % benchlib.runs())
    print("(hooks: the instrumented build run without sonde, its hooks glibc's empty ones: the code"
          "\n perturbation, which no removal of probe costs can undo; MODELS §2.2 eq. 6)")
    print("%-8s %9s %9s %9s %9s %9s %9s %9s %9s %9s" % (
        "program", "plain", "hooks", "measured", "fork-join", "parallel", "err meas", "err f-j",
        "err par", "vs hooks"))
    for mode, t, m, a, par, h in rows:
        print("%-8s %9.2f %9.2f %9.2f %9.2f %9.2f %8.1f%% %8.1f%% %8.1f%% %8.1f%%" % (
            mode, t / 1e6, h / 1e6, m / 1e6, a / 1e6, par / 1e6, 100 * (m - t) / t,
            100 * (a - t) / t, 100 * (par - t) / t, 100 * (par - h) / h))
    return rows


figs = pair_costs()
rows = comp_errors()
print("\nsync: mutex pair +%.1f ns, spin pair +%.1f ns (--sync), +%.1f ns without --sync; "
      "compensation error %s" % (
          figs["sonde run --sync"][0] - figs["alone"][0],
          figs["sonde run --sync"][1] - figs["alone"][1],
          figs["sonde run"][0] - figs["alone"][0],
          ", ".join("%s %+.1f%% (%+.1f%% vs hooks)" % (r[0], 100 * (r[4] - r[1]) / r[1],
                                                    100 * (r[4] - r[5]) / r[5]) for r in rows)))
