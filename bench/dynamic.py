# SPDX-License-Identifier: MIT
"""Dynamic instrumentation: what a patched function, an insertion, an attach and a detach cost.

Called by bench/dynamic.sh with the directory holding the binaries it built, the tool and the
build directory. Seven parts, each printing its table; the last line sums them up:

1. primitives  bench/dyn_driver prims: two running bench/dyn_target processes, libsonde.so
               preloaded in one with SONDE_DYNAMIC=1 as `sonde run --dynamic` starts a program
               (the PROFILE primitive works there) and injected into the other as `sonde attach`
               does; in each, work() is patched through the tool's patcher. Each round sets
               work()'s point to every configuration in turn (rotating order), in both processes
               (alternating), and the target times CALLS calls of work() and of its unpatched
               twin ref() (same code, same alignment), fastest of 3 each. ns added per call =
               (work - ref)/calls minus the same for the unpatched configuration of the round;
               medians over rounds. Then tests/unit/dyn_bench's own figures (a hand-written
               trampoline around the same runtime code) if it is built.
2. insertion   bench/dyn_driver insert: one function, then all 1001 of a generated program
               (bench/dyn_many.c: 1000 small functions and main, all called in a loop), each
               stopped, planned, written, let go; then removed. Medians of BENCH_DYN_INSERT,
               a fresh process each time. How many insert/remove cycles of every function one
               process takes (bench/dyn_driver cycles, at most 50). `sonde watch` on the same
               program when the tool has it (its attach+patch and unpatch+detach pauses).
3. attach      `sonde attach -o DIR PID` on a fresh busy bench/dyn_target each time (10 runs):
               the pause and total it prints.
4. callheavy   bench/callheavy.c (every function instrumented): uninstrumented, `sonde run
               --dynamic` of the same plain build (PROFILE points), `sonde run` of the
               -finstrument-functions build (compiled-in hooks), side by side as bench/overhead.py
               does; ns per call from the program's own loop timing.
   Compensated totals: each dynamic and compiled run's T_a (sonde report) against the same
               round's uninstrumented process time; for the dynamic runs also what T_a would be
               with the compiled-in hooks' o_full of the same round (what compensation removed
               before the PROFILE probes were calibrated through the trampolines). The same in
               CPU time (user + system of each run, from getrusage): on a loaded machine the wall
               time of a long run includes the CPU given to other processes, which a
               calibration of a few ms in short batches does not see.
5. detach      bench/dyn_driver detach: callheavy's loop (bench/dyn_target heavy) before attaching,
               with one counter at every function (attached), after the patches are removed and
               the runtime detached; a twin process never attached, run in alternation, is the
               control. ns per call = median over rounds of (subject - control)/calls.
6. call site   bench/dyn_driver callsite: the call in bench/dyn_target's cs_work_loop() patched as
               a call-site point (the runtime attached), timed against its twin loop
               cs_ref_loop() as in part 1: unpatched, inactive, one counter, one thread counter.
7. calibration `sonde watch -v` on a fresh busy bench/dyn_target (WATCHES runs): what the runtime
               measured each primitive, predicate and trampoline to cost in the process when it
               started serving (runtime/calib_dyn.c), medians; then those figures summed the way
               part 1's configurations combine them, beside part 1's own figures when it ran.

BENCH_DYN_PARTS (e.g. "1,2"; default all) runs some of them; the summary says n/a for the rest.
"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

B = os.path.abspath(sys.argv[1])
SONDE = os.path.abspath(sys.argv[2])
BUILD = os.path.abspath(sys.argv[3])
RT = os.path.join(BUILD, "lib", "libsonde.so")
DRIVER = os.path.join(B, "dyn_driver")
TARGET = os.path.join(B, "dyn_target")
MANY = os.path.join(B, "dyn_many")
DYN_BENCH = os.path.join(BUILD, "tests", "dyn_bench")
N = os.environ.get("BENCH_DYN_N", "2000000")
CALLS = int(os.environ.get("BENCH_DYN_CALLS", "1000000"))
INSERTS = int(os.environ.get("BENCH_DYN_INSERT", "10"))
PARTS = {int(p) for p in os.environ.get("BENCH_DYN_PARTS", "1,2,3,4,5,6,7").split(",")
         if p.strip()}
ATTACHES = 10
WATCHES = 5
ROUNDS = bl.runs()
CPU = bl.cpu()
CPU_ARG = CPU if CPU is not None else -1

# control sockets' paths must fit in sun_path: a short directory; the runtime makes the
# directories it listens in (0700, or it refuses them)
work = tempfile.mkdtemp(prefix="sbd-", dir=bl.fast_dir(B))
ctl = os.path.join(work, "ctl")


def driver(*args):
    """Run bench/dyn_driver; its lines as (kind, fields) pairs, fields["_raw"] the rest of the
    line."""
    p = subprocess.run([DRIVER] + [str(a) for a in args], stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("bench: dyn_driver %s failed (exit %d)" % (args[0], p.returncode))
    out = []
    for line in p.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        f = {}
        for tok in rest.split():
            k, _, v = tok.partition("=")
            try:
                f[k] = float(v) if "." in v else int(v, 0)
            except ValueError:
                f[k] = v
        f["_raw"] = rest
        out.append((kind, f))
    return out


def fmt3(xs, f="%.2f"):
    """median (min..max)"""
    return (f + " (" + f + ".." + f + ")") % (bl.median(xs), min(xs), max(xs))


def run_near(argv_of_pid, prog):
    """Start prog (pinned), wait for its "ready", run argv_of_pid(pid), kill prog; the output."""
    tgt = subprocess.Popen(bl.pinned(prog), stdout=subprocess.PIPE, text=True)
    try:
        tgt.stdout.readline()
        time.sleep(0.02)  # in its loop
        return subprocess.run(argv_of_pid(tgt.pid), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    finally:
        tgt.kill()
        tgt.wait()


# ---- 1. primitives ----

CONFIG_LABEL = [
    ("unpatched", "unpatched (work vs ref: alignment, noise)"),
    ("inactive", "inactive point (trampoline + empty handler)"),
    ("counter", "one counter at entry (ADD)"),
    ("thread_counter", "one thread counter at entry (TADD)"),
    ("entry_exit_counters", "counters at entry and exit (return hook)"),
    ("wall_timer", "wall timer start/stop"),
    ("cpu_timer", "CPU timer start/stop"),
    ("profile", "PROFILE entry/exit (sonde run --dynamic)"),
]


def part_primitives(summary):
    lines = driver("prims", RT, work, CPU_ARG, ROUNDS, CALLS, 3, TARGET)
    per, checks, tramp = {}, [], {}
    profile_calls = 0
    for kind, f in lines:
        if kind == "prim":
            per.setdefault(f["mode"], {}).setdefault(f["round"], {})[f["config"]] = \
                (f["work_ns"] - f["ref_ns"]) / f["calls"]
        elif kind == "trampoline":
            tramp[f["mode"]] = f
        elif kind == "check":
            checks.append("%s: %s" % (f["mode"], f["_raw"].replace("mode=%s " % f["mode"], "")))
        elif kind == "profile_calls":
            profile_calls += f["calls"]
    prim = {}
    for mode, rounds in per.items():
        res = prim.setdefault(mode, {})
        for cf in rounds.values():
            for name, d in cf.items():
                res.setdefault(name, []).append(d if name == "unpatched" else
                                                d - cf["unpatched"])
    if profile_calls:  # the profile the preloaded runtime wrote at exit saw every call
        rep = json.loads(subprocess.run([SONDE, "report", "--json",
                                         os.path.join(work, "out-preload")], check=True,
                                        stdout=subprocess.PIPE, text=True).stdout)
        seen = sum(fn.get("calls", 0) for fn in rep["functions"] if fn.get("name") == "work")
        checks.append("preload: the profile counted work() %d times (PROFILE rounds: %d calls)"
                      % (seen, profile_calls))
    t = tramp.get("attach", {})
    print()
    print("1. cost per call of a patched function, ns added (median over %d rounds, min..max; "
          "%d calls per timing, fastest of 3; CPU timer: a tenth as many)" % (ROUNDS, CALLS))
    print("   trampoline: %s, %d bytes, %d bytes displaced" % (
        "pushfq/popfq present (saves the flags)" if t.get("saves_flags") == 1 else
        "no pushfq/popfq (flags dead at entry)", t.get("len", 0), t.get("displaced", 0)))
    print("%-46s %24s %24s" % ("configuration", "preloaded (run --dynamic)", "attached"))
    for name, label in CONFIG_LABEL:
        cells = [fmt3(prim[m][name]) if name in prim.get(m, {}) else "n/a"
                 for m in ("preload", "attach")]
        print("%-46s %24s %24s" % (label, cells[0], cells[1]))
    for c in checks:
        print("   check %s" % c)
    summary["counter_ns"] = "%.1f" % bl.median(prim["attach"]["counter"])
    summary["prim"] = {mode: {k: bl.median(v) for k, v in cf.items()} for mode, cf in prim.items()}
    if os.access(DYN_BENCH, os.X_OK):
        p = subprocess.run(bl.pinned([DYN_BENCH, str(CALLS)]), stdout=subprocess.PIPE, text=True)
        print("   tests/unit/dyn_bench %d (hand-written trampoline around the same runtime code, "
              "best of 7; \"no flags\": without pushfq/popfq):" % CALLS)
        for line in p.stdout.splitlines():
            print("     " + line)
    else:
        print("   tests/unit/dyn_bench: not built (make BUILD=... %s)" % DYN_BENCH)


# ---- 2. insertion ----

def part_insertion(summary):
    ins = {}
    for kind, f in driver("insert", RT, ctl, CPU_ARG, INSERTS, MANY, "f0500"):
        if kind in ("insert", "remove"):
            ins.setdefault((kind, f["tag"]), []).append(f)
    print()
    print("2. insertion into a running process (bench/dyn_many: 1000 functions + main, busy), "
          "ms, median (min..max) of %d" % INSERTS)
    print("%-12s %9s %22s %22s %7s %8s %7s %7s" % ("", "functions", "stop..go (total)",
                                                  "pause (target)", "stop", "collect", "plan",
                                                  "write"))
    for key in (("insert", "one"), ("insert", "all"), ("remove", "one"), ("remove", "all")):
        fs = ins[key]
        print("%-12s %9d %22s %22s %7.3f %8.3f %7.3f %7.3f" % (
            "%s %s" % key, fs[0]["installed"] if key[0] == "insert" else fs[0]["planned"],
            fmt3([f["total_ms"] for f in fs], "%.3f"), fmt3([f["pause_ms"] for f in fs], "%.3f"),
            bl.median([f["stop_ms"] for f in fs]), bl.median([f["collect_ms"] for f in fs]),
            bl.median([f["plan_ms"] for f in fs]), bl.median([f["write_ms"] for f in fs])))
    print("   (stop..go: every thread stopped, symbols read, functions decoded and planned, "
          "trampolines mapped and written, let go: all of it with the target stopped)")
    print("   trampolines with pushfq/popfq: %d of %d" % (
        ins[("insert", "all")][0]["pushfq"], ins[("insert", "all")][0]["installed"]))
    cyc = [f for kind, f in driver("cycles", RT, ctl, CPU_ARG, 50, MANY) if kind == "cycles"][0]
    why = re.search(r'failed="(.*)"', cyc["_raw"])
    print("   one process, every function patched then unpatched again and again: %d cycles%s" % (
        cyc["done"], ", then: " + why.group(1) if why else " (no failure)"))
    if bl.has_command(SONDE, "watch"):
        wt = []
        for _ in range(WATCHES):
            p = run_near(lambda pid: [SONDE, "watch", str(pid), "--metric", "calls", "--for",
                                      "300ms", "--ascii"], [MANY])
            a = re.search(r"attach: pause ([0-9.]+) ms.*?([0-9.]+) ms in all", p.stdout)
            d = re.search(r"detach: pause ([0-9.]+) ms.*?([0-9.]+) ms in all", p.stdout)
            n = re.search(r"(\d+) entr(?:y|ies)(?: and \d+ call sites?)? patched", p.stdout)
            if p.returncode != 0 or not a or not d:
                print("   sonde watch: no timings (exit %d): %s" % (p.returncode,
                                                                p.stdout.strip()[-300:]))
                break
            wt.append((float(a.group(1)), float(a.group(2)), float(d.group(1)),
                       float(d.group(2)), int(n.group(1)) if n else 0))
        if len(wt) == WATCHES:
            print("   `sonde watch PID --metric calls --for 300ms`, fresh bench/dyn_many, %d runs "
                  "(%d entries patched), ms: attach+patch pause %s, total %s; unpatch+detach pause "
                  "%s, total %s" % (WATCHES, wt[0][4], fmt3([w[0] for w in wt]),
                                    fmt3([w[1] for w in wt], "%.1f"), fmt3([w[2] for w in wt]),
                                    fmt3([w[3] for w in wt])))
    else:
        print("   sonde watch: not in this build")
    summary["insert_one"] = "%.3f" % bl.median([f["total_ms"] for f in ins[("insert", "one")]])
    summary["insert_all"] = "%.2f" % bl.median([f["total_ms"] for f in ins[("insert", "all")]])


# ---- 3. attach ----

def part_attach(summary):
    att = []
    for _ in range(ATTACHES):
        p = run_near(lambda pid: [SONDE, "attach", "--load-only", "-o", os.path.join(work, "att"),
                                  str(pid)],
                     [TARGET, "spin"])
        m = re.search(r"pause ([0-9.]+) ms.*load ([0-9.]+) ms.*total ([0-9.]+) ms", p.stdout)
        if p.returncode != 0 or not m:
            raise SystemExit("bench: sonde attach failed: %s" % p.stdout)
        att.append(tuple(float(x) for x in m.groups()))
    print()
    print("3. attach: `sonde attach PID` to a busy single-threaded bench/dyn_target spin, "
          "%d fresh processes, ms, median (min..max)" % ATTACHES)
    print("   pause %s   load %s   total %s" % (fmt3([a[0] for a in att], "%.3f"),
                                                 fmt3([a[1] for a in att]),
                                                 fmt3([a[2] for a in att])))
    print("   (pause: every thread stopped; load: dlopen of libsonde.so and sonde__attach on the "
          "target's thread, the others running)")
    summary["attach_pause"] = "%.3f" % bl.median([a[0] for a in att])


# ---- 4. callheavy: dynamic against compiled-in ----

def part_callheavy(summary):
    base = os.path.join(B, "callheavy.base")
    inst = os.path.join(B, "callheavy.inst")
    ddir = os.path.join(work, "dyn")
    cdir = os.path.join(work, "cyg")

    def rm(path):
        return lambda: shutil.rmtree(path, ignore_errors=True)

    comp = {"dynamic": [], "compiled": []}

    def keep(name, d):
        """After each run: its profile's totals and calibration."""
        def read(out):
            rep = json.loads(subprocess.run([SONDE, "report", "--json", d], check=True,
                                            stdout=subprocess.PIPE, text=True).stdout)
            p = rep["processes"][0]
            comp[name].append({"T_m": p["T_m_ns"], "T_a": p["T_a_ns"], "probes": p["probes"],
                               "o_full": p["calibration"]["o_full_ns"],
                               "path": p["calibration"].get("path", "?")})
            return out
        return read

    cpu, mark = {"uninstrumented": [], "dynamic": [], "compiled": []}, {}

    def child_cpu():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r.ru_utime + r.ru_stime) * 1e9

    def cpu_before(name, then=None):
        """The CPU time of the run (user + system, sonde's and the program's): what the program
        cost, without the time the shared CPUs gave to other processes meanwhile."""
        def f():
            if then:
                then()
            mark[name] = child_cpu()
        return f

    def cpu_after(name, then=None):
        def f(out):
            cpu[name].append(child_cpu() - mark[name])
            return then(out) if then else out
        return f

    variants = [
        bl.Variant("uninstrumented", [base, N], before=cpu_before("uninstrumented"),
                   after=cpu_after("uninstrumented")),
        bl.Variant("dynamic", [SONDE, "run", "--dynamic", "--throttle", "off", "-o", ddir, "--",
                               base, N], before=cpu_before("dynamic", rm(ddir)),
                   after=cpu_after("dynamic", keep("dynamic", ddir))),
        bl.Variant("compiled", [SONDE, "run", "--throttle", "off", "-o", cdir, "--", inst, N],
                   before=cpu_before("compiled", rm(cdir)),
                   after=cpu_after("compiled", keep("compiled", cdir))),
    ]
    res = bl.rounds(variants)
    ref = bl.same_results(res)
    calls = ref["calls"]
    probes = {}
    for name, d in (("dynamic", ddir), ("compiled", cdir)):
        rep = json.loads(subprocess.run([SONDE, "report", "--json", d], check=True,
                                        stdout=subprocess.PIPE, text=True).stdout)
        probes[name] = rep["processes"][0]["probes"]
    patched = "?"
    try:
        with open(os.path.join(ddir, "dynamic.txt")) as fh:
            patched = fh.readline().strip().lstrip("# ")
    except OSError:
        pass

    def per_call(name, key):
        d, t = [], []
        for r in range(len(res["uninstrumented"])):
            wb, ob = res["uninstrumented"][r]
            wv, ov = res[name][r]
            vb = bl.fields(ob)["loop_ns"] if key == "loop" else wb
            vv = bl.fields(ov)["loop_ns"] if key == "loop" else wv
            d.append((vv - vb) / calls)
            t.append(vv)
        return d, bl.median(t)

    print()
    print("4. bench/callheavy.c N=%s (%d calls), every function instrumented, side by side, "
          "%d rounds" % (N, calls, len(res["uninstrumented"])))
    print("   %s; probe pairs in the last profiles: dynamic %d, compiled %d" % (
        patched, probes["dynamic"], probes["compiled"]))
    print("%-16s %10s %13s %24s %16s" % ("variant", "loop (ms)", "process (ms)",
                                         "ns/call (min..max)", "ns/call process"))
    fig = {}
    for v in variants:
        d, t = per_call(v.name, "loop")
        dp, tp = per_call(v.name, "wall")
        fig[v.name] = bl.median(d)
        print("%-16s %10.1f %13.1f %24s %16.2f" % (v.name, t / 1e6, tp / 1e6, fmt3(d),
                                                 bl.median(dp)))
    held = sum(1 for w, _ in res["dynamic"] if w > 100e9)
    if held:  # the runtime's hold before main timed out (a lost RESUME: fixed in e55e432)
        print("   %d dynamic run(s) waited out the 120 s hold before main" % held)
    ratio = fig["dynamic"] / fig["compiled"] if fig["compiled"] > 0 else float("nan")
    print("   dynamic/compiled ratio: %.2f (dynamic %.1f ns/call, compiled %.1f)" % (
        ratio, fig["dynamic"], fig["compiled"]))
    summary["ratio"] = "%.2f" % ratio
    print_compensated(res, comp)
    print_cpu(cpu, comp)


