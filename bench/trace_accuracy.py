# SPDX-License-Identifier: MIT
"""Accuracy of `sonde analyze` on traces of the Livermore-style kernels of bench/kernels/.

Called by bench/trace_accuracy.sh: build directory of the kernels, the sonde command,
bench/strc_count, then the kernels' names. Each round runs every kernel (rotating order) in
its three builds (rotating order):
  base   uninstrumented: T = the program's own timing of its work (main_ns)
  func   -finstrument-functions, under `sonde run --trace`
  dense  SONDE_REGION_BEGIN/END around inner-loop strips or statements, under `sonde run --trace`
At the end of a round every trace of the round is analysed with
`sonde analyze --uninstrumented T RUNDIR`, T being the same round's base run of that kernel: its
T_m (first to last event) and sequential-model T_a (the kernels have one thread) are kept, then
the trace is deleted. Figures: medians over rounds, ratios to the median T; the per-round
(paired) Ta/T is shown beside them. Checksums must agree across builds and rounds; the traces'
event counts (bench/strc_count) must be what the programs say they made.

When this build of sonde has no `analyze` command, T_a comes from the bench's own sequential
estimate instead (first to last event, minus o_full/2 of the trace's last CALIB per probe event,
minus the recorded buffer flushes), and the output says so.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

B = os.path.abspath(sys.argv[1])
SONDE = os.path.abspath(sys.argv[2])
COUNTER = os.path.abspath(sys.argv[3])
KERNELS = sys.argv[4:]
VARIANTS = ["base", "func", "dense"]
TRACED = ["func", "dense"]
RUNS = max(1, int(os.environ.get("BENCH_TRACE_RUNS", "5")))

work = tempfile.mkdtemp(prefix="bench-tracc-", dir=bl.fast_dir(B))
HAVE_ANALYZE = bl.has_command(SONDE, "analyze")

def bench_estimate(c):
    """The bench's own sequential estimate from strc_count's figures, ns (fallback)."""
    tpn = float(c["calib_tpn"]) or float(c["ticks_per_ns"])
    span = c["span_ticks"] / tpn
    alpha = float(c["calib_o_full_ns"]) / 2
    probes = c["events"] + 2  # the thread's begin and end records are probe events too
    return {"Tm": span, "Ta": span - probes * alpha - c["flush_ticks"] / tpn, "rae": None}


def run_dir(k, v):
    return os.path.join(work, "%s.%s" % (k, v))


def run(k, v):
    """One run: (program's fields, rundir or None)."""
    prog = os.path.join(B, "%s.%s" % (k, v))
    if v == "base":
        _, out = bl.run_once(bl.Variant("%s.%s" % (k, v), [prog]))
        return bl.fields(out), None
    d = run_dir(k, v)
    shutil.rmtree(d, ignore_errors=True)
    _, out = bl.run_once(bl.Variant("%s.%s" % (k, v), [SONDE, "run", "--trace", "-o", d, "--",
                                                      prog]))
    return bl.fields(out), d


def analyze(d, t_ns):
    files = bl.strc_files(d)
    if len(files) != 1:
        raise SystemExit("bench: expected one trace in %s, found %d" % (d, len(files)))
    c = bl.strc_count(COUNTER, files[0])
    if HAVE_ANALYZE:
        p = subprocess.run([SONDE, "analyze", "--model", "sequential", "--uninstrumented",
                            "%dns" % t_ns, d], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        a = bl.parse_analyze(p.stdout) if p.returncode == 0 else None
        if a is None:
            sys.stderr.write(p.stdout)
            raise SystemExit("bench: `sonde analyze` failed on %s (exit %d), or its output "
                             "changed" % (d, p.returncode))
    else:
        a = bench_estimate(c)
    shutil.rmtree(d, ignore_errors=True)
    return a, c


print("trace-accuracy: %s" % bl.machine().replace("%d rounds" % bl.runs(), "%d rounds" % RUNS))
print("kernels: %s (bench/kernels/); builds base, func (-finstrument-functions), dense "
      "(-DDENSE: manual regions)" % " ".join(KERNELS))
if HAVE_ANALYZE:
    print("T_m, T_a: `sonde analyze --model sequential --uninstrumented T` (T_a of the "
          "sequential model)", flush=True)
else:
    print("T_m, T_a: `%s analyze` does not exist in this build: the bench's own sequential "
          "estimate (first to last event - events x o_full/2 - flushes)" % os.path.relpath(SONDE),
          flush=True)

res = {k: {v: [] for v in VARIANTS} for k in KERNELS}  # per round: dict of figures
try:
    for r in range(RUNS):
        ks = KERNELS[r % len(KERNELS):] + KERNELS[:r % len(KERNELS)]
        dirs, base_t = [], {}
        for i, k in enumerate(ks):
            vs = VARIANTS[(r + i) % 3:] + VARIANTS[:(r + i) % 3]
            for v in vs:
                f, d = run(k, v)
                res[k][v].append(f)
                if v == "base":
                    base_t[k] = f["main_ns"]
                if d:
                    dirs.append((k, v, d))
        for k, v, d in dirs:
            a, c = analyze(d, base_t[k])
            res[k][v][-1].update({"a": a, "c": c, "T_round": base_t[k]})
        sys.stderr.write("  round %d/%d done\n" % (r + 1, RUNS))
        sys.stderr.flush()
finally:
    shutil.rmtree(work, ignore_errors=True)

# checks: the same results everywhere; the traces hold the events the programs made
for k in KERNELS:
    ref = res[k]["base"][0]["checksum"]
    for v in VARIANTS:
        for f in res[k][v]:
            if f["checksum"] != ref:
                raise SystemExit("bench: %s.%s computed something else: %r vs %r"
                                 % (k, v, f["checksum"], ref))
    for v in TRACED:
        want = 2 * (res[k][v][0]["calls"] if v == "func" else res[k][v][0]["regions"])
        got = [f["c"]["events"] for f in res[k][v]]
        if any(g != want for g in got):
            print("WARNING: %s.%s: traces hold %r events, the program made %d" % (k, v, got, want))

print("%-9s %-5s %9s %10s %10s %8s %8s %8s %9s %9s %8s %10s %9s %9s %9s" % (
    "kernel", "build", "T (ms)", "T_m (ms)", "T_a (ms)", "Tm/T", "Ta/T", "err %", "paired %",
    "fastest %", "events", "ns/ev situ", "alpha ns", "left ns", "outside"))
rows = []
for k in KERNELS:
    T = bl.median([f["main_ns"] for f in res[k]["base"]])
    for v in TRACED:
        rs = res[k][v]
        tm = bl.median([f["a"]["Tm"] for f in rs])
        ta = bl.median([f["a"]["Ta"] for f in rs])
        paired = bl.median([100 * (f["a"]["Ta"] / f["T_round"] - 1) for f in rs])
        # the fastest runs (a noisy machine only ever slows a run down): the T_a of the traced
        # run with the least T_m against the least T
        quick = min(rs, key=lambda f: f["a"]["Tm"])["a"]["Ta"]
        fastest = 100 * (quick / min(f["main_ns"] for f in res[k]["base"]) - 1)
        ev = rs[0]["c"]["events"]
        # probe cost per event in situ (median T_m minus T, per event) against the calibrated one
        situ = (tm - T) / ev if ev else 0.0
        alpha = bl.median([float(f["c"]["calib_o_full_ns"]) / 2 for f in rs])
        # T_m beyond the traced program's own timing of its work: start-up and exit in the trace
        outside = bl.median([f["a"]["Tm"] - f["main_ns"] for f in rs])
        rows.append((k, v, T, tm, ta, paired))
        left = (ta - T) / ev if ev else 0.0
        print("%-9s %-5s %9.1f %10.1f %10.1f %8.2f %8.3f %+8.2f %+9.2f %+9.2f %7.2fM %10.2f %9.2f "
              "%+9.2f %7.2fms" % (k, v, T / 1e6, tm / 1e6, ta / 1e6, tm / T, ta / T,
                                  100 * (ta / T - 1), paired, fastest, ev / 1e6, situ, alpha, left,
                                  outside / 1e6))
bad = [(k, v, float(f["c"]["calib_o_full_ns"])) for k in KERNELS for v in TRACED
       for f in res[k][v] if float(f["c"]["calib_o_full_ns"]) <= 0]
if bad:
    print("WARNING: %d trace(s) carry a calibrated o_full <= 0, so the model added time instead "
          "of removing it: %s" % (len(bad), ", ".join("%s.%s %.1f ns" % x for x in bad)))
spread = [max(f["main_ns"] for f in res[k]["base"]) / min(f["main_ns"] for f in res[k]["base"])
          for k in KERNELS]
print("noise: the uninstrumented T of one kernel varied by %.0f %% (median over kernels of "
      "max/min - 1 over rounds; largest %.0f %%)" % (100 * (bl.median(spread) - 1),
                                                   100 * (max(spread) - 1)))
print("(err %: median T_a against median T; paired %: median over rounds of T_a against the "
      "same round's T; fastest %: T_a of the traced run with the least T_m against the least T; "
      "ns/ev situ: (T_m - T) / events; alpha: o_full/2 of the traces' CALIB, "
      "what the model removes per event; left ns: (T_a - T) / events, what it left in per event; "
      "outside: T_m - the traced program's own main_ns)")
for k, v, T, tm, ta, _ in rows:
    print("trace-accuracy: kernel=%s variant=%s Tm_over_T=%.2f Ta_over_T=%.3f" % (k, v, tm / T,
                                                                                  ta / T))
errs = [abs(100 * (ta / T - 1)) for _, _, T, _, ta, _ in rows]
big = [abs(100 * (ta / T - 1)) for _, _, T, tm, ta, _ in rows if tm / T >= 3]
print("trace-accuracy: kernels=%d max_abs_error_pct_where_Tm_over_T_ge_3=%s "
      "median_abs_error_pct=%.2f" % (len(KERNELS), "%.2f" % max(big) if big else "n/a",
                                     bl.median(errs)))
