# SPDX-License-Identifier: MIT
"""Driver of bench/mpi.sh: ns added per message, and seed 001's Table 1 (medians of rounds)."""
import json
import math
import os
import re
import statistics
import subprocess
import sys

B, SONDE, ROUNDS, CHUNKS, POINTS = sys.argv[1:6]
RUNS = max(1, int(os.environ.get("BENCH_RUNS", "7")))
PARTS = os.environ.get("BENCH_MPI_PARTS", "latency,table1").split(",")
# Table 1's rounds: its runs swing with the machine's speed from second to second, so more of them
T1_RUNS = max(1, int(os.environ.get("BENCH_MPI_T1_RUNS", str(max(RUNS, 15)))))
# Table 1's ranks: the master's CPU and the workers' (bench/mpi_pin.sh); by default all four on
# CPU 1: one rank computes at a time and the waiting ones yield it, while CPU 0 takes the rest of
# the machine (docs/benchmarks.md, "MPI"); "none": the scheduler places them
PIN = os.environ.get("BENCH_MPI_PIN", "1,1" if (os.cpu_count() or 1) >= 2 else "none")
# seed 001, Table 1 (seconds): uninstrumented, no compensation, local, parallel
SEED = {"master": (73.926, 128.179, 139.56, 73.926), "worker": (73.834, 128.173, 73.212, 73.909)}