def print_cpu(cpu, comp):
    """The same in CPU time, which a loaded machine does not inflate: the probes' cost per pair
    in situ against the o_full each profile removed, and the compensated CPU time."""
    n = min(len(cpu["uninstrumented"]), len(comp["dynamic"]), len(comp["compiled"]),
            len(cpu["dynamic"]), len(cpu["compiled"]))
    if not n:
        return
    u = cpu["uninstrumented"]
    print("   in CPU time (user + system of each run; sonde's own included), %d rounds; "
          "uninstrumented median %.1f ms:" % (n, bl.median(u[:n]) / 1e6))
    print("%-34s %12s %22s %26s" % ("", "CPU (ms)", "in situ (ns/pair)",
                                    "compensated CPU - T_cpu"))
    rows = (("run --dynamic (trampolines' costs)", "dynamic", "dynamic"),
            ("run, compiled-in (hooks' costs)", "compiled", "compiled"),
            ("run --dynamic with the hooks' costs", "dynamic", "compiled"))
    for label, run_of, cal_of in rows:
        c = cpu[run_of][:n]
        situ = [(c[r] - u[r]) / comp[run_of][r]["probes"] for r in range(n)]
        err = [100.0 * (c[r] - comp[run_of][r]["probes"] * comp[cal_of][r]["o_full"] - u[r]) /
               u[r] for r in range(n)]
        print("%-34s %12.1f %22s %26s" % (label, bl.median(c) / 1e6, fmt3(situ, "%.1f"),
                                          fmt3(err, "%+.1f") + " %"))


