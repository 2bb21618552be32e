# SPDX-License-Identifier: MIT
"""Cost of an event trace per event: bench/callheavy.c under each tool, side by side.

Called by bench/trace_cost.sh with the build directory holding the binaries. Variants, one run
each per round, the order rotating:
  uninstrumented  gcc -O2
  ideal           the -finstrument-functions build with bench/ideal_probe.so preloaded: one
                  rdtsc and one 16-byte store per event, nothing else
  sonde-trace     the same build under `sonde run --trace` (one 8-byte word per event, written
                  to the file by the runtime's writer thread)
  uftrace         the same build under `uftrace record --no-libcall` (if installed)
ns per event = (T_variant - T_uninstrumented) / events, T = the program's own timing of its call
loop, events = enter + exit records (sonde: counted in the trace by bench/strc_count; ideal and
uftrace: 2 x calls, the program's exact call count). Medians over rounds of the per-round
differences. Every run's data goes to /dev/shm (no disk in the figures) and is deleted after it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

B = os.path.abspath(sys.argv[1])
SONDE = os.path.abspath(sys.argv[2])
N = sys.argv[3] if len(sys.argv) > 3 else "2000000"
COUNTER = os.path.join(B, "strc_count")

work = tempfile.mkdtemp(prefix="bench-trace-", dir=bl.fast_dir(B))
tdir = os.path.join(work, "sonde")
udir = os.path.join(work, "uftrace.data")

base = os.path.join(B, "callheavy.base")
inst = os.path.join(B, "callheavy.inst")
ideal = os.path.join(B, "ideal_probe.so")


def rm(path):
    return lambda: shutil.rmtree(path, ignore_errors=True)


def count_trace(out):
    """After a traced run: the trace's record counts appended to the program's output."""
    files = bl.strc_files(tdir)
    if len(files) != 1:
        raise SystemExit("bench: expected one trace file in %s, found %d" % (tdir, len(files)))
    line = subprocess.run([COUNTER, files[0]], check=True, stdout=subprocess.PIPE,
                          text=True).stdout
    shutil.rmtree(tdir, ignore_errors=True)
    return out + line


def du(path):
    total = 0
    for d, _, names in os.walk(path):
        for n in names:
            total += os.path.getsize(os.path.join(d, n))
    return total


def uftrace_size(out):
    size = du(udir)
    shutil.rmtree(udir, ignore_errors=True)
    return out + " uftrace_bytes=%d\n" % size


variants = [
    bl.Variant("uninstrumented", [base, N]),
    bl.Variant("ideal", [inst, N], env={"LD_PRELOAD": ideal}),
    bl.Variant("sonde-trace", [SONDE, "run", "--trace", "-o", tdir, "--", inst, N],
               before=rm(tdir), after=count_trace),
]
have_uftrace = shutil.which("uftrace") is not None
if have_uftrace:
    variants.append(bl.Variant("uftrace", ["uftrace", "record", "-d", udir, "--no-libcall", inst,
                                           N], before=rm(udir), after=uftrace_size))


def uftrace_check(n=20000):
    """uftrace's event count at a small N: calls in `uftrace report` against 13*N+1."""
    subprocess.run(["uftrace", "record", "-d", udir, "--no-libcall", inst, str(n)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = subprocess.run(["uftrace", "report", "-d", udir, "-s", "call"], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    shutil.rmtree(udir, ignore_errors=True)
    calls = 0
    for line in rep.splitlines():
        w = line.split()
        # "  269.274 ms    9.872 ms           1  main": calls before the name; kernel entries out
        if len(w) >= 6 and w[-2].isdigit() and not w[-1].startswith("linux:"):
            calls += int(w[-2])
    return n, calls


RATE_PATTERNS = [
    r"([0-9][0-9.,]*(?:[eE][+-]?[0-9]+)?)\s*([kMG]?)\s*events/s",
    r"events/s\s*[=:]?\s*([0-9][0-9.,]*(?:[eE][+-]?[0-9]+)?)\s*([kMG]?)",
    r"events_per_s\s*[=:]\s*([0-9][0-9.,]*(?:[eE][+-]?[0-9]+)?)\s*([kMG]?)",
]
SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def parse_rate(text):
    """events/s as `sonde analyze -v` prints it, or None."""
    for pat in RATE_PATTERNS:
        m = re.search(pat, text)
        if m:
            return float(m.group(1).replace(",", "")) * SCALE[m.group(2)]
    return None


def analysis_rate(events, t_ns, reps=3):
    """`sonde analyze -v --uninstrumented T` on one kept trace, reps times: its own events/s,
    events per second of the whole command's wall time (reading the file included), and its
    T_m and T_a (parsed from the last run)."""
    subprocess.run(bl.pinned([SONDE, "run", "--trace", "-o", tdir, "--", inst, N]), check=True,
                   stdout=subprocess.DEVNULL)
    rates, walls, text = [], [], ""
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        p = subprocess.run(bl.pinned([SONDE, "analyze", "-v", "--model", "sequential",
                                      "--uninstrumented", "%dns" % t_ns, tdir]),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        walls.append(time.perf_counter_ns() - t0)
        text = p.stdout
        if p.returncode != 0:
            sys.stderr.write(text)
            return None, None, "sonde analyze failed (exit %d)" % p.returncode, None
        r = parse_rate(text)
        if r is not None:
            rates.append(r)
    shutil.rmtree(tdir, ignore_errors=True)
    return ((bl.median(rates) if rates else None), events / (bl.median(walls) / 1e9), text,
            bl.parse_analyze(text))


print("trace-cost: %s" % bl.machine())
print("workload: bench/callheavy.c N=%s (uninstrumented build: gcc -O2); data in %s" % (N, work),
      flush=True)
try:
    res = bl.rounds(variants)
    ref = bl.same_results(res)
    calls = ref["calls"]
    tr = [bl.fields(out) for _, out in res["sonde-trace"]]
    events = tr[0]["events"]
    if any(f["events"] != events for f in tr):
        raise SystemExit("bench: the traces hold different event counts: %r"
                         % [f["events"] for f in tr])
    uft_check = uftrace_check() if have_uftrace else None
    have_analyze = bl.has_command(SONDE, "analyze")
    a_rate = a_wall_rate = a_text = a_tot = None
    t_base = bl.median([bl.fields(out)["loop_ns"] for _, out in res["uninstrumented"]])
    if have_analyze:
        a_rate, a_wall_rate, a_text, a_tot = analysis_rate(events, t_base)
finally:
    shutil.rmtree(work, ignore_errors=True)

n_rounds = len(res["uninstrumented"])
ev_of = {"uninstrumented": 2 * calls, "ideal": 2 * calls, "sonde-trace": events,
         "uftrace": 2 * calls}


def per_event(name, key):
    """Median over rounds of (variant - uninstrumented) / events in ns, min, max, median T."""
    d, t = [], []
    for r in range(n_rounds):
        wb, ob = res["uninstrumented"][r]
        wv, ov = res[name][r]
        vb = bl.fields(ob)["loop_ns"] if key == "loop" else wb
        vv = bl.fields(ov)["loop_ns"] if key == "loop" else wv
        d.append((vv - vb) / ev_of[name])
        t.append(vv)
    return bl.median(d), min(d), max(d), bl.median(t)


print("calls=%d (exact: 13*N+1), events=%d enter+exit in each sonde trace (2 x calls%s)"
      % (calls, events, "" if events == 2 * calls else ": MISMATCH"))
if uft_check:
    print("uftrace events taken as 2 x calls; checked at N=%d: `uftrace report` counted %d calls "
          "(13*N+1 = %d)" % (uft_check[0], uft_check[1], 13 * uft_check[0] + 1))
print("%-15s %12s %12s %9s %19s %15s" % ("variant", "loop (ms)", "process (ms)", "ns/event",
                                        "ns/event min..max", "ns/event process"))
fig = {}
for v in variants:
    med, lo, hi, t = per_event(v.name, "loop")
    pmed, _, _, pt = per_event(v.name, "wall")
    fig[v.name] = med
    print("%-15s %12.1f %12.1f %9.2f %9.2f..%-9.2f %15.2f" % (v.name, t / 1e6, pt / 1e6, med, lo,
                                                         hi, pmed))

# where the trace's bytes and time go
tb = bl.median([f["bytes"] for f in tr])
f0 = tr[0]
tpn = f0.get("ticks_per_ns") or 1.0
try:
    tpn = float(tpn)
except ValueError:
    tpn = 1.0
flush_ns_ev = bl.median([f["flush_ticks"] / tpn / f["events"] for f in tr])
flush_each_us = bl.median([f["flush_ticks"] / tpn / max(1, f["flush"]) / 1e3 for f in tr])
bpe = tb / events
print("sonde trace file: %d bytes for %d events: %.3f bytes per event (%d chunks; %d bytes of "
      "chunk headers and unused tails, %d words of other records)"
      % (tb, events, bpe, f0["chunks"], f0["chunk_bytes"], f0["other_words"]))
print("sonde buffer swaps (FLUSH records): %d per run, %.1f us each, %.2f ns per event "
      "(median over rounds; part of ns/event above)" % (f0["flush"], flush_each_us, flush_ns_ev))
cal_full = bl.median([float(f["calib_o_full_ns"]) for f in tr])
cal_clock = bl.median([float(f["calib_clock_ns"]) for f in tr])
print("sonde's calibration in the traces (median): clock read %.1f ns, o_full %.1f ns: the "
      "analysis removes o_full/2 = %.1f ns per event; in situ (above) %.1f ns"
      % (cal_clock, cal_full, cal_full / 2, fig["sonde-trace"]))
if have_uftrace:
    ub = bl.median([bl.fields(out)["uftrace_bytes"] for _, out in res["uftrace"]])
    print("uftrace data: %d bytes, %.2f bytes per event" % (ub, ub / (2 * calls)))
wall_tr = bl.median([w for w, _ in res["sonde-trace"]])
loop_tr = bl.median([bl.fields(out)["loop_ns"] for _, out in res["sonde-trace"]])
print("write bandwidth: %.1f MB/s (trace bytes / traced run's process wall time %.1f ms); "
      "%.1f MB/s over its call loop alone" % (tb / (wall_tr / 1e9) / 1e6, wall_tr / 1e6,
                                              tb / (loop_tr / 1e9) / 1e6))
if not have_analyze:
    print("analysis throughput: n/a (`%s analyze` does not exist in this build yet)"
          % os.path.relpath(SONDE))
elif a_wall_rate is None:
    print("analysis throughput: n/a (%s)" % a_text)
else:
    if a_tot:
        print("analysis of callheavy's trace (sequential model): T_m %.1f ms, T_a %.1f ms against "
              "the uninstrumented loop's %.1f ms: Ta/T %.3f" % (a_tot["Tm"] / 1e6,
                                                              a_tot["Ta"] / 1e6, t_base / 1e6,
                                                              a_tot["Ta"] / t_base))
    print("analysis throughput: %s events/s as `sonde analyze -v` reports it (median of 3); "
          "%.1f M events/s over the whole command's wall time (reading the file included)"
          % ("%.1f M" % (a_rate / 1e6) if a_rate else "n/a (not found in its output)",
             a_wall_rate / 1e6))
s, i = fig["sonde-trace"], fig["ideal"]
print("sonde/ideal ratio: %.2f (target <= 1.3)" % (s / i if i > 0 else float("inf")))
u = fig.get("uftrace")
if u is not None:
    print("sonde/uftrace ratio: %.2f (target <= 0.25)" % (s / u if u > 0 else float("inf")))
else:
    print("sonde/uftrace ratio: n/a (uftrace not installed)")
print("trace-cost: ns_per_event=%.1f ideal_ns_per_event=%.1f uftrace_ns_per_event=%s "
      "bytes_per_event=%.1f" % (s, i, "%.1f" % u if u is not None else "n/a", bpe))
