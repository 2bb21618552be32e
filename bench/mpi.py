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
# seed 001, Table 1 (seconds): uninstrumented, no compensation, local, parallel
SEED = {"master": (73.926, 128.179, 139.56, 73.926), "worker": (73.834, 128.173, 73.212, 73.909)}


def mpirun(np, argv, env=None):
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np)] + argv
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
                m = re.search(r"oneway_ns (\S+) direct_ns (\S+) struct_ns (\S+)", out)
                w, d, st = (float(x) for x in m.groups())
                figs.setdefault((np, name), []).append((w, d, w - d, st - d))
    med = {k: [statistics.median(r[i] for r in v) for i in range(4)] for k, v in figs.items()}
    print("\nLatency of an 8-byte message, ns (medians of %d runs; in each run the fastest of 200 "
          "batches of %s messages per kind, the kinds taking turns)" % (RUNS, ROUNDS))
    print("MPI_: the program's calls (through the wrappers under sonde run); PMPI_: the library "
          "alone, same run; struct: PMPI_ with the piggyback's struct type")
    for np, what in ((2, "2 ranks, one-way (the target's figure)"),
                     (1, "1 rank sending to itself (both ends' CPU cost)")):
        print("%s\n%-22s %10s %10s %10s %18s" % (what, "", "MPI_", "PMPI_", "added",
                                                 "struct - PMPI_"))
        for name, _ in variants:
            print("%-22s %10.1f %10.1f %10.1f %18.1f" % (name, *med[(np, name)]))
    return med


def plain_times(out):
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
        cols["uninstrumented"].append(plain_times(mpirun(4, prog("mpi_pi.base"), env)))

    def inlined():
        cols["inlined"].append(plain_times(mpirun(4, prog("mpi_pi.inline"), env)))

    def local():
        mpirun(4, sonde(d1, ["--throttle", "off"], prog("mpi_pi.inst")), env)
        m, w, ranks = report_times(d1, "t_m_ns")
        cols["no compensation"].append((m, w))
        cols["local"].append(report_times(d1, "t_local_ns")[:2])
        o_full.append(ranks["o_full"])

    def parallel():
        mpirun(4, sonde(d2, ["--throttle", "off", "--mpi-comp"], prog("mpi_pi.inst")), env)
        m, w, ranks = report_times(d2, "t_par_ns")
        cols["parallel"].append((m, w))
        workers = [r for k, r in ranks.items() if k not in (0, "o_full")]
        reorders.append(sum(r["reorders"] for r in workers) + ranks[0]["reorders"])
        # the rule's own accuracy: the master's delay removed against the workers' overhead
        handed.append((ranks[0]["delay_ns"] - ranks[0]["overhead_ns"],
                       sum(r["overhead_ns"] for r in workers)))

    modes = [plain, local, parallel, inlined]
    for i in range(RUNS):  # the order rotates: the load's drift touches every mode alike
        for f in modes[i % 4:] + modes[:i % 4]:
            f()
    print("\nSeed 001 Table 1: master/worker Monte Carlo pi, 4 ranks, %s chunks of %s points "
          "(ms; %d runs of each, modes taking turns; worker: mean of the 3)" % (CHUNKS, POINTS,
                                                                              RUNS))
    print("%-17s %15s %15s %15s %15s" % ("", *names[:4]))
    errs = {}
    who_t = lambda r, i: r[0] if i == 0 else statistics.mean(r[1])
    for stat, fn in (("median", statistics.median), ("fastest", min)):
        for i, who in enumerate(("master", "worker")):
            v = {k: fn(who_t(r, i) for r in cols[k]) for k in names}
            u = v["uninstrumented"]
            print("%-17s %15.1f %15.1f %15.1f %15.1f" % (who + " " + stat,
                                                         *(v[k] / 1e6 for k in names[:4])))
            e = [100.0 * (v[k] - u) / u for k in names[:4]]
            print("%-17s %14.1f%% %14.1f%% %14.1f%% %14.1f%%" % ("  error", *e))
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
    spread = [r[0] / 1e6 for r in cols["uninstrumented"]]
    print("uninstrumented master over the runs: %.1f to %.1f ms (the machine's load)"
          % (min(spread), max(spread)))
    il, u = errs["master inlined"]
    print("inside() inlined (plain build, not comparable with the probes): master %.1f ms, "
          "%.1f%% against the out-of-line build" % (il / 1e6, 100.0 * (il - u) / u))
    got, own = (statistics.median(h[i] for h in handed) for i in (0, 1))
    print("propagation (parallel runs, medians): the master inherited %.1f ms of delay; the "
          "workers' overhead was %.1f ms (%.2f%%)" % (got / 1e6, own / 1e6,
                                                      100.0 * (got - own) / own if own else 0))
    calls = int(CHUNKS) * (int(POINTS) // 8)
    # the fastest runs: a difference of medians would carry the load's stretch of the runs
    situ = (min(statistics.mean(r[1]) for r in cols["no compensation"]) -
            min(statistics.mean(r[1]) for r in cols["uninstrumented"])) / calls
    print("a probe pair of inside(): %.1f ns in situ (fastest workers, instrumented minus "
          "uninstrumented, over %d calls), %.1f ns calibrated (what compensation removes)"
          % (situ, calls, statistics.median(o_full)))
    print("seed 001 (s): master %s, worker %s" % (SEED["master"], SEED["worker"]))
    print("wildcard receives out of approximated send order (parallel run, median): %d"
          % statistics.median(reorders))
    return errs


def main():
    lat = latency()
    errs = table1()
    print("\nmpi: added ns per message 2-rank %.1f (piggyback %.1f, of which the struct type in "
          "the MPI library %.1f), self %.1f (%.1f); "
          "Table 1 error (paired medians) master local %.1f%% parallel %.1f%%, worker local %.1f%% "
          "parallel %.1f%%" % (
              lat[(2, "sonde run")][2], lat[(2, "sonde run --mpi-comp")][2],
              lat[(2, "sonde run --mpi-comp")][3],
              lat[(1, "sonde run")][2], lat[(1, "sonde run --mpi-comp")][2],
              errs["master"][2], errs["master"][3], errs["worker"][2], errs["worker"][3]))


main()