def print_compensated(res, comp):
    """T_a of each round's dynamic and compiled runs against that round's uninstrumented
    process; the dynamic runs' T_a also with the hooks' o_full (the compiled run's)."""
    t = [w for w, _ in res["uninstrumented"]]
    n = min(len(t), len(comp["dynamic"]), len(comp["compiled"]))
    if not n:
        return

    def pct(x, r):
        return 100.0 * (x - t[r]) / t[r]

    print("   compensated totals, %d rounds, median (min..max); T = the uninstrumented process, "
          "median %.1f ms:" % (n, bl.median(t[:n]) / 1e6))
    print("%-34s %12s %12s %26s %14s %14s" % ("", "T_m (ms)", "T_a (ms)", "T_a - T (% of T)",
                                             "o_full (ns)", "in situ (ns)"))
    for name, label in (("dynamic", "run --dynamic (trampolines' costs)"),
                        ("compiled", "run, compiled-in (hooks' costs)")):
        c = comp[name][:n]
        err = [pct(c[r]["T_a"], r) for r in range(n)]
        situ = [(c[r]["T_m"] - t[r]) / c[r]["probes"] for r in range(n)]
        print("%-34s %12.1f %12.1f %26s %14.1f %14.1f" % (
            label, bl.median([x["T_m"] for x in c]) / 1e6, bl.median([x["T_a"] for x in c]) / 1e6,
            fmt3(err, "%+.1f"), bl.median([x["o_full"] for x in c]), bl.median(situ)))
    old = [pct(comp["dynamic"][r]["T_m"] - comp["dynamic"][r]["probes"] *
               comp["compiled"][r]["o_full"], r) for r in range(n)]
    print("%-34s %12s %12.1f %26s %14.1f" % (
        "run --dynamic with the hooks' costs", "", bl.median([
            comp["dynamic"][r]["T_m"] - comp["dynamic"][r]["probes"] *
            comp["compiled"][r]["o_full"] for r in range(n)]) / 1e6, fmt3(old, "%+.1f"),
        bl.median([x["o_full"] for x in comp["compiled"][:n]])))
    print("   calibration paths recorded: dynamic %s, compiled %s" % (
        comp["dynamic"][-1]["path"], comp["compiled"][-1]["path"]))


