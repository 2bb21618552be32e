# SPDX-License-Identifier: MIT
"""Driver of bench/sync.sh: lock/unlock cost and shared-memory compensation error (medians)."""
import json
import math
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

B, SONDE, ROUNDS, WORK = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
RUN_DIR = os.path.join(B, "sync-run")
# bench/sync_comp.c's programs; those whose waits are on one mutex (LOCKS) have few contended
# rounds that carry the delays they inherit: no per-round figure for them
PROGRAMS = ("handoff", "barrier", "lock", "serial")
LOCKS = ("lock", "serial")


def pair_variants():
    prog = [os.path.join(B, "sync_pair")]
    return [benchlib.Variant("alone", prog),
            benchlib.Variant("sonde run", [SONDE, "run", "-o", RUN_DIR + "-p1", "--"] + prog),
            # every probe measured, as before --sync implied --insitu
            benchlib.Variant("sonde run --sync",
                             [SONDE, "run", "--sync", "--no-insitu", "-o", RUN_DIR + "-p2", "--"]
                             + prog)]


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


def workers(out):
    """Sum over the workers of their CPU time, and their run-queue delays (ns)."""
    w = [(int(c), int(q)) for c, q in re.findall(r"cpu_ns (\d+) runq_ns (\d+)", out)]
    return sum(c for c, _ in w), [q for _, q in w]


def shared(out):
    """The share of rounds in which a worker found the other on its own CPU (the larger of the
    two workers' counts over the rounds): the threads took turns on one CPU."""
    return max(int(v) for v in re.findall(r"shared (\d+)", out)) / float(ROUNDS)