def mpirun(np, argv, env=None, pin=False):
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np)]
    if pin and PIN != "none":
        cmd += ["--bind-to", "none", os.path.join(os.path.dirname(__file__), "mpi_pin.sh")] + \
            PIN.split(",")
    cmd += argv
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise SystemExit("mpi.py: %s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                       p.stderr.strip()[:300]))
    return p.stdout


def sonde(run_dir, opts, prog):
    return [SONDE, "run", "-o", run_dir] + opts + ["--"] + prog


def latency():
    """Per rank count and variant: the added ns (MPI_ batches minus PMPI_ batches of the same run),
    and what the MPI library alone charges for the piggyback's struct type (struct minus PMPI_)."""
    prog = [os.path.join(B, "mpi_pingpong"), ROUNDS]
    variants = [("alone", lambda: prog),
                ("sonde run", lambda: sonde(os.path.join(B, "mpi-pp1"), [], prog)),
                ("sonde run --mpi-comp",
                 lambda: sonde(os.path.join(B, "mpi-pp2"), ["--mpi-comp"], prog))]
    figs = {}
    for np in (1, 2):
        for _ in range(RUNS):  # interleaved rounds: drift touches every variant alike
            for name, argv in variants:
                out = mpirun(np, argv())
                m = re.search(r"oneway_ns (\S+) direct_ns (\S+) struct_ns (\S+) "
                              r"hindexed_ns (\S+)", out)
                w, d, st, hx = (float(x) for x in m.groups())
                figs.setdefault((np, name), []).append((w, d, w - d, st - d, hx - d))
    med = {k: [statistics.median(r[i] for r in v) for i in range(5)] for k, v in figs.items()}
    print("\nLatency of an 8-byte message, ns (medians of %d runs; in each run the fastest of 200 "
          "batches of %s messages per kind, the kinds taking turns)" % (RUNS, ROUNDS))
    print("MPI_: the program's calls (through the wrappers under sonde run); PMPI_: the library "
          "alone, same run; struct: PMPI_ with the piggyback's struct type; hindexed: the same "
          "two parts as an hindexed type of MPI_BYTE")
    for np, what in ((2, "2 ranks, one-way (the target's figure)"),
                     (1, "1 rank sending to itself (both ends' CPU cost)")):
        print("%s\n%-22s %10s %10s %10s %16s %18s" % (what, "", "MPI_", "PMPI_", "added",
                                                      "struct - PMPI_", "hindexed - PMPI_"))
        for name, _ in variants:
            print("%-22s %10.1f %10.1f %10.1f %16.1f %18.1f" % (name, *med[(np, name)]))
    c = med[(2, "sonde run --mpi-comp")]
    print("2 ranks, --mpi-comp: added %.1f ns = the library's struct type %.1f + sonde's own "
          "%.1f" % (c[2], c[3], c[2] - c[3]))
    return med


CALLS = []  # inside()'s calls in a run, as the master printed them
RANK_RE = re.compile(r"rank (\d+) ns (\S+) cpu (\d+) rq (\d+) slices \d+ vcsw \d+ ivcsw (\d+) "
                     r"chunks (\d+) work_wall (\d+) work_cpu (\d+)")


def program_run(out):
    """What the program printed (bench/mpi_pi.c): per rank its time, CPU time, run-queue delay and
    involuntary switches over the timed part, a worker's chunks and their wall and CPU time; the
    master's hand-out order; rank 1's in-situ gauge of a probe pair after MPI_Finalize."""
    CALLS[:] = [int(n) for n in re.findall(r"inside_calls (\d+)", out)][:1] or CALLS
    ranks = {int(m[0]): [float(m[1])] + [int(x) for x in m[2:]] for m in RANK_RE.findall(out)}
    if sorted(ranks) != [0, 1, 2, 3]:
        raise SystemExit("mpi.py: mpi_pi printed no time for every rank: " + out[:300])
    order = re.search(r"order([ \d]*)", out)
    gauge = re.search(r"gauge_pair_ns (\S+) plain_point_ns (\S+) plain_before_ns (\S+)", out)
    w = [ranks[r] for r in (1, 2, 3)]
    return {
        "master": ranks[0][0], "workers": [x[0] for x in w],
        "master_cpu": ranks[0][1], "master_rq": ranks[0][2],
        "work_cpu": sum(x[6] for x in w), "work_wall": sum(x[5] for x in w),
        # CPU the ranks used while not computing: the master's and the waiting workers' polling
        "wait_cpu": ranks[0][1] + sum(x[1] - x[6] for x in w),
        "ivcsw": sum(x[3] for x in w), "chunks": [x[4] for x in w],
        "order": "".join(order.group(1).split()) if order else "?",
        "gauge": float(gauge.group(1)) if gauge else float("nan"),
        "plain_point": float(gauge.group(2)) if gauge else float("nan"),
        "plain_before": float(gauge.group(3)) if gauge else float("nan"),
    }


def report_ranks(run_dir):
    p = subprocess.run([SONDE, "report", "--json", "--mpi", run_dir], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit("mpi.py: sonde report failed: " + p.stderr)
    js = json.loads(p.stdout)
    calib = [q["calibration"]["o_full_ns"] for q in js["processes"] if "calibration" in q]
    skip = [q["calibration"]["o_skip_ns"] for q in js["processes"] if "calibration" in q]
    ranks = {r["rank"]: r for r in js["mpi"]["ranks"]}
    # --insitu: each rank's in-situ price of a probe pair (its INSITU records), by pid
    for q in js["processes"]:
        for r in ranks.values():
            if r["pid"] == q["pid"]:
                r["insitu"] = [dict(t["insitu"], probes=t["probes"])
                               for t in q.get("threads", []) if "insitu" in t]
    return ranks, statistics.median(calib) if calib else 0.0, \
        statistics.median(skip) if skip else 0.0


def cpu_stolen():
    """The machine's CPU time so far and the part of it its hypervisor gave to others (steal),
    in jiffies (/proc/stat)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0, 0
    return sum(v), v[7] if len(v) > 7 else 0


NAMES = ("uninstrumented", "no compensation", "local", "parallel", "parallel+insitu")


def pct(a, b):
    return 100.0 * (a - b) / b


def iqr(v):
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return q[0], q[2]


def table1_runs():
    """T1_RUNS rounds of the four builds and modes, the order rotating. Per round and mode the
    program's figures; the sonde runs add the report's (times, overhead, delay, prices)."""
    prog = lambda name: [os.path.join(B, name), CHUNKS, POINTS]
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
    d1, d2 = os.path.join(B, "mpi-pi-local"), os.path.join(B, "mpi-pi-par")

    def plain(name):
        return program_run(mpirun(4, prog(name), env, pin=True))

    def instrumented(d, opts):
        r = program_run(mpirun(4, sonde(d, ["--throttle", "off"] + opts, prog("mpi_pi.inst")),
                               env, pin=True))
        ranks, r["final_price"], r["o_skip"] = report_ranks(d)
        w = [ranks[k] for k in (1, 2, 3)]
        r["o_workers"] = sum(k["overhead_ns"] for k in w)
        r["inherited"] = ranks[0]["delay_ns"] - ranks[0]["overhead_ns"]
        r["price"] = r["o_workers"] / CALLS[0]  # start-up price per pair, as compensation used
        r["reorders"] = sum(k["reorders"] for k in ranks.values())
        # --insitu: the workers' in-situ prices (inside()), the number used, the pairs behind them
        situ = [s for k in w for s in k.get("insitu", []) if s["function"] == "inside"]
        r["insitu"] = statistics.median(s["price_ns"] for s in situ) if situ else float("nan")
        r["insitu_used"] = sum(s["status"] == "used" for s in situ)
        r["insitu_pairs"] = sum(s["pairs"] for s in situ)
        # the pairs priced: inside()'s calls in its unmeasured windows (o_skip each) and the
        # measured ones, at the price each worker charged in the end (weighted by its measured
        # calls of inside() on the workers' path: rank 1's gauge after MPI_Finalize is not in
        # them); "fallback": what the workers whose pairs were too spread or implausible, and
        # so were charged CALIB's price, would have been charged more at their own median
        r["b_calls"] = sum(s["unmeasured_calls"] for s in situ)
        # of them, those of skip windows (charged o_skip); a bare window's ran without probes
        r["b_skip_calls"] = sum(s["unmeasured_calls"] - s["window_calls"] * s["bare_pairs"]
                                for s in situ)
        r["bare_pairs"] = sum(s["bare_pairs"] for s in situ)
        r["pairs"] = sum(s["pairs"] for s in situ)
        calls = sum(s["calls"] for s in situ)
        r["charged"] = sum(s["used_ns"] * s["calls"] for s in situ) / calls if calls \
            else r["price"]
        r["fallback"] = sum((s["price_ns"] - s["used_ns"]) * s["calls"] for s in situ
                            if s["status"] != "used" and s["price_ns"] > 0)
        for key in ("t_m_ns", "t_local_ns", "t_par_ns"):
            r[key] = (ranks[0][key], [k[key] for k in w])
        return r

    runs = {"uninstrumented": lambda: plain("mpi_pi.base"),
            "inlined": lambda: plain("mpi_pi.inline"),
            "local run": lambda: instrumented(d1, []),
            # calibrated prices: --mpi-comp alone would price in situ (docs/mpi.md)
            "parallel run": lambda: instrumented(d2, ["--mpi-comp", "--no-insitu"]),
            "insitu run": lambda: instrumented(os.path.join(B, "mpi-pi-insitu"),
                                               ["--mpi-comp", "--insitu"]),
            # inside() excluded: its calls take the unmeasured path (the one --insitu's B
            # windows take), so this run's gauge is what an unmeasured pair costs in situ, to
            # hold against the calibrated o_skip that --insitu adds to its windows' difference
            "skip run": lambda: instrumented(os.path.join(B, "mpi-pi-skip"),
                                             ["--mpi-comp", "--no-insitu", "--exclude",
                                              "inside"])}
    kinds = list(runs)
    rounds, steal = [], []
    for i in range(T1_RUNS):  # the order rotates: the load's drift touches every mode alike
        t0, s0 = cpu_stolen()
        rnd = {}
        for k in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:
            rnd[k] = runs[k]()
        t1, s1 = cpu_stolen()
        steal.append(100.0 * (s1 - s0) / max(1, t1 - t0))
        rounds.append(rnd)
    return rounds, steal


def times(rnd, mode):
    """(master, mean worker) of one round's run in one of Table 1's columns: the program's own
    time uninstrumented, sonde's times (end of MPI_Init to start of MPI_Finalize) otherwise."""
    if mode == "uninstrumented":
        r = rnd["uninstrumented"]
        return r["master"], statistics.mean(r["workers"])
    r = rnd[{"parallel": "parallel run", "parallel+insitu": "insitu run"}.get(mode, "local run")]
    m, w = r[{"no compensation": "t_m_ns", "local": "t_local_ns", "parallel": "t_par_ns",
              "parallel+insitu": "t_par_ns"}[mode]]
    return m, statistics.mean(w)


def run_of(rnd, mode):
    """The run a column of Table 1 comes from."""
    return rnd[run_kind(mode)]


def off_cpu(r):
    """The workers' computing time off their CPU: runnable, another task running."""
    return r["work_wall"] - r["work_cpu"]


def print_table(rounds, quiet):
    errs = {}
    row = "%-30s" + " %15s" * len(NAMES)
    print(row % ("", *NAMES))
    for stat, fn in (("fastest", min), ("median", statistics.median)):
        for i, who in enumerate(("master", "worker")):
            v = {k: fn(times(r, k)[i] for r in rounds) for k in NAMES}
            u = v["uninstrumented"]
            label = who + " " + stat + (" (seed's method)" if stat == "fastest" else "")
            print(("%-30s" + " %15.1f" * len(NAMES)) % (label, *(v[k] / 1e6 for k in NAMES)))
            e = [pct(v[k], u) for k in NAMES]
            print(("%-30s" + " %14.1f%%" * len(NAMES)) % ("  error", *e))
            errs[who + " " + stat] = e
    # paired: each round's runs ran one after the other: their ratio to the round's
    # uninstrumented run cancels the drift between rounds, not within one. "off CPU removed":
    # every run's time less its workers' computing time off their CPU (other tasks ran), as on
    # the dedicated processors seed 001 assumes: a diagnostic, not the target's figure
    for sel, tag, off in ((range(len(rounds)), "paired", False), (quiet, "paired, quiet", False),
                          (range(len(rounds)), "paired, off CPU removed", True)):
        if not sel:
            continue
        for i, who in enumerate(("master", "worker")):
            t = lambda j, k: times(rounds[j], k)[i] - (off_cpu(run_of(rounds[j], k)) if off
                                                       else 0)
            rat = {k: [100.0 * (t(j, k) / t(j, "uninstrumented") - 1) for j in sel]
                   for k in NAMES}
            print(("%-30s" + " %14.1f%%" * len(NAMES)) % (
                "%s %s" % (who, tag), *(statistics.median(rat[k]) for k in NAMES)))
            lo_hi = [iqr(rat[k]) for k in NAMES]
            print(row % ("  quartiles", *("%+.1f..%+.1f%%" % q for q in lo_hi)))
            errs[who + " " + tag] = [statistics.median(rat[k]) for k in NAMES]
            errs[who + " " + tag + " iqr"] = lo_hi
    return errs


# A run is at the CPU's fast speed when the plain loop, timed before MPI_Init and after
# MPI_Finalize, ran within this factor of the fastest such reading of the whole benchmark
# (the two speeds seen here are 15-25 % apart; the spread within one is about 5 %)
SPEED_FACTOR = 1.08


def speeds(rounds):
    """Per round and run kind: "fast" (both readings at the fast speed), "slow" (neither), or
    "mixed" (the CPU changed speed during the run, or around it)."""
    kinds = [k for k in rounds[0] if not math.isnan(rounds[0][k]["plain_before"])]
    floor = min(min(r[k]["plain_before"], r[k]["plain_point"]) for r in rounds for k in kinds)
    cut = SPEED_FACTOR * floor

    def state(r):
        fast = (r["plain_before"] <= cut) + (r["plain_point"] <= cut)
        return ("slow", "mixed", "fast")[fast]
    return [{k: state(r[k]) for k in kinds} for r in rounds], cut


def print_same_speed(rounds):
    """Table 1 over the runs made at one speed of the CPU: each mode's median over its runs at
    that speed against the uninstrumented runs' at the same speed, and paired within the rounds
    whose two runs both kept it. A run at the other speed is 15-25 % slower or faster whatever
    the probes did: compensation cannot remove that, and comparing across speeds measures it."""
    st, cut = speeds(rounds)
    out = {}
    print("\nAt one CPU speed (the plain loop before MPI_Init and after MPI_Finalize both under "
          "%.2f ns a point: fast; both over: slow; ms, errors against the uninstrumented runs at "
          "that speed)" % cut)
    print(("%-30s" + " %15s" * len(NAMES)) % ("", *NAMES))
    for speed in ("fast", "slow"):
        sel = {k: [j for j in range(len(rounds)) if st[j][run_kind(k)] == speed] for k in NAMES}
        if len(sel["uninstrumented"]) < 2:
            print("%s: %d uninstrumented run(s) at this speed: too few" % (
                speed, len(sel["uninstrumented"])))
            continue
        print(("%-30s" + " %15s" * len(NAMES)) % (
            "runs at the %s speed" % speed, *("%d of %d" % (len(sel[k]), len(rounds))
                                              for k in NAMES)))
        for i, who in enumerate(("master", "worker")):
            med = {k: statistics.median(times(rounds[j], k)[i] for j in sel[k]) if sel[k]
                   else float("nan") for k in NAMES}
            u = med["uninstrumented"]
            e = [pct(med[k], u) for k in NAMES]
            print(("%-30s" + " %15.1f" * len(NAMES)) % ("%s median" % who,
                                                         *(med[k] / 1e6 for k in NAMES)))
            print(("%-30s" + " %14.1f%%" * len(NAMES)) % ("  error", *e))
            pairs = {k: [100.0 * (times(rounds[j], k)[i] / times(rounds[j], "uninstrumented")[i]
                                  - 1) for j in sel[k] if j in sel["uninstrumented"]]
                     for k in NAMES}
            print(("%-30s" + " %15s" * len(NAMES)) % (
                "  paired (rounds)", *("%+.1f%% (%d)" % (statistics.median(v), len(v)) if v
                                       else "-" for v in pairs.values())))
            out["%s %s" % (who, speed)] = (e, [len(sel[k]) for k in NAMES])
    return out


def run_kind(mode):
    """The run kind a column of Table 1 comes from (run_of's key)."""
    return {"uninstrumented": "uninstrumented", "no compensation": "local run",
            "local": "local run", "parallel": "parallel run",
            "parallel+insitu": "insitu run"}[mode]


def print_diagnostics(rounds):
    """Per run the scheduler's and the runtime's figures, medians over the rounds: what differs
    between the modes besides the probes."""
    kinds = ("uninstrumented", "local run", "parallel run", "insitu run", "skip run")
    med = lambda k, f: statistics.median(f(r[k]) for r in rounds)
    rows = [
        ("master wall", lambda r: r["master"] / 1e6),
        ("ranks' CPU while waiting", lambda r: r["wait_cpu"] / 1e6),
        ("workers computing: CPU", lambda r: r["work_cpu"] / 1e6),
        ("workers computing: off CPU", lambda r: off_cpu(r) / 1e6),
        ("master beyond computing", lambda r: (r["master"] - r["work_wall"]) / 1e6),
        ("workers' involuntary sw.", lambda r: r["ivcsw"]),
    ]
    print("\nPer run, medians over the rounds (ms; ranks' own readings: CLOCK_THREAD_CPUTIME_ID "
          "around each chunk, /proc/thread-self/schedstat, getrusage)")
    print("%-30s %15s %15s %15s %15s %15s" % ("", *kinds))
    for name, f in rows:
        print("%-30s %15.1f %15.1f %15.1f %15.1f %15.1f" % (name, *(med(k, f) for k in kinds)))
    for name, f in (("overhead removed (workers)", lambda r: r["o_workers"] / 1e6),
                    ("master's inherited delay", lambda r: r["inherited"] / 1e6),
                    ("probe pair: price used, ns", lambda r: r["price"]),
                    ("probe pair: final CALIB, ns", lambda r: r["final_price"]),
                    ("probe pair: in situ, ns", lambda r: r["gauge"])):
        print("%-30s %15s %15.1f %15.1f %15.1f %15.1f" % (name, "-",
                                                        *(med(k, f) for k in kinds[1:])))
    print("%-30s %15s %15s %15s %15.1f" % ("probe pair: --insitu found, ns", "-", "-", "-",
                                           med("insitu run", lambda r: r["insitu"])))
    print("%-30s %15s %15s %15s %15.1f" % ("probe pair: --insitu charged", "-", "-", "-",
                                           med("insitu run", lambda r: r["charged"])))
    print("%-30s %15s %15s %15s %15.1f" % ("B windows' calls (insitu run)", "-", "-", "-",
                                           med("insitu run", lambda r: r["b_calls"])))
    print("%-30s %15s %15s %15s %15.1f" % ("  of them in bare windows, %", "-", "-", "-",
                                           med("insitu run", lambda r: 100.0 * (
                                               1 - r["b_skip_calls"] / r["b_calls"])
                                               if r["b_calls"] else 0.0)))
    print("%-30s %15s %15s %15s %15s %15.1f" % (
        "unmeasured pair: o_skip, ns", "-", "-", "-", "-", med("skip run", lambda r: r["o_skip"])))
    print("%-30s %15s %15s %15s %15s %15.1f" % (
        "unmeasured pair: in situ, ns", "-", "-", "-", "-", med("skip run", lambda r: r["gauge"])))
    d = [r["skip run"]["gauge"] - r["skip run"]["o_skip"] for r in rounds]
    print("unmeasured pair in situ (the skip run's gauge, inside() excluded) above its calibrated "
          "o_skip, per round: median %+.1f ns (quartiles %+.1f..%+.1f)" % (statistics.median(d),
                                                                           *iqr(d)))
    print("%-30s %15.2f %15s %15s" % ("gauge's floor (no probes), ns",
                                      med("uninstrumented", lambda r: r["gauge"]), "-", "-"))
    orders = {}
    for r in rounds:
        for k in kinds:
            orders.setdefault(r[k]["order"], []).append(k)
    print("hand-out orders (master's order of workers per chunk: runs): " + ", ".join(
        "%s: %d" % (o, len(v)) for o, v in sorted(orders.items(), key=lambda x: -len(x[1]))))


def print_runs(rounds):
    """Every run, round by round: nothing is left out of the medians above."""
    print("\nEvery run (ms; off = workers' computing off CPU; price / CALIB / situ = a probe pair "
          "of inside(), ns: the start-up price compensation used, the run's final calibration, "
          "the gauge after MPI_Finalize; plain = ns per point of the plain loop, the gauge's)")
    st, _ = speeds(rounds)
    print("%5s  %-34s  %-42s  %-42s  %-46s  %s" % (
        "round", "uninstrumented: master off plain", "local run: master local(c) off price situ",
        "parallel run: master par(c) off price CALIB situ",
        "insitu run: master par(c) off CALIB found used situ", "speeds u/l/p/i/s"))
    for j, r in enumerate(rounds):
        u, l, p, s = r["uninstrumented"], r["local run"], r["parallel run"], r["insitu run"]
        print("%5d  %8.1f %6.1f %5.2f %12s  %8.1f %8.1f %5.1f %5.1f %5.1f %5s  "
              "%8.1f %7.1f %5.1f %5.1f %5.1f %5.1f  %8.1f %7.1f %5.1f %5.1f %5.1f %2d/3 %5.1f" % (
                  j, u["master"] / 1e6, off_cpu(u) / 1e6, u["plain_point"], "",
                  l["master"] / 1e6, l["t_local_ns"][0] / 1e6, off_cpu(l) / 1e6, l["price"],
                  l["gauge"], "", p["master"] / 1e6, p["t_par_ns"][0] / 1e6, off_cpu(p) / 1e6,
                  p["price"], p["final_price"], p["gauge"], s["master"] / 1e6,
                  s["t_par_ns"][0] / 1e6, off_cpu(s) / 1e6, s["final_price"], s["insitu"],
                  s["insitu_used"], s["gauge"]), end="")
        print("  " + "".join(st[j][k][0] for k in ("uninstrumented", "local run",
                                                    "parallel run", "insitu run", "skip run")
                             if k in st[j]))


def print_decomposition(rounds, kind="parallel run"):
    """Each round's compensated master (parallel, or parallel with --insitu) minus its
    uninstrumented master, split into what caused it (all in the program's own readings): the
    probes' in-situ cost (the gauge) above the price compensation charged for the measured pairs;
    the unmeasured pairs (--insitu's B windows) in situ (the skip run's gauge) above the o_skip
    charged for them; the rest of the computing CPU time (the machine's speed between the runs);
    the computing time off the CPU (other tasks on the ranks' CPU); the master's time beyond the
    computing (messages, hand-outs); and what the rules did not hand on (workers' overhead less
    the master's inherited delay)."""
    parts = {k: [] for k in ("total", "situ", "fallback", "skip", "speed", "off", "comm",
                             "rules")}
    for rnd in rounds:
        u, p, sk = rnd["uninstrumented"], rnd[kind], rnd["skip run"]
        base = u["master"]
        b = p.get("b_calls", 0)
        situ = (p["gauge"] - p["charged"]) * (CALLS[0] - b)
        fb = p.get("fallback", 0.0)  # of situ: the workers charged CALIB's price
        skip = (sk["gauge"] - p["o_skip"]) * p.get("b_skip_calls", 0)
        cpu = p["work_cpu"] - p["o_workers"] - u["work_cpu"]
        vals = {"total": p["t_par_ns"][0] - base, "situ": situ - fb, "fallback": fb,
                "skip": skip, "speed": cpu - situ - skip, "off": off_cpu(p) - off_cpu(u),
                "comm": (p["master"] - p["work_wall"]) - (base - u["work_wall"]),
                "rules": p["o_workers"] - p["inherited"]}
        for k, v in vals.items():
            parts[k].append(100.0 * v / base)
    names = (("total", "%s master - uninstrumented" % kind.split()[0]),
             ("situ", "  measured pairs in situ above their price"),
             ("fallback", "  ... more, of workers charged CALIB's"),
             ("skip", "  unmeasured pairs in situ above o_skip"),
             ("speed", "  computing CPU otherwise (machine speed)"),
             ("off", "  computing off CPU (other tasks)"),
             ("comm", "  master beyond computing"),
             ("rules", "  not handed on by the rules"))
    print("\nThe %s error split, per round (%% of that round's uninstrumented master; the "
          "parts add up to the total up to the master's compensated start and end)" % kind)
    print("%-44s %8s %17s" % ("", "median", "quartiles"))
    for k, label in names:
        lo, hi = iqr(parts[k])
        print("%-44s %7.1f%% %8.1f..%+.1f%%" % (label, statistics.median(parts[k]), lo, hi))
    return {k: statistics.median(v) for k, v in parts.items()}


def table1():
    """Seed 001's Table 1. The uninstrumented program is the same code as the instrumented one
    apart from the probes (inside() out of line in both: bench/mpi_pi.c); the plain program with
    inside() inlined is run beside them, for what instrumenting costs in code generation."""
    rounds, steal = table1_runs()
    # quiet rounds: every run's computing kept its CPU (off CPU under 2 % of it)
    quiet = [j for j, r in enumerate(rounds)
             if all(off_cpu(r[k]) < 0.02 * r[k]["work_wall"]
                    for k in ("uninstrumented", "local run", "parallel run", "insitu run"))]
    print("\nSeed 001 Table 1: master/worker Monte Carlo pi, 4 ranks, %s chunks of %s points "
          "(ms; %d rounds, one run of each mode per round, the order rotating; worker: mean of "
          "the 3; ranks pinned: %s)" % (CHUNKS, POINTS, T1_RUNS, pin_words()))
    errs = print_table(rounds, quiet)
    errs["speed"] = print_same_speed(rounds)
    errs["parts"] = print_decomposition(rounds)
    errs["parts_insitu"] = print_decomposition(rounds, "insitu run")
    g = [r["insitu run"]["insitu"] - r["insitu run"]["gauge"] for r in rounds]
    # what the in-situ price still leaves: the gauge above the price charged for the measured
    # pairs, per round, as a share of the round's uninstrumented master (the insitu run's split:
    # "situ" with its "fallback")
    left = [100.0 * (r["insitu run"]["gauge"] - r["insitu run"]["charged"])
            * (CALLS[0] - r["insitu run"]["b_calls"]) / r["uninstrumented"]["master"]
            for r in rounds]
    errs["insitu_left"] = statistics.median(left)
    errs["insitu_vs_gauge"] = "median %+.1f ns (%+.1f..%+.1f), found %.1f, gauge %.1f, CALIB %.1f" % (
        statistics.median(g), *iqr(g), statistics.median(r["insitu run"]["insitu"] for r in rounds),
        statistics.median(r["insitu run"]["gauge"] for r in rounds),
        statistics.median(r["insitu run"]["final_price"] for r in rounds))
    print_diagnostics(rounds)
    print_runs(rounds)
    print("quiet rounds (every run's computing off its CPU under 2 %% of it): %d of %d; CPU time "
          "stolen by the hypervisor per round: median %.1f%%, %.1f-%.1f%%"
          % (len(quiet), T1_RUNS, statistics.median(steal), min(steal), max(steal)))
    print("master over the runs (min-max, ms): " + ", ".join(
        "%s %.1f-%.1f" % (k, min(times(r, k)[0] for r in rounds) / 1e6,
                          max(times(r, k)[0] for r in rounds) / 1e6) for k in NAMES))
    il = statistics.median(r["inlined"]["master"] for r in rounds)
    u = statistics.median(r["uninstrumented"]["master"] for r in rounds)
    print("inside() inlined (plain build, not comparable with the probes): master %.1f ms, "
          "%.1f%% against the out-of-line build" % (il / 1e6, pct(il, u)))
    print("seed 001 (s): master %s, worker %s" % (SEED["master"], SEED["worker"]))
    print("wildcard receives out of approximated send order (parallel run, median): %d"
          % statistics.median(r["parallel run"]["reorders"] for r in rounds))
    # the minimum of the compensated times picks the run whose price most exceeded its probes'
    # in-situ cost: the seed's method is biased low by the price's error from run to run
    j = min(range(len(rounds)), key=lambda j: rounds[j]["parallel run"]["t_par_ns"][0])
    u = min(range(len(rounds)), key=lambda j: rounds[j]["uninstrumented"]["master"])
    p = rounds[j]["parallel run"]
    print("fastest parallel master: round %d, price %.1f ns against %.1f in situ (median of the "
          "runs: %.1f against %.1f); plain loop %.2f ns per point (the fastest uninstrumented "
          "run's, round %d: %.2f)" % (
              j, p["price"], p["gauge"], statistics.median(r["parallel run"]["price"]
                                                           for r in rounds),
              statistics.median(r["parallel run"]["gauge"] for r in rounds), p["plain_point"],
              u, rounds[u]["uninstrumented"]["plain_point"]))
    verdict(errs)
    return errs


def verdict(errs):
    """The target on --mpi-comp's default (in-situ prices): over every round, paired, and over
    the runs at one CPU speed; then the calibrated prices' figures and the errors' parts."""
    ins = [errs[w + " paired"][4] for w in ("master", "worker")]
    ins_f = [errs[w + " fastest"][4] for w in ("master", "worker")]
    loc = errs["master paired"][2]
    fast = errs["speed"].get("master fast"), errs["speed"].get("worker fast")
    at_speed = ("at the fast CPU speed %+.1f / %+.1f %% (%s), local %+.1f %% (%s)" % (
        fast[0][0][4], fast[1][0][4],
        "met" if abs(fast[0][0][4]) <= 2 and abs(fast[1][0][4]) <= 2 else "MISSED",
        fast[0][0][2], "shown" if fast[0][0][2] >= 20 else "NOT shown")) if all(fast) \
        else "too few runs at the fast CPU speed"
    print("\nTarget (--mpi-comp, in-situ prices, the default): master and worker within 2 %% of "
          "uninstrumented where local leaves the master >= 20 %% off: paired medians %+.1f / "
          "%+.1f %% (%s), local %+.1f %% (%s); %s" % (
              ins[0], ins[1], "met" if all(abs(x) <= 2.0 for x in ins) else "MISSED", loc,
              "shown" if loc >= 20 else "NOT shown", at_speed))
    print("\nWith --insitu (parallel+insitu): paired medians %+.1f / %+.1f %% (%s), fastest runs "
          "%+.1f / %+.1f %%; its in-situ price against the gauge: %s; the gauge above the price "
          "charged, of the uninstrumented master: %+.1f %% (median)" % (
              ins[0], ins[1], "met" if all(abs(x) <= 2.0 for x in ins) else "MISSED",
              ins_f[0], ins_f[1], errs["insitu_vs_gauge"], errs["insitu_left"]))
    par = [errs[w + " paired"][3] for w in ("master", "worker")]
    fast = [errs[w + " fastest"][3] for w in ("master", "worker")]
    within = lambda v: all(abs(x) <= 2.0 for x in v)
    print("\nCalibrated prices (--mpi-comp --no-insitu): parallel master and worker within 2 %% "
          "of uninstrumented: paired medians "
          "%+.1f / %+.1f %% (%s), fastest runs %+.1f / %+.1f %% (%s); local leaves the master "
          "%+.1f %% off (>= 20 %%: %s)" % (par[0], par[1], "met" if within(par) else "MISSED",
                                         fast[0], fast[1], "met" if within(fast) else "MISSED",
                                         loc, "shown" if loc >= 20 else "NOT shown"))
    p = errs["parts"]
    print("of the paired error, the probes' in-situ cost above their price: %+.1f %%; the "
          "machine's speed between runs %+.1f %%; other tasks on the ranks' CPU %+.1f %%; "
          "messages and hand-outs %+.1f %%; the rules %+.1f %% (medians, split above)"
          % (p["situ"], p["speed"], p["off"], p["comm"], p["rules"]))
    for speed in ("fast", "slow"):
        m, w = errs["speed"].get("master " + speed), errs["speed"].get("worker " + speed)
        if not m:
            continue
        print("at the %s CPU speed (runs: %s): parallel+insitu %+.1f / %+.1f %% (%s), parallel "
              "%+.1f / %+.1f %%, local leaves the master %+.1f %% off (medians against the "
              "uninstrumented runs at that speed)" % (
                  speed, "/".join(str(n) for n in m[1]), m[0][4], w[0][4],
                  "met" if abs(m[0][4]) <= 2 and abs(w[0][4]) <= 2 else "MISSED",
                  m[0][3], w[0][3], m[0][2]))
    q = errs["parts_insitu"]
    print("of the paired --insitu error: its measured pairs in situ above their price %+.1f %% "
          "(and %+.1f %% more where a worker fell back to CALIB's); its unmeasured pairs in situ "
          "above o_skip %+.1f %%; the machine's speed %+.1f %%; other tasks on the ranks' CPU "
          "%+.1f %%; messages and hand-outs %+.1f %%; the rules %+.1f %% (medians, split above)"
          % (q["situ"], q["fallback"], q["skip"], q["speed"], q["off"], q["comm"], q["rules"]))


def pin_words():
    if PIN == "none":
        return "no"
    m, w = PIN.split(",")
    return "all on CPU %s" % m if m == w else "master on CPU %s, workers on CPU %s" % (m, w)


def main():
    print("load average at the start: " + open("/proc/loadavg").read().strip())
    lat = latency() if "latency" in PARTS else None
    errs = table1() if "table1" in PARTS else None
    print("load average at the end: " + open("/proc/loadavg").read().strip())
    if lat:
        print("\nmpi: added ns per message 2-rank %.1f (piggyback %.1f, of which the struct type "
              "in the MPI library %.1f), self %.1f (%.1f)" % (
                  lat[(2, "sonde run")][2], lat[(2, "sonde run --mpi-comp")][2],
                  lat[(2, "sonde run --mpi-comp")][3],
                  lat[(1, "sonde run")][2], lat[(1, "sonde run --mpi-comp")][2]))
    if errs:
        print("mpi: Table 1 error, master local / parallel, worker local / parallel: paired "
              "medians %.1f%% / %.1f%%, %.1f%% / %.1f%%; fastest (seed's method) %.1f%% / "
              "%.1f%%, %.1f%% / %.1f%%; of the parallel master's, probes in situ above their "
              "price %+.1f%%, machine speed %+.1f%%; parallel+insitu master / worker %.1f%% / "
              "%.1f%%" % (
                  errs["master paired"][2], errs["master paired"][3],
                  errs["worker paired"][2], errs["worker paired"][3],
                  errs["master fastest"][2], errs["master fastest"][3],
                  errs["worker fastest"][2], errs["worker fastest"][3],
                  errs["parts"]["situ"], errs["parts"]["speed"],
                  errs["master paired"][4], errs["worker paired"][4]))
        fast = errs["speed"].get("master fast"), errs["speed"].get("worker fast")
        if all(fast):
            print("mpi: Table 1 at the fast CPU speed, master local / parallel+insitu, worker "
                  "parallel+insitu: %.1f%% / %.1f%%, %.1f%% (runs %s)" % (
                      fast[0][0][2], fast[0][0][4], fast[1][0][4],
                      "/".join(str(n) for n in fast[0][1])))

main()