# ---- 7. in-process calibration ----

COST_ROWS = [
    ("call", "call of an empty function (baseline, not added)"),
    ("entry", "entry trampoline, point inactive"),
    ("exit", "exit: return hook (shadow stack, return trampoline)"),
    ("pred", "predicate test"),
    ("set", "setCounter (shared counter)"),
    ("add", "addCounter (shared counter)"),
    ("sub", "subCounter (shared counter)"),
    ("tset", "setCounter (thread counter)"),
    ("tadd", "addCounter (thread counter)"),
    ("tsub", "subCounter (thread counter)"),
    ("start_wall", "startWallTimer (half the pair)"),
    ("stop_wall", "stopWallTimer (half the pair)"),
    ("start_cpu", "startProcessTimer (half the pair)"),
    ("stop_cpu", "stopProcessTimer (half the pair)"),
]


def part_calibration(summary):
    got, took = {}, []
    for _ in range(WATCHES):
        p = run_near(lambda pid: [SONDE, "watch", str(pid), "-v", "--metric", "calls",
                                  "--for", "200ms"], [TARGET, "spin"])
        if p.returncode != 0:
            raise SystemExit("bench: sonde watch -v failed: %s" % p.stdout)
        m = re.search(r"costs measured in the process \(([0-9.]+) ms", p.stdout)
        took.append(float(m[1]) if m else float("nan"))
        for key, label in COST_ROWS:
            m = re.search(re.escape(label) + r"\s+(-?[0-9.]+) ± ([0-9.]+)", p.stdout)
            if m:
                got.setdefault(key, []).append(float(m[1]))
    print()
    print("7. in-process calibration (runtime/calib_dyn.c): `sonde watch -v` on %d fresh busy "
          "bench/dyn_target spin, ns per execution, median (min..max); measuring took %s ms"
          % (WATCHES, fmt3(took)))
    for key, label in COST_ROWS:
        if key in got:
            print("   %-54s %22s" % (label, fmt3(got[key], "%.1f")))
    med = {k: bl.median(v) for k, v in got.items()}
    if not all(k in med for k, _ in COST_ROWS):
        return
    # part 1's configurations as sums of the calibrated figures (its "counter" is ADD, "counters
    # at entry and exit" an ADD at each, the timers a start at entry and a stop at exit)
    combos = [
        ("inactive", med["entry"]),
        ("counter", med["entry"] + med["add"]),
        ("thread_counter", med["entry"] + med["tadd"]),
        ("entry_exit_counters", med["entry"] + med["exit"] + 2 * med["add"]),
        ("wall_timer", med["entry"] + med["exit"] + med["start_wall"] + med["stop_wall"]),
        ("cpu_timer", med["entry"] + med["exit"] + med["start_cpu"] + med["stop_cpu"]),
    ]
    part1 = summary.get("prim", {}).get("attach", {})
    print("   %-46s %16s %20s" % ("part 1's configuration", "from calibration",
                                  "part 1 (attached)"))
    labels = dict(CONFIG_LABEL)
    for key, v in combos:
        print("   %-46s %16.1f %20s" % (labels[key], v,
                                         "%.1f" % part1[key] if key in part1 else "n/a"))
    summary["calib_entry"] = "%.1f" % med["entry"]
    summary["calib_exit"] = "%.1f" % med["exit"]