def compensated(out, run_dir=RUN_DIR):
    """The instrumented run's output, with lines from the report: main's own elapsed time
    compensated as the process is, elapsed - (T_m - T) with T the fork-join T_a or T_par, and
    the overhead the model removed from the workers (the sum of their o); the workers' waits as
    measured and as compensated (w', the sum of their wait_c)."""
    p = subprocess.run([SONDE, "report", "--json", run_dir], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("sync.py: sonde report failed: " + p.stderr)
    rep = json.loads(p.stdout)
    sy = rep["sync"]
    pr = sy["processes"][0]
    cal = rep["processes"][0]["calibration"]
    wk = [t for t in sy["threads"] if t["thread"] != 0]
    o = sum(t["overhead_ns"] for t in wk)
    e = elapsed(out)
    # --insitu: every thread's in-situ price, its status, and the start-up calibration's price
    situ = "".join("\ninsitu %d %s %.3f %.3f %d" % (
        t["index"], t["insitu"]["status"], t["insitu"]["price_ns"], t["insitu"]["o_full_start_ns"],
        t["insitu"]["pairs"]) for t in rep["processes"][0]["threads"] if "insitu" in t)
    return out + situ + "\ncomp %d %d %d\ncalib %.3f %d\nremoved %d\nwaits %d %d %d\ndelays %d\n" % (
        e - (pr["T_m_ns"] - pr["T_a_ns"]), e - (pr["T_m_ns"] - pr["T_par_ns"]), o,
        cal["o_full_ns"], cal["batches"], pr["T_m_ns"] - pr["T_par_ns"],
        sum(t["waits"] for t in wk), sum(t["wait_ns"] for t in wk),
        sum(t["wait_c_ns"] for t in wk), sum(t["delay_ns"] - t["delay0_ns"] for t in wk)) + \
        rule_log(run_dir)


def rule_log(run_dir):
    """SONDE_SYNC_RULE=collide's lines in runtime.log, as "rulecal S C L" (ns; 0 0 0 when the
    start-up calibration found no step) and "rulecases" (the mutex waits of each case, and the
    delay each case changed against the rule woken, ns)."""
    try:
        with open(os.path.join(run_dir, "runtime.log")) as f:
            log = f.read()
    except OSError:
        return ""
    out = ""
    m = re.search(r"rule collide: s (\d+) ns, c (\d+) ns, l (\d+) ns", log)
    if m:
        out += "rulecal %s %s %s\n" % m.groups()
    elif "rule collide: " in log:
        out += "rulecal 0 0 0\n"
    m = re.search(r"mutex waits free (\d+) \(([-+]\d+) ns\), followed (\d+) \(([-+]\d+) ns\), "
                  r"slept (\d+) \(([-+]\d+) ns\), would sleep (\d+) \(([-+]\d+) ns\)", log)
    if m:
        out += "rulecases %s\n" % " ".join(m.groups())
    m = re.search(r"d_c from 0, 250 ns, then x2:((?: \d+)+)", log)
    if m:
        out += "ruled_c%s\n" % m.group(1)
    return out


def contention(out):
    """The workers' blocking calls as the program timed them (bench/sync_comp.c: lock's
    contended acquisitions, handoff's waits for its turn, every barrier wait) and their time
    (ns): summed over the workers."""
    c = re.findall(r"blocked (\d+) blocked_ns (\d+)", out)
    return sum(int(n) for n, _ in c), sum(int(w) for _, w in c)


def lives(out):
    """The workers' lifetimes (ns), summed, as the program measured them."""
    return sum(int(v) for v in re.findall(r"life_ns (\d+)", out))


def decompose(plain, sync):
    """One round's difference between the workers' compensated and plain lifetimes (summed over
    the two workers, ns), and its parts: the probes' cost in situ less the overhead removed
    (CPU time: cpu sync - o - cpu plain), the load (run-queue delay, sync - plain), the waits
    (compensated w' less the plain run's blocking calls) and the rest (the wrappers, the rest)."""
    life = lives(sync) - int(re.search(r"delays (-?\d+)", sync).group(1)) - lives(plain)
    cpu = workers(sync)[0] - int(re.search(r"comp -?\d+ -?\d+ (\d+)", sync).group(1)) - \
        workers(plain)[0]
    q = sum(workers(sync)[1]) - sum(workers(plain)[1])
    wait = comp_waits(sync)[2] - contention(plain)[1]
    return life, cpu, q, wait, life - cpu - q - wait


def comp_waits(out):
    """The sync run's waits per the report: count, measured ns, compensated ns (workers)."""
    return tuple(int(v) for v in re.search(r"waits (\d+) (\d+) (-?\d+)", out).groups())


def round_ns(out):
    """The median of worker 0's rounds (ns), as sync_comp.c prints it."""
    return int(re.search(r"round_ns (\d+)", out).group(1))


def round_par(out):
    """The instrumented run's median round less the delay removed per round: the compensation
    per round, on the rounds no descheduling stretched."""
    return round_ns(out) - int(re.search(r"removed (-?\d+)", out).group(1)) / float(ROUNDS)


def runq(out):
    """The run-queue delay on the program's critical path, at least: the longer of the two
    workers' (in handoff a thread also waits for a CPU while the other runs its turn, so the
    sum would count time off the critical path; the longer one is a lower bound)."""
    return max(workers(out)[1])


# A run is at the fast CPU speed when every CPU's plain loop, before and after (bench/sync_comp.c,
# "speed"), ran within this factor of the program's fastest reading over the rounds (this
# machine's vCPUs switch between two speeds 15-25 % apart for seconds at a time)
SPEED_FACTOR = 1.08


def run_speeds(out):
    """Every CPU's plain-loop speed before and after the run, ns a step (none: not pinnable)."""
    return [float(v) for pair in re.findall(r"speed cpu\d+ (\S+) (\S+)", out) for v in pair
            if float(v) > 0]


def paired_fast(plain, inst, comp):
    """The paired errors of the rounds whose plain and sync runs both kept the fast speed on
    every CPU, sorted."""
    readings = [v for _, o in plain + inst for v in run_speeds(o)]
    if not readings:
        return []
    cut = SPEED_FACTOR * min(readings)
    fast = lambda o: run_speeds(o) and max(run_speeds(o)) <= cut
    return sorted(pct(c[1], elapsed(p)) for (_, p), (_, o), c in zip(plain, inst, comp)
                  if fast(p) and fast(o))


def comp_row(mode, res):
    """Medians of one program's rounds. situ/o: the workers' CPU time under sonde minus in the
    plain run, over the o the model removed from them; par@situ: T_par with the removed delay
    scaled by that ratio (the model's answer had the probes' cost been calibrated right);
    -runq: the plain and the compensated times less the run-queue delay on the critical path
    (time spent runnable without a CPU: the machine's load, which no compensation removes)."""
    med = statistics.median
    plain, hooks, inst = res["plain"], res["hooks"], res["sync"]
    comp = [tuple(int(v) for v in re.search(r"comp (-?\d+) (-?\d+) (\d+)", o).groups())
            for _, o in inst]
    ratio = med(workers(o)[0] - workers(p)[0] for (_, o), (_, p) in zip(inst, plain)) / \
        med(c[2] for c in comp)
    return {"mode": mode, "t": med(elapsed(o) for _, o in plain),
            "h": med(elapsed(o) for _, o in hooks), "m": med(elapsed(o) for _, o in inst),
            "a": med(c[0] for c in comp), "par": med(c[1] for c in comp), "ratio": ratio,
            "par_situ": med(elapsed(o) - (elapsed(o) - c[1]) * ratio
                            for (_, o), c in zip(inst, comp)),
            "o_full": med(float(re.search(r"calib (\S+)", o).group(1)) for _, o in inst),
            "batches": med(int(re.search(r"calib \S+ (\d+)", o).group(1)) for _, o in inst),
            "r_t": med(round_ns(o) for _, o in plain),
            "r_h": med(round_ns(o) for _, o in hooks),
            "r_m": med(round_ns(o) for _, o in inst),
            "r_par": med(round_par(o) for _, o in inst),
            "sh_t": med(shared(o) for _, o in plain),
            "sh_par": med(shared(o) for _, o in inst),
            "q_t": med(runq(o) for _, o in plain),
            "q_par": med(runq(o) for _, o in inst),
            "t_q": med(elapsed(o) - runq(o) for _, o in plain),
            "par_q": med(c[1] - runq(o) for (_, o), c in zip(inst, comp)),
            "paired": sorted(pct(c[1], elapsed(p)) for (_, p), c in zip(plain, comp)),
            "paired_rounds": [pct(c[1], elapsed(p)) for (_, p), c in zip(plain, comp)],
            "paired_fast": paired_fast(plain, inst, comp),
            "paired_hooks": sorted(pct(elapsed(h), elapsed(p)) for (_, p), (_, h)
                                   in zip(plain, hooks)),
            "cont_t": med(contention(o)[0] for _, o in plain),
            "lw_t": med(contention(o)[1] for _, o in plain),
            "cont_m": med(comp_waits(o)[0] for _, o in inst),
            "lw_m": med(comp_waits(o)[1] for _, o in inst),
            "lw_c": med(comp_waits(o)[2] for _, o in inst),
            "dec": [med(d[i] for d in (decompose(p, o) for (_, p), (_, o) in zip(plain, inst)))
                    for i in range(5)],
            "life_t": med(lives(o) for _, o in plain),
            "rulecal": rule_figures(inst, r"rulecal (\d+) (\d+) (\d+)"),
            "rulecases": rule_figures(inst, r"rulecases " + " ".join([r"(-?\+?\d+)"] * 8)),
            "d_c": rule_figures(inst, r"ruled_c " + " ".join([r"(\d+)"] * 9))}


def rule_figures(inst, pattern):
    """Medians over the sync runs of the numbers a rule's line of runtime.log gave, or None."""
    rows = [re.search(pattern, o) for _, o in inst]
    if not all(rows):
        return None
    return [statistics.median(int(m.group(i + 1)) for m in rows)
            for i in range(len(rows[0].groups()))]


def pct(a, b):
    return 100 * (a - b) / b


def comp_runs():
    """Rounds of the compensation programs: BENCH_SYNC_RUNS, else BENCH_RUNS but at least 21
    (one round is about 0.5 s of runs; with this machine's run-to-run spread, about +-10 % a
    pair of runs, 11 rounds left the median's 95 % interval some 15 points wide, too wide to
    tell 5 % from 0)."""
    v = os.environ.get("BENCH_SYNC_RUNS")
    return max(1, int(v)) if v else max(benchlib.runs(), 21)


def quartiles(xs):
    """(q25, median, q75) of a sorted list, by the median of each half."""
    n = len(xs)
    if n < 2:
        return xs[0], xs[0], xs[0]
    lo, hi = xs[:n // 2], xs[(n + 1) // 2:]
    return statistics.median(lo), statistics.median(xs), statistics.median(hi)


TARGET = 5.0  # per cent: issue 5's target for the compensated time


def median_ci(xs):
    """The median's 95 % confidence interval from a sorted sample, without assuming a
    distribution: (x_k, x_(n+1-k)) with k the largest rank such that a binomial(n, 1/2) count
    falls below it with probability at most 2.5 %; None below 6 values (no such k)."""
    n, k, below = len(xs), 0, 0.0
    while True:
        below += math.comb(n, k) / 2.0 ** n  # P(count <= k)
        if below > 0.025:
            break
        k += 1
    return (xs[k - 1], xs[n - k]) if k >= 1 else None


def verdict(r, key="paired"):
    """One line per program: the paired errors' median, interquartile range, range and the
    median's 95 % confidence interval, and whether the median is within the target: 'clearly'
    when the whole interval is too, 'clearly not' when none of it is, else not decided by this
    run (more rounds narrow the interval)."""
    xs = r[key]
    q1, m, q3 = quartiles(xs)
    ci = median_ci(xs)
    lo, hi = ci if ci else (q1, q3)
    what = "its 95 % interval" if ci else "the IQR (too few rounds for an interval)"
    how = "yes" if abs(m) <= TARGET else "no"
    if -TARGET <= lo and hi <= TARGET:
        how += ", clearly (%s within too)" % what
    elif lo > TARGET or hi < -TARGET:
        how += ", clearly (%s outside too)" % what
    else:
        how += " (%s straddles the bound: not decided by this run)" % what
    return "%-8s paired error median %+6.1f%%  IQR %+6.1f .. %+6.1f%%  range %+6.1f .. %+6.1f%%" \
        "  median's 95%% interval %s  (%d rounds)  within %.0f %%: %s" % (
            r["mode"], m, q1, q3, xs[0], xs[-1],
            "%+.1f .. %+.1f%%" % ci if ci else "-", len(xs), TARGET, how)


PLACEMENTS = {
    "none": "threads placed by the scheduler",
    "apart": "each worker pinned to its own CPU (SYNC_COMP_PIN=apart)",
    "together": "both workers pinned to one CPU (SYNC_COMP_PIN=together)",
}


def print_comp(rows, pin):
    print("\nShared-memory compensation, main's elapsed time in ms (medians of %d rounds; %s)"
          % (comp_runs(), PLACEMENTS[pin]))
    print("(hooks: the instrumented build run without sonde, its hooks glibc's empty ones: the code"
          "\n perturbation, which no removal of probe costs can undo; MODELS §2.2 eq. 6)")
    print("%-8s %9s %9s %9s %9s %9s %9s %9s %9s %9s" % (
        "program", "plain", "hooks", "measured", "fork-join", "parallel", "err meas", "err f-j",
        "err par", "vs hooks"))
    for r in rows:
        print("%-8s %9.2f %9.2f %9.2f %9.2f %9.2f %8.1f%% %8.1f%% %8.1f%% %8.1f%%" % (
            r["mode"], r["t"] / 1e6, r["h"] / 1e6, r["m"] / 1e6, r["a"] / 1e6, r["par"] / 1e6,
            pct(r["m"], r["t"]), pct(r["a"], r["t"]), pct(r["par"], r["t"]),
            pct(r["par"], r["h"])))
    print("\nWhere the error comes from (situ/o: the workers' added CPU time over the overhead the"
          "\nmodel removed from them; par@situ: the parallel-compensated time had the probes been"
          "\ncalibrated at their in-situ cost; runq: the longest run-queue delay of a worker"
          "\n(time spent runnable without a CPU: the machine's load), plain and sync; -runq: plain"
          "\nand parallel-compensated times without it, a rough correction for the load; o_full: the"
          "\nrun's probe pair cost in ns, and the calibration batches it came from: 400 are the"
          "\nstart-up and end calibrations, any other count the in-run batches)")
    print("%-8s %7s %9s %9s %9s %9s %9s %9s %7s %7s %7s %7s" % (
        "program", "situ/o", "par@situ", "runq plain", "runq sync", "plain-rq", "par-rq",
        "err -runq", "o_full", "batches", "shr pl", "shr sy"))
    for r in rows:
        print("%-8s %7.3f %8.1f%% %10.2f %9.2f %9.2f %9.2f %8.1f%% %7.2f %7d %6.0f%% %6.0f%%" % (
            r["mode"], r["ratio"], pct(r["par_situ"], r["t"]), r["q_t"] / 1e6, r["q_par"] / 1e6,
            r["t_q"] / 1e6, r["par_q"] / 1e6, pct(r["par_q"], r["t_q"]), r["o_full"],
            r["batches"], 100 * r["sh_t"], 100 * r["sh_par"]))
    print("(shr: the share of rounds in which the two workers were seen on one CPU, plain and"
          "\n sync runs: taking turns on a CPU, which the model, one CPU per runnable thread, does"
          "\n not cover)")
    print("\nPer round (worker 0's median round in us; parallel: the sync run's median round less"
          "\nthe delay removed per round, main's final delay over the rounds; robust to the rare"
          "\nrounds a loaded machine stretches, which the elapsed times above are not; not for"
          "\nlock and serial, whose few contended rounds carry the delays they inherit)")
    print("%-8s %9s %9s %9s %9s %9s %9s" % ("program", "plain", "hooks", "measured", "parallel",
                                            "err par", "vs hooks"))
    for r in rows:
        if r["mode"] in LOCKS:
            print("%-8s %9.2f %9.2f %9.2f %9s %9s %9s" % (
                r["mode"], r["r_t"] / 1e3, r["r_h"] / 1e3, r["r_m"] / 1e3, "-", "-", "-"))
            continue
        print("%-8s %9.2f %9.2f %9.2f %9.2f %8.1f%% %8.1f%%" % (
            r["mode"], r["r_t"] / 1e3, r["r_h"] / 1e3, r["r_m"] / 1e3, r["r_par"] / 1e3,
            pct(r["r_par"], r["r_t"]), pct(r["r_par"], r["r_h"])))
    print("\nBlocking calls (medians; plain: as the program timed them, bench/sync_comp.c: lock's"
          "\n(and serial's) contended acquisitions, handoff's waits for its turn, every barrier wait; sync: the"
          "\nwaits the runtime timed, measured and compensated w'; both summed over the two workers)")
    for r in rows:
        print("%-8s plain %5d waits %8.2f ms   sync %5d waits %8.2f ms, compensated %8.2f ms"
              % (r["mode"], r["cont_t"], r["lw_t"] / 1e6, r["cont_m"], r["lw_m"] / 1e6,
                 r["lw_c"] / 1e6))
    print("\nThe workers' compensated lifetimes against plain, summed over the two workers, in ms"
          "\n(medians over rounds of each round's plain and sync runs; the parts need not add up"
          "\nto the whole: each is its own median): cpu-o, the probes' cost in situ less the"
          "\noverhead removed (CPU time); runq, the load; wait, the compensated waits less the"
          "\nplain run's blocking calls as it timed them (lock: contended acquisitions; handoff:"
          "\nlock and condition waits until its turn; barrier: every wait); rest, the remainder)")
    print("%-8s %9s %9s %7s %9s %9s %9s %9s" % ("program", "plain", "comp-pl", "err", "cpu-o",
                                                "runq", "wait", "rest"))
    for r in rows:
        d = r["dec"]
        print("%-8s %9.2f %+9.2f %+6.1f%% %+9.2f %+9.2f %9s %+9.2f" % (
            r["mode"], r["life_t"] / 1e6, d[0] / 1e6, 100.0 * d[0] / r["life_t"], d[1] / 1e6,
            d[2] / 1e6, "%+.2f" % (d[3] / 1e6), d[4] / 1e6))
    print("\nPaired errors: in each round the plain and the sync run of a program ran one after"
          "\nthe other; the error of that round is the sync run's parallel-compensated time against"
          "\nthat plain run's. Median, interquartile range and range over the rounds; target %.0f %%:"
          % TARGET)
    for r in rows:
        print(verdict(r))
    print("The machine's noise on the same measure: the instrumented build run without sonde"
          "\n(hooks) against the plain run of the same round, as if it were compensated perfectly"
          "\n(its own code's cost, MODELS eq. 6, and the run-to-run spread):")
    for r in rows:
        print(verdict(r, "paired_hooks"))
    print("The same over the rounds whose two runs kept the fast CPU speed on every CPU (each"
          "\nCPU's plain loop before and after the run within %.0f %% of the fastest reading):"
          % (100 * (SPEED_FACTOR - 1)))
    for r in rows:
        print(verdict(dict(r, paired=r["paired_fast"])) if r["paired_fast"]
              else "%-8s no round at the fast speed" % r["mode"])


def rules():
    """BENCH_SYNC_RULES: the wait rules compared side by side in the same rounds, comma-separated
    (SONDE_SYNC_RULE of the runtime: woken, collide; docs/measurement.md, "Collisions"). The first
    one's rows are the main tables."""
    rs = [r for r in os.environ.get("BENCH_SYNC_RULES", "woken,collide").split(",") if r]
    for r in rs:
        if r not in ("woken", "collide"):
            raise SystemExit("sync.py: BENCH_SYNC_RULES: unknown rule '%s'" % r)
    return rs or ["woken"]


def sync_variant(name, args, env, run_dir, prices="--no-insitu"):
    """`--sync` at the calibrated prices (--no-insitu: --sync alone prices in situ since
    2026-11-22, 22:20; the "insitu" variant is that default), or with prices="--insitu"."""
    return benchlib.Variant(
        name, [SONDE, "run", "--sync", prices, "--throttle", "off", "-o", run_dir, "--",
               os.path.join(B, "sync_comp.inst")] + args,
        env=env, after=lambda out: compensated(out, run_dir))


def print_priced(what, rows, pin):
    """The rows of a variant that prices in situ: its workers' prices, then its tables."""
    print("\nThe same rounds with " + what + ":")
    for r in rows:
        print("%-8s in situ %.1f ns (used in %d of %d workers' runs, %d pairs each, median), "
              "start-up %.1f ns, CALIB %.1f ns" % (r["mode"], *r["prices"], r["o_full"]))
    print_comp(rows, pin)


class parallel_runs:
    """Within it, benchlib pins no run (BENCH_CPU=none): the threads must run in parallel."""

    def __enter__(self):
        self.saved = os.environ.get("BENCH_CPU")
        os.environ["BENCH_CPU"] = "none"

    def __exit__(self, *exc):
        if self.saved is None:
            del os.environ["BENCH_CPU"]
        else:
            os.environ["BENCH_CPU"] = self.saved


def comp_errors(pin):
    """One placement's rows: every program plain, hooks and sync, side by side, the sync run once
    per rule of BENCH_SYNC_RULES, once with --insitu (unless BENCH_SYNC_INSITU=0), once at sonde's
    defaults (unless BENCH_SYNC_DEFAULTS=0) and once more with the runtime BENCH_SYNC_COMPARE
    names, when it names one: {variant: rows}, the first rule's as "sync"."""
    insitu_rows, default_rows = [], []
    cmp_rt = os.environ.get("BENCH_SYNC_COMPARE")
    rs = rules()
    names = ["sync"] + ["sync:" + r for r in rs[1:]] + (["sync2"] if cmp_rt else [])
    out = {n: [] for n in names}
    with parallel_runs():  # the threads must run in parallel
        env = {"SYNC_COMP_PIN": pin}
        for mode in PROGRAMS:
            args = [mode, ROUNDS, WORK]
            variants = [
                benchlib.Variant("plain", [os.path.join(B, "sync_comp.base")] + args, env=env),
                benchlib.Variant("hooks", [os.path.join(B, "sync_comp.inst")] + args, env=env)]
            for name, rule in zip(names, rs):
                variants.append(sync_variant(name, args, dict(env, SONDE_SYNC_RULE=rule),
                                             RUN_DIR + "-" + rule))
            if INSITU:
                variants.append(benchlib.Variant(
                    "insitu", [SONDE, "run", "--sync", "--insitu", "--throttle", "off", "-o",
                               RUN_DIR + "-i", "--", os.path.join(B, "sync_comp.inst")] + args,
                    env=dict(env, SONDE_SYNC_RULE=rs[0]),
                    after=lambda o: compensated(o, RUN_DIR + "-i")))
            if DEFAULTS:
                variants.append(benchlib.Variant(
                    "defaults", [SONDE, "run", "--sync", "-o", RUN_DIR + "-d", "--",
                                 os.path.join(B, "sync_comp.inst")] + args,
                    env=dict(env, SONDE_SYNC_RULE=rs[0]),
                    after=lambda o: compensated(o, RUN_DIR + "-d")))
            if cmp_rt:
                variants.append(sync_variant("sync2", args, dict(env, SONDE_RUNTIME=cmp_rt,
                                                                 SONDE_SYNC_RULE=rs[0]),
                                             RUN_DIR + "-2", "--insitu"))
            res = benchlib.rounds(variants, comp_runs())
            for n in names:
                out[n].append(comp_row(mode, dict(res, sync=res[n])))
            if INSITU:
                insitu_rows.append(comp_row(mode, dict(res, sync=res["insitu"])))
                insitu_rows[-1]["prices"] = insitu_prices(res["insitu"])
            if DEFAULTS:
                default_rows.append(comp_row(mode, dict(res, sync=res["defaults"])))
                default_rows[-1]["prices"] = insitu_prices(res["defaults"])
    print_comp(out["sync"], pin)
    if INSITU:
        print_priced("sonde run --sync --insitu (each thread's probe pairs at the\nprice measured "
                     "in its own code; workers' in-situ price, median over the rounds and\nthe "
                     "workers, against the start-up calibration's and the run's CALIB o_full)",
                     insitu_rows, pin)
        INSITU_RESULTS.append((pin, insitu_rows))
    if DEFAULTS:
        print_priced("sonde run --sync at sonde's defaults (in situ, the throttle\non: the hot "
                     "leaf's throttle waits for its thread's price, then its calls are\n"
                     "unmeasured, priced in situ)", default_rows, pin)
        DEFAULT_RESULTS.append((pin, default_rows))
    for n in names[1:]:
        print("\nThe same rounds with %s:" % (
            "the runtime " + cmp_rt + " (in situ, --sync's default)" if n == "sync2"
            else "the rule " + n[5:]))
        print_comp(out[n], pin)
    if len(rs) > 1:
        print_rules(out, names[:len(rs)], rs, pin)
    return out


def print_rules(out, names, rs, pin):
    """The rules side by side: per program and rule the paired errors' verdict, the paired
    difference to the first rule (each round's error with the rule less the error with the first
    one, against the same plain run), the collision calibration and the rule's cases."""
    print("\nWait rules side by side (%s;\nevery rule's sync run in the same rounds, paired with"
          " the same plain run;\ndiff: per round, the rule's paired error less %s's)"
          % (PLACEMENTS[pin], rs[0]))
    for i, mode in enumerate(PROGRAMS):
        base = out[names[0]][i]
        for n, rule in zip(names, rs):
            r = out[n][i]
            print("  %-7s %s" % (rule, verdict(r)))
            if n != names[0]:
                d = sorted(a - b for a, b in zip(r["paired_rounds"], base["paired_rounds"]))
                q1, m, q3 = quartiles(d)
                print("  %-7s %-8s diff median %+6.1f%%  IQR %+6.1f .. %+6.1f%%  range %+6.1f .."
                      " %+6.1f%%" % (rule, mode, m, q1, q3, d[0], d[-1]))
            if r["rulecal"] and r["rulecases"]:
                sc, cc, lc = r["rulecal"]
                f = r["rulecases"]
                print("  %-7s %-8s calibration s %.0f c %.0f l %.0f ns; mutex waits: free %.0f,"
                      " followed %.0f (%+.2f ms), slept %.0f, would sleep %.0f (%+.2f ms)"
                      % (rule, mode, sc, cc, lc, f[0], f[2], f[3] / 1e6, f[4], f[6], f[7] / 1e6))
                if r["d_c"]:
                    print("  %-7s %-8s d_c (the release after the arrival, unmeasured) from 0, 250"
                          " ns, then x2: %s" % (rule, mode, " ".join("%.0f" % v for v in r["d_c"])))
    print("(calibration: medians over the runs of the start-up measurement, s 0 when it found no"
          "\n step; the cases: medians of the mutex waits the rule found free, followed, slept and"
          "\n would sleep, and the delay given back (+) or taken (-) against the rule woken; d_c:"
          "\n medians of the waits whose unmeasured release came after the arrival, by how long"
          "\n after: 0-250 ns, 250-500, 500-1000 ns, ... 16-32 us, beyond; s splits them)")


# BENCH_SYNC_INSITU=0: no --insitu runs beside the --sync ones
INSITU = os.environ.get("BENCH_SYNC_INSITU", "1") != "0"
INSITU_RESULTS = []
# BENCH_SYNC_DEFAULTS=0: no runs at sonde's defaults (the throttle on) beside them
DEFAULTS = os.environ.get("BENCH_SYNC_DEFAULTS", "1") != "0"
DEFAULT_RESULTS = []


def insitu_prices(runs):
    """The workers' (threads 1 and 2) in-situ prices over the rounds: median price, how many
    of the worker runs used it, total runs, median pairs, median start-up price."""
    v = [m for _, o in runs for m in re.findall(r"insitu ([12]) (\S+) (\S+) (\S+) (\d+)", o)]
    if not v:
        return float("nan"), 0, 0, 0, float("nan")
    return (statistics.median(float(m[2]) for m in v), sum(m[1] == "used" for m in v), len(v),
            statistics.median(int(m[4]) for m in v), statistics.median(float(m[3]) for m in v))


def summary(rows):
    return ", ".join("%s %+.1f%% (%+.1f%% vs hooks, %+.1f%% at in-situ cost, %+.1f%% without "
                     "run-queue delay, %.0f/%.0f%% of rounds on one CPU%s)" % (
                         r["mode"], pct(r["par"], r["t"]), pct(r["par"], r["h"]),
                         pct(r["par_situ"], r["t"]), pct(r["par_q"], r["t_q"]), 100 * r["sh_t"],
                         100 * r["sh_par"],
                         "" if r["mode"] in LOCKS else
                         "; per round %+.1f%%" % pct(r["r_par"], r["r_t"])) for r in rows)


# BENCH_SYNC_PIN: the placements compared, comma-separated (none, apart, together)
pins = [p for p in os.environ.get("BENCH_SYNC_PIN", "none,apart").split(",") if p]
for p in pins:
    if p not in PLACEMENTS:
        raise SystemExit("sync.py: BENCH_SYNC_PIN: unknown placement '%s'" % p)
def wake_costs():
    """bench/sync_wake.c: the waker's FUTEX_WAKE and the sleeper's wake-up latency (medians of
    2000), by how long the sleeper slept."""
    p = subprocess.run([os.path.join(B, "sync_wake"), "2000", "5", "20", "40", "100", "400"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("sync.py: sync_wake failed: " + p.stderr)
    print("\nFutex wake-up by sleep (medians of 2000; the waker on another CPU)")
    print("%-10s %12s %12s" % ("slept us", "wake call", "latency"))
    for us, w, lat in re.findall(r"sleep_us (\d+) wake_ns (\d+) latency_ns (\d+)", p.stdout):
        print("%-10s %10.2f us %9.2f us" % (us, int(w) / 1e3, int(lat) / 1e3))


def sensitivity():
    """How each program's elapsed time answers a small disturbance that is not sonde's: the plain
    build against sync_comp.disturb (two clock reads every 1024 steps, timed by the program), in
    the same rounds; the disturbed run's error, and what is left once the longer-disturbed
    worker's disturbance is taken off, the best any compensation of it could do (the fork-join
    model's T_m - max overhead). A program whose error stays well above its disturbance is one
    whose time the disturbance changed, not just lengthened (docs/measurement.md, "What
    compensation cannot remove")."""
    print("\nSensitivity: the plain program with two clock reads every 1024 steps (the disturbance,"
          "\nthe workers' own time in them), paired medians of %d rounds per placement: elapsed"
          "\nerror, and the error left with the longer-disturbed worker's disturbance removed"
          % comp_runs())
    print("%-8s %-9s %10s %10s %12s %12s" % ("program", "placement", "plain ms", "disturb %",
                                            "err disturbed", "err removed"))
    with parallel_runs():  # the threads must run in parallel
        for pin in pins:
            env = {"SYNC_COMP_PIN": pin}
            for mode in PROGRAMS:
                args = [mode, ROUNDS, WORK]
                res = benchlib.rounds([
                    benchlib.Variant("plain", [os.path.join(B, "sync_comp.base")] + args, env=env),
                    benchlib.Variant("disturb", [os.path.join(B, "sync_comp.disturb")] + args,
                                     env=env)], comp_runs(), progress=False)
                errs, left, share, plains = [], [], [], []
                for (_, po), (_, do) in zip(res["plain"], res["disturb"]):
                    p, d = elapsed(po), elapsed(do)
                    dist = max(int(v) for v in re.findall(r"disturb_ns (\d+)", do))
                    errs.append(pct(d, p))
                    left.append(pct(d - dist, p))
                    share.append(100.0 * dist / d)
                    plains.append(p / 1e6)
                print("%-8s %-9s %10.2f %9.1f%% %11.1f%% %11.1f%%" % (
                    mode, pin, statistics.median(plains), statistics.median(share),
                    statistics.median(errs), statistics.median(left)))


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


load_start = loadavg()
figs = {} if os.environ.get("BENCH_SYNC_PAIR") == "0" else pair_costs()
wake_costs()
if os.environ.get("BENCH_SYNC_SENSITIVITY", "1") != "0":
    sensitivity()
# BENCH_SYNC_COMP=0: no compensation runs (the pair costs, wake-ups and sensitivity alone)
results = [(p, comp_errors(p)) for p in pins] if os.environ.get("BENCH_SYNC_COMP") != "0" else []
RULES = rules()
print("\nload average (1, 5, 15 min): %s at the start, %s at the end (2 vCPUs here: above ~1.5"
      "\nother processes share the CPUs with the runs)" % (load_start, loadavg()))
if figs:
    print("\nsync: mutex pair +%.1f ns, spin pair +%.1f ns (--sync), +%.1f ns without --sync" % (
        figs["sonde run --sync"][0] - figs["alone"][0],
        figs["sonde run --sync"][1] - figs["alone"][1],
        figs["sonde run"][0] - figs["alone"][0]))
for p, out in results:
    print("sync --no-insitu, compensation error (%s; rule %s): %s" % (
        PLACEMENTS[p], RULES[0], summary(out["sync"])))
for p, rows in INSITU_RESULTS:
    print("sync (in situ, --sync's default), compensation error (%s): %s" % (
        PLACEMENTS[p], summary(rows)))
for p, rows in DEFAULT_RESULTS:
    print("sync at sonde's defaults (in situ, throttle on), compensation error (%s): %s" % (
        PLACEMENTS[p], summary(rows)))
for p, out in results:
    for n, rule in zip(["sync"] + ["sync:" + r for r in RULES[1:]], RULES):
        print("sync --no-insitu, verdict (%s; rule %s):" % (PLACEMENTS[p], rule))
        for r in out[n]:
            print("  " + verdict(r))
for p, rows in INSITU_RESULTS:
    print("sync (in situ, --sync's default), verdict (%s):" % PLACEMENTS[p])
    for r in rows:
        print("  " + verdict(r))
    print("  at the fast CPU speed (rounds whose two runs kept it on every CPU):")
    for r in rows:
        print("  " + (verdict(dict(r, paired=r["paired_fast"])) if r["paired_fast"]
                      else "%-8s no round at the fast speed" % r["mode"]))
for p, rows in DEFAULT_RESULTS:
    print("sync at sonde's defaults (in situ, throttle on), verdict (%s):" % PLACEMENTS[p])
    for r in rows:
        print("  " + verdict(r))
