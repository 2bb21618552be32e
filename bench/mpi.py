# SPDX-License-Identifier: MIT
"""Driver of bench/mpi.sh: ns added per message, and seed 001's Table 1 (medians of rounds)."""
import json
import os
import re
import statistics
import subprocess
import sys

B, SONDE, ROUNDS, CHUNKS, POINTS = sys.argv[1:6]
RUNS = max(1, int(os.environ.get("BENCH_RUNS", "7")))
PARTS = os.environ.get("BENCH_MPI_PARTS", "latency,table1").split(",")
# Table 1's ranks: the master on one CPU, the workers on another (bench/mpi_pin.sh); "none": the
# scheduler places them
QUIET = float(os.environ.get("BENCH_MPI_QUIET", "2"))  # % stolen: a quiet round below it
PIN = os.environ.get("BENCH_MPI_PIN", "0,1" if (os.cpu_count() or 1) >= 2 else "none")
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


def plain_times(out):
    CALLS[:] = [int(n) for n in re.findall(r"inside_calls (\d+)", out)][:1] or CALLS
    t = {int(r): float(ns) for r, ns in re.findall(r"rank (\d+) ns (\S+)", out)}
    return t[0], [t[r] for r in sorted(t) if r]


def report_times(run_dir, key):
    p = subprocess.run([SONDE, "report", "--json", "--mpi", run_dir], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit("mpi.py: sonde report failed: " + p.stderr)
    js = json.loads(p.stdout)
    ranks = {r["rank"]: r for r in js["mpi"]["ranks"]}
    calib = [q["calibration"]["o_full_ns"] for q in js["processes"] if "calibration" in q]
    w = [ranks[r][key] for r in sorted(ranks) if r]
    ranks["o_full"] = statistics.median(calib) if calib else 0.0
    return ranks[0][key], w, ranks


def cpu_stolen():
    """The machine's CPU time so far and the part of it its hypervisor gave to others (steal),
    in jiffies (/proc/stat): on a shared host every mode is stretched by what is stolen."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0, 0
    return sum(v), v[7] if len(v) > 7 else 0


def table1():
    """Seed 001's Table 1. The uninstrumented program is the same code as the instrumented one
    apart from the probes (inside() out of line in both: bench/mpi_pi.c); the plain program with
    inside() inlined is run beside them, for what instrumenting costs in code generation."""
    prog = lambda name: [os.path.join(B, name), CHUNKS, POINTS]
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1")
    d1, d2 = os.path.join(B, "mpi-pi-local"), os.path.join(B, "mpi-pi-par")
    names = ("uninstrumented", "no compensation", "local", "parallel", "inlined")
    cols = {k: [] for k in names}
    reorders, handed, o_full = [], [], []

    def plain():
        cols["uninstrumented"].append(plain_times(mpirun(4, prog("mpi_pi.base"), env, pin=True)))

    def inlined():
        cols["inlined"].append(plain_times(mpirun(4, prog("mpi_pi.inline"), env, pin=True)))

    def local():
        mpirun(4, sonde(d1, ["--throttle", "off"], prog("mpi_pi.inst")), env, pin=True)
        m, w, ranks = report_times(d1, "t_m_ns")
        cols["no compensation"].append((m, w))
        cols["local"].append(report_times(d1, "t_local_ns")[:2])
        o_full.append(ranks["o_full"])

    def parallel():
        mpirun(4, sonde(d2, ["--throttle", "off", "--mpi-comp"], prog("mpi_pi.inst")), env,
               pin=True)
        m, w, ranks = report_times(d2, "t_par_ns")
        cols["parallel"].append((m, w))
        workers = [r for k, r in ranks.items() if k not in (0, "o_full")]
        reorders.append(sum(r["reorders"] for r in workers) + ranks[0]["reorders"])
        # the rule's own accuracy: the master's delay removed against the workers' overhead
        handed.append((ranks[0]["delay_ns"] - ranks[0]["overhead_ns"],
                       sum(r["overhead_ns"] for r in workers)))

    modes = [plain, local, parallel, inlined]
    steal = []  # per round, % of the machine's CPU time stolen
    for i in range(RUNS):  # the order rotates: the load's drift touches every mode alike
        t0, s0 = cpu_stolen()
        for f in modes[i % 4:] + modes[:i % 4]:
            f()
        t1, s1 = cpu_stolen()
        steal.append(100.0 * (s1 - s0) / max(1, t1 - t0))
    print("\nSeed 001 Table 1: master/worker Monte Carlo pi, 4 ranks, %s chunks of %s points "
          "(ms; %d runs of each, modes taking turns; worker: mean of the 3; ranks pinned: %s)"
          % (CHUNKS, POINTS, RUNS, "master on CPU %s, workers on CPU %s" % tuple(PIN.split(","))
             if PIN != "none" else "no"))
    print("%-17s %15s %15s %15s %15s" % ("", *names[:4]))
    errs = {}
    who_t = lambda r, i: r[0] if i == 0 else statistics.mean(r[1])
    # fastest: seed 001 reports the minimum time of each task over its runs
    for stat, fn in (("fastest (seed)", min), ("median", statistics.median)):
        for i, who in enumerate(("master", "worker")):
            v = {k: fn(who_t(r, i) for r in cols[k]) for k in names}
            u = v["uninstrumented"]
            print("%-17s %15.1f %15.1f %15.1f %15.1f" % (who + " " + stat.split()[0],
                                                         *(v[k] / 1e6 for k in names[:4])))
            e = [100.0 * (v[k] - u) / u for k in names[:4]]
            print("%-17s %14.1f%% %14.1f%% %14.1f%% %14.1f%%" % ("  error", *e))
            errs[who + " " + stat.split()[0]] = e
            if stat == "median":
                errs[who + " inlined"] = (v["inlined"], u)
    # paired: each round's modes ran one after the other, so their ratio to that round's
    # uninstrumented run cancels most of the load's drift between rounds
    for i, who in enumerate(("master", "worker")):
        e = [100.0 * (statistics.median(who_t(r, i) / who_t(b, i)
                                        for r, b in zip(cols[k], cols["uninstrumented"])) - 1)
             for k in names[:4]]
        print("%-17s %14.1f%% %14.1f%% %14.1f%% %14.1f%%" % (who + " paired", *e))
        errs[who] = e
    # rounds the hypervisor left alone: its steal stretches the probes' cost too, which no
    # compensation by calibrated costs can remove (docs/benchmarks.md, "MPI")
    quiet = [i for i, x in enumerate(steal) if x < QUIET]
    if quiet:
        for i, who in enumerate(("master", "worker")):
            e = [100.0 * (statistics.median(who_t(cols[k][j], i) /
                                            who_t(cols["uninstrumented"][j], i)
                                            for j in quiet) - 1) for k in names[:4]]
            print("%-17s %14.1f%% %14.1f%% %14.1f%% %14.1f%%" % (who + " quiet", *e))
            errs[who + " quiet"] = e
    print("CPU time stolen by the hypervisor per round: median %.1f%%, %.1f-%.1f%%; %d of %d "
          "rounds under %.1f%% (\"quiet\": paired ratios of those rounds)"
          % (statistics.median(steal), min(steal), max(steal), len(quiet), RUNS, QUIET))
    print("master over the runs (min-max, ms): " + ", ".join(
        "%s %.1f-%.1f" % (k, min(r[0] for r in cols[k]) / 1e6, max(r[0] for r in cols[k]) / 1e6)
        for k in names[:4]))
    il, u = errs["master inlined"]
    print("inside() inlined (plain build, not comparable with the probes): master %.1f ms, "
          "%.1f%% against the out-of-line build" % (il / 1e6, 100.0 * (il - u) / u))
    got, own = (statistics.median(h[i] for h in handed) for i in (0, 1))
    print("propagation (parallel runs, medians): the master inherited %.1f ms of delay; the "
          "workers' overhead was %.1f ms (%.2f%%)" % (got / 1e6, own / 1e6,
                                                      100.0 * (got - own) / own if own else 0))
    calls = CALLS[0]
    # the fastest runs: a difference of medians would carry the load's stretch of the runs
    situ = (min(statistics.mean(r[1]) for r in cols["no compensation"]) -
            min(statistics.mean(r[1]) for r in cols["uninstrumented"])) / calls
    print("a probe pair of inside(): %.1f ns in situ (fastest workers, instrumented minus "
          "uninstrumented, over %d calls), %.1f ns calibrated (what compensation removes)"
          % (situ, calls, statistics.median(o_full)))
    gap = (situ - statistics.median(o_full)) * calls
    u_fast = min(r[0] for r in cols["uninstrumented"])
    print("the probes' in-situ cost above the calibrated one, over those calls: %.1f ms, %.1f%% "
          "of the fastest uninstrumented master (what the parallel column keeps above the "
          "uninstrumented one, whatever the rules do)" % (gap / 1e6, 100.0 * gap / u_fast))
    print("fastest parallel master's error less that excess (the rules' own residue): %.1f%%"
          % (errs["master fastest"][3] - 100.0 * gap / u_fast))
    print("seed 001 (s): master %s, worker %s" % (SEED["master"], SEED["worker"]))
    print("wildcard receives out of approximated send order (parallel run, median): %d"
          % statistics.median(reorders))
    return errs


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
        print("mpi: Table 1 error, master local / parallel, worker local / parallel: fastest "
              "(seed's method) %.1f%% / %.1f%%, %.1f%% / %.1f%%; paired medians %.1f%% / %.1f%%, "
              "%.1f%% / %.1f%%" % (errs["master fastest"][2], errs["master fastest"][3],
                                   errs["worker fastest"][2], errs["worker fastest"][3],
                                   errs["master"][2], errs["master"][3], errs["worker"][2],
                                   errs["worker"][3]))
        if "master quiet" in errs:
            print("mpi: Table 1 error in quiet rounds (paired medians), master local / parallel "
                  "%.1f%% / %.1f%%, worker %.1f%% / %.1f%%" % (
                      errs["master quiet"][2], errs["master quiet"][3],
                      errs["worker quiet"][2], errs["worker quiet"][3]))


main()