# ---- 5. after detach ----

def part_detach(summary):
    rounds = max(3 * ROUNDS, 15)  # cheap (0.1 s each), and the figure is a small difference
    ph, info = {}, []
    for kind, f in driver("detach", RT, ctl, CPU_ARG, rounds, 500000, TARGET):
        if kind == "heavy":
            ph.setdefault(f["phase"], {}).setdefault(f["round"], {})[f["proc"]] = f
        elif kind in ("check", "insert", "remove", "detached", "points", "attach"):
            info.append("%s %s" % (kind, f["_raw"]))

    def heavy_ns(phase, who):
        xs = []
        for pr in ph[phase].values():
            s, c = pr["subject"], pr["control"]
            if who == "diff":
                xs.append((s["loop_ns"] - c["loop_ns"]) / s["calls"])
            else:
                xs.append(pr[who]["loop_ns"] / pr[who]["calls"])
        return xs

    print()
    print("5. after detach: callheavy's loop (6.5 M calls) in a process attached, every function "
          "patched with one counter, then unpatched and detached; control: a twin never "
          "attached; %d rounds per phase" % rounds)
    print("%-14s %22s %22s %28s" % ("phase", "subject ns/call", "control ns/call",
                                    "subject-control ns/call"))
    for phase in ("before", "instrumented", "after"):
        print("%-14s %22s %22s %28s" % (phase, fmt3(heavy_ns(phase, "subject")),
                                        fmt3(heavy_ns(phase, "control")),
                                        fmt3(heavy_ns(phase, "diff"), "%+.3f")))
    before = bl.median(heavy_ns("before", "diff"))
    after = bl.median(heavy_ns("after", "diff")) - before
    inst = bl.median(heavy_ns("instrumented", "diff")) - before
    print("   added per call: instrumented (one counter at every function, attached) %+.2f ns; "
          "after detach %+.3f ns" % (inst, after))
    for i in info:
        print("   " + i)
    summary["after"] = "%.2f" % after


