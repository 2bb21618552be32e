# SPDX-License-Identifier: MIT
"""Shared helpers of the benchmark drivers (bench/overhead.py, bench/accuracy.py).

Runs variants of a program side by side: every round runs each variant once, and the order
rotates from round to round, so slow phases of a noisy machine fall on every variant alike.
Figures are medians over rounds. Environment:
  BENCH_RUNS   rounds (default 7, at least 5 is sensible)
  BENCH_CPU    CPU to pin every run to with taskset (default: the last one; "none": no pinning)
"""
import os
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
