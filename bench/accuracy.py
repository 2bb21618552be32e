# SPDX-License-Identifier: MIT
"""Accuracy of sonde's compensated profile on bench/known.c, against an independent truth.

Called by bench/accuracy.sh with the build directory. Each round runs, in rotating order:
  base   the uninstrumented build (gcc -O2): T = the wall time of its main (it times itself)
  sonde  the instrumented build under `sonde run --throttle off`: T_m, T_a, per-function excl_c
  iso    the uninstrumented build with --iso: each function's own work timed alone, ns per call
Truth for f's exclusive time = calls(f) x iso ns per call. Medians over rounds.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

B = os.path.abspath(sys.argv[1])
SONDE = os.path.abspath(sys.argv[2])
R = sys.argv[3] if len(sys.argv) > 3 else "100000"

fast = "/dev/shm" if os.access("/dev/shm", os.W_OK) else B
work = tempfile.mkdtemp(prefix="bench-work-", dir=fast)
sonde_dir = os.path.join(work, "sonde")
base = os.path.join(B, "known.base")
inst = os.path.join(B, "known.inst")


def with_report(out):
    rep = subprocess.run([SONDE, "report", "--json", sonde_dir], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.dumps({"stdout": out, "report": json.loads(rep)})


variants = [
    bl.Variant("base", [base, R]),
    bl.Variant("sonde", [SONDE, "run", "-o", sonde_dir, "--throttle", "off", "--", inst, R],
               before=lambda: shutil.rmtree(sonde_dir, ignore_errors=True), after=with_report),
    bl.Variant("precise", [SONDE, "run", "-o", sonde_dir, "--throttle", "off", "--precise", "--",
                           inst, R],
               before=lambda: shutil.rmtree(sonde_dir, ignore_errors=True), after=with_report),
    bl.Variant("iso", [base, "--iso", "20"]),
]

print("accuracy: %s" % bl.machine())
print("workload: bench/known.c R=%s; truth from `known --iso` (uninstrumented)" % R, flush=True)
try:
    res = bl.rounds(variants)
finally:
    shutil.rmtree(work, ignore_errors=True)


def parse_prog(out):
    calls, f = {}, bl.fields(out)
    for line in out.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == "calls":
            calls[w[1]] = int(w[2])
        if len(w) == 3 and w[0] == "iso":
            calls[w[1]] = float(w[2])
    return f, calls


T_main = [parse_prog(o)[0]["main_ns"] for _, o in res["base"]]
T_proc = [w for w, _ in res["base"]]
_, calls = parse_prog(res["base"][0][1])
iso = {}
for _, o in res["iso"]:
    for k, v in parse_prog(o)[1].items():
        iso.setdefault(k, []).append(v)
iso = {k: bl.median(v) for k, v in iso.items()}

checksum = parse_prog(res["base"][0][1])[0]["checksum"]
T = bl.median(T_main)


def analyse(name):
    """Print the table for one sonde variant; return (T_m, T_a, total %, worst %)."""
    Tm, Ta, probes, funcs = [], [], [], {}
    for _, o in res[name]:
        d = json.loads(o)
        if bl.fields(d["stdout"]).get("checksum") != checksum:
            raise SystemExit("bench: the instrumented run computed something else")
        p = d["report"]["processes"][0]
        Tm.append(p["T_m_ns"])
        Ta.append(p["T_a_ns"])
        probes.append(p["probes"])
        cal = p["calibration"]
        for fn in d["report"]["functions"]:
            funcs.setdefault(fn["name"], []).append(fn)

    Tm_, Ta_ = bl.median(Tm), bl.median(Ta)
    N = bl.median(probes)
    print("calibration (last run): clock %.1f ns, o_in %.2f ns, o_full %.2f ns, probe pairs %d" %
          (cal["clock_ns"], cal["o_in_ns"], cal["o_full_ns"], N))
    print("T (uninstrumented main, median) %.1f ms [process wall %.1f ms]; T_m %.1f ms (T_m/T = %.2f);"
          " T_a %.1f ms" % (T / 1e6, bl.median(T_proc) / 1e6, Tm_ / 1e6, Tm_ / T, Ta_ / 1e6))
    print("in situ: (T_m - T)/probes = %.2f ns per probe pair (calibrated o_full %.2f ns)" %
          ((Tm_ - T) / N, cal["o_full_ns"]))

    truth_sum = sum(calls[k] * iso[k] for k in calls)
    print("truth check: sum over functions of calls x iso = %.1f ms = %.2f %% of T" %
          (truth_sum / 1e6, 100 * truth_sum / T))
    print("%-8s %10s %9s %11s %11s %11s %8s %9s %14s" % (
        "function", "calls", "iso ns", "truth ms", "excl ms", "excl_c ms", "share", "error %",
        "residue ns"))
    worst = 0.0
    worst_long = 0.0  # the same, only functions of at least 10 probe pairs' cost per call
    leaf_in = None
    order = sorted(calls, key=lambda k: -calls[k] * iso[k])
    for k in order:
        fl = funcs.get(k)
        if not fl:
            print("%-8s missing from the profile" % k)
            worst = float("inf")
            continue
        c = fl[0]["calls"]
        if c != calls[k]:
            print("%-8s calls differ: profile %d, program %d" % (k, c, calls[k]))
        truth = calls[k] * iso[k]
        excl_c = bl.median([f["excl_c_ns"] for f in fl])
        excl = bl.median([f["excl_ns"] for f in fl])
        kids = fl[0].get("child_calls", 0)
        err = 100 * (excl_c - truth) / truth
        share = 100 * truth / T
        if share >= 1.0:
            worst = max(worst, abs(err))
            if iso[k] >= 10 * cal["o_full_ns"]:
                worst_long = max(worst_long, abs(err))
        # what the probes really left in this function's exclusive time, per call (leaf) or per
        # child call after the leaf figure for its own calls (non-leaf): compare with o_in and
        # o_full - o_in
        if kids == 0:
            residue = (excl - truth) / c
            if leaf_in is None:
                leaf_in = residue
            rtxt = "%.2f /call" % residue
        else:
            li = leaf_in if leaf_in is not None else cal["o_in_ns"]
            rtxt = "%.2f /child" % ((excl - truth - c * li) / kids)
        print("%-8s %10d %9.2f %11.2f %11.2f %11.2f %7.2f%% %+9.2f %14s%s" % (
            k, calls[k], iso[k], truth / 1e6, excl / 1e6, excl_c / 1e6, share, err, rtxt,
            "" if share >= 1.0 else "  (under 1 %: not in the max)"))
    if "main" in funcs:
        m = funcs["main"][0]
        print("main     (loop control; truth T - sum = %.2f ms) excl_c %.2f ms" % (
            (T - truth_sum) / 1e6, bl.median([f["excl_c_ns"] for f in funcs["main"]]) / 1e6))
    print("residue: probe time left in a function's measured exclusive time; calibrated "
          "o_in %.2f ns per call, o_full - o_in %.2f ns per child call" %
          (cal["o_in_ns"], cal["o_full_ns"] - cal["o_in_ns"]))
    print("max excl error over functions >= 1 %% of T and >= 10 x o_full (%.0f ns) per call: %.2f %%"
          % (10 * cal["o_full_ns"], worst_long))
    total_err = 100 * abs(Ta_ - T) / T
    # paired by round: each round's T_a against the same round's uninstrumented T (runs close in
    # time), which takes the host's slow drift out of the comparison
    paired = sorted(100 * (a - t) / t for a, t in zip(Ta, T_main))
    print("paired by round: T_a error median %+.2f %% (rounds %s)" % (
        bl.median(paired), " ".join("%+.1f" % e for e in paired)))
    return T, Tm_, Ta_, total_err, worst


print("\n== sonde run --precise (exits read rdtscp)")
r = analyse("precise")
print("accuracy-precise: T=%d Tm=%d Ta=%d total_error_pct=%.2f max_func_excl_error_pct=%.2f" % r)
print("\n== sonde run (default)")
r = analyse("sonde")
print("accuracy: T=%d Tm=%d Ta=%d total_error_pct=%.2f max_func_excl_error_pct=%.2f" % r)
