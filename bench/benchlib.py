# SPDX-License-Identifier: MIT
"""Shared helpers of the benchmark drivers (bench/overhead.py, bench/accuracy.py).

Runs variants of a program side by side: every round runs each variant once, and the order
rotates from round to round, so slow phases of a noisy machine fall on every variant alike.
Figures are medians over rounds. Environment:
  BENCH_RUNS   rounds (default 7, at least 5 is sensible)
  BENCH_CPU    CPU to pin every run to with taskset (default: the last one; "none": no pinning)
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import time


def runs():
    return max(1, int(os.environ.get("BENCH_RUNS", "7")))


def cpu():
    v = os.environ.get("BENCH_CPU")
    if v == "none":
        return None
    if v:
        return v
    return str(os.cpu_count() - 1) if shutil.which("taskset") else None


def pinned(argv):
    c = cpu()
    return (["taskset", "-c", c] + argv) if c is not None else argv


class Variant:
    """One way of running the program. `before`/`after` prepare and clean up around a run."""

    def __init__(self, name, argv, env=None, cwd=None, before=None, after=None):
        self.name, self.argv, self.env, self.cwd = name, argv, env, cwd
        self.before, self.after = before, after


def run_once(v, retry=True):
    """Run variant v once: (wall ns of the whole process, its stdout). A failed run is said on
    stderr and tried once more (a shared machine's clean-ups can pull a data directory away)."""
    env = dict(os.environ)
    env.update(v.env or {})
    if v.before:
        v.before()
    t0 = time.perf_counter_ns()
    p = subprocess.run(pinned(v.argv), env=env, cwd=v.cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter_ns() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        if retry:
            sys.stderr.write("bench: %s failed (exit %d), trying once more\n" % (v.name, p.returncode))
            return run_once(v, False)
        raise SystemExit("bench: %s failed (exit %d): %s" % (v.name, p.returncode, " ".join(v.argv)))
    out = p.stdout
    if v.after:
        out = v.after(out)
    return wall, out


def rounds(variants, n=None, progress=True):
    """Run every variant n times, rotating the order each round.
    Returns {name: [(wall_ns, stdout), ...]} in round order."""
    n = n or runs()
    res = {v.name: [] for v in variants}
    for r in range(n):
        k = r % len(variants)
        order = variants[k:] + variants[:k]
        for v in order:
            res[v.name].append(run_once(v))
        if progress:
            sys.stderr.write("  round %d/%d done\n" % (r + 1, n))
            sys.stderr.flush()
    return res


def fields(text):
    """key=value pairs of a program's output, values as int when they are."""
    d = {}
    for tok in text.split():
        if "=" in tok:
            k, _, v = tok.partition("=")
            try:
                d[k] = int(v)
            except ValueError:
                d[k] = v
    return d


def same_results(res):
    """Every run of every variant printed the uninstrumented run's checksum and call count:
    instrumentation changed nothing the program computed. Returns the reference fields."""
    ref = fields(res["uninstrumented"][0][1])
    for name, rs in res.items():
        for _, out in rs:
            f = fields(out)
            if f.get("checksum") != ref["checksum"] or f.get("calls") != ref["calls"]:
                raise SystemExit("bench: %s computed something else: %r" % (name, out))
    return ref


def median(xs):
    return statistics.median(xs)


def machine():
    """One line about where the figures come from."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d CPUs, pinned to CPU %s, %d rounds" % (model, os.cpu_count(), cpu(), runs())


# ---- traces (bench/trace_cost.py, bench/trace_accuracy.py) ----

def fast_dir(fallback):
    """Where runs write their data: /dev/shm when writable (no disk in the figures), else
    fallback."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else fallback


def strc_files(rundir):
    """The trace files (trace.PID.strc) of a run directory, sorted."""
    try:
        names = sorted(os.listdir(rundir))
    except OSError:
        return []
    return [os.path.join(rundir, n) for n in names
            if n.startswith("trace.") and n.endswith(".strc")]


def strc_count(counter, path):
    """Record counts of a trace file from bench/strc_count (independent of the tool's reader)."""
    out = subprocess.run([counter, path], check=True, stdout=subprocess.PIPE, text=True).stdout
    return fields(out)


def has_command(sonde, cmd):
    """Whether `sonde CMD --help` is known to this build of the tool."""
    p = subprocess.run([sonde, cmd, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode == 0 and "unknown command" not in p.stderr


_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def parse_analyze(text):
    """From `sonde analyze` output: T_m and the sequential model's T_a in ns, and its RAE (%),
    or None when they are not there."""
    tm = re.search(r"T_m\s+(-?[0-9.]+)\s*(ns|us|ms|s)\b", text)
    ta = re.search(r"sequential\s+T_a\s+(-?[0-9.]+)\s*(ns|us|ms|s)\b", text)
    rae = re.search(r"RAE sequential\s+([+-]?[0-9.]+)\s*%", text)
    if not tm or not ta:
        return None
    return {"Tm": float(tm.group(1)) * _UNIT[tm.group(2)],
            "Ta": float(ta.group(1)) * _UNIT[ta.group(2)],
            "rae": float(rae.group(1)) if rae else None}


# ---- which code was measured (bench/dynamic.py) ----

def source_state(paths):
    """One line: HEAD's commit and date, and which of paths have changes not committed (the
    figures are of the working tree as built). BENCH_SOURCE, when set, says it instead (e.g.
    for a tree exported with git archive)."""
    if os.environ.get("BENCH_SOURCE"):
        return os.environ["BENCH_SOURCE"]

    def git(*args):
        p = subprocess.run(["git"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
        return p.stdout.rstrip() if p.returncode == 0 else ""
    head = git("log", "-1", "--format=%h %cI %s")
    if not head:
        return "not a git checkout"
    changed = sorted({line[3:] for line in git("status", "--porcelain", "--", *paths).splitlines()})
    return "HEAD %s; %s" % (head[:100], "uncommitted changes: " + " ".join(changed) if changed
                            else "no uncommitted changes in " + " ".join(paths))