# ---- 6. call-site points ----

CALLSITE_LABEL = [
    ("unpatched", "unpatched (loop vs twin loop: alignment, noise)"),
    ("inactive", "inactive call-site point"),
    ("counter", "one counter (ADD)"),
    ("thread_counter", "one thread counter (TADD)"),
]


def part_callsite(summary):
    per, checks, tramp = {}, [], {}
    for kind, f in driver("callsite", RT, ctl, CPU_ARG, ROUNDS, CALLS, 3, TARGET):
        if kind == "callsite":
            per.setdefault(f["round"], {})[f["config"]] = (f["work_ns"] - f["ref_ns"]) / f["calls"]
        elif kind == "callsite_tramp":
            tramp = f
        elif kind == "check":
            checks.append(f["_raw"])
    res = {}
    for cf in per.values():
        for name, d in cf.items():
            res.setdefault(name, []).append(d if name == "unpatched" else d - cf["unpatched"])
    print()
    print("6. cost per call of a call-site point, ns added (median over %d rounds, min..max; "
          "%d calls per timing, fastest of 3)" % (ROUNDS, CALLS))
    print("   trampoline: %d bytes, %d bytes displaced (the call itself); the relocated call "
          "pushes the original return address and jumps" % (tramp.get("len", 0),
                                                             tramp.get("displaced", 0)))
    for name, label in CALLSITE_LABEL:
        print("%-50s %24s" % (label, fmt3(res[name]) if name in res else "n/a"))
    for c in checks:
        print("   check %s" % c)
    summary["callsite_ns"] = "%.1f" % bl.median(res["counter"])


print("dynamic: %s" % bl.machine())
print("source: %s" % bl.source_state(["tool/patch", "tool/dyn", "tool/inject", "runtime/dyn",
                                       "runtime/arch"]))
t_start = time.time()
summary = {}
try:
    for part, fn in ((1, part_primitives), (2, part_insertion), (3, part_attach),
                     (4, part_callheavy), (5, part_detach), (6, part_callsite),
                     (7, part_calibration)):
        if part in PARTS:
            fn(summary)
finally:
    shutil.rmtree(work, ignore_errors=True)
print()
print("dynamic: %.0f s in all; sonde run --dynamic / compiled-in on callheavy: %s" % (
    time.time() - t_start, summary.get("ratio", "n/a")))
print("dynamic: insert_one_ms=%s insert_1000_ms=%s attach_pause_ms=%s counter_ns_per_call=%s "
      "after_detach_ns_per_call=%s callsite_counter_ns_per_call=%s calibrated_entry_ns=%s "
      "calibrated_exit_ns=%s" % tuple(
          summary.get(k, "n/a") for k in ("insert_one", "insert_all", "attach_pause",
                                          "counter_ns", "after", "callsite_ns", "calib_entry",
                                          "calib_exit")))
