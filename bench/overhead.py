# SPDX-License-Identifier: MIT
"""Probe overhead per call: bench/callheavy.c under each tool, side by side.

Called by bench/overhead.sh with the build directory holding the binaries. ns per call =
(T_variant - T_uninstrumented) / calls, T being the program's own timing of its call loop
(start-up and shut-down costs of a tool excluded) and calls the exact count the program prints.
Whole-process wall times are shown too. Medians over rounds of the per-round differences.
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
N = sys.argv[3] if len(sys.argv) > 3 else "4000000"

fast = "/dev/shm" if os.access("/dev/shm", os.W_OK) else B
work = tempfile.mkdtemp(prefix="bench-work-", dir=fast)
sonde_dir = os.path.join(work, "sonde")
gprof_dir = os.path.join(work, "gprof")
uft_dir = os.path.join(work, "uftrace.data")
os.makedirs(gprof_dir)


def rm(path):
    return lambda: shutil.rmtree(path, ignore_errors=True)


def rm_after(path):
    def f(out):
        shutil.rmtree(path, ignore_errors=True)
        return out
    return f


base = os.path.join(B, "callheavy.base")
inst = os.path.join(B, "callheavy.inst")
pg = os.path.join(B, "callheavy.pg")
ideal = os.path.join(B, "ideal_probe.so")

variants = [
    bl.Variant("uninstrumented", [base, N]),
    bl.Variant("null-hooks", [inst, N]),  # glibc's empty __cyg_profile_func_* : the call itself
    bl.Variant("ideal", [inst, N], env={"LD_PRELOAD": ideal}),
    bl.Variant("sonde", [SONDE, "run", "-o", sonde_dir, "--throttle", "off", "--", inst, N],
               before=rm(sonde_dir)),
    bl.Variant("sonde-precise", [SONDE, "run", "-o", sonde_dir, "--throttle", "off", "--precise",
                                 "--", inst, N], before=rm(sonde_dir)),
    bl.Variant("gprof", [pg, N], cwd=gprof_dir),
]
have_uftrace = shutil.which("uftrace") is not None
if have_uftrace:
    variants += [
        bl.Variant("uftrace-pg", ["uftrace", "record", "-d", uft_dir, "--no-libcall", pg, N],
                   before=rm(uft_dir), after=rm_after(uft_dir)),
        bl.Variant("uftrace-cyg", ["uftrace", "record", "-d", uft_dir, "--no-libcall", inst, N],
                   before=rm(uft_dir), after=rm_after(uft_dir)),
    ]

print("overhead: %s" % bl.machine())
print("workload: bench/callheavy.c N=%s (uninstrumented build: gcc -O2)" % N, flush=True)
try:
    res = bl.rounds(variants)
    # sanity: same result everywhere, and sonde saw every call
    ref = bl.same_results(res)
    calls = ref["calls"]
    # the default mode's profile, for its calibration and totals
    subprocess.run([SONDE, "run", "-o", sonde_dir, "--throttle", "off", "--", inst, N], check=True,
                   stdout=subprocess.DEVNULL)
    rep = json.loads(subprocess.run([SONDE, "report", "--json", sonde_dir], check=True,
                                    stdout=subprocess.PIPE, text=True).stdout)
    proc = rep["processes"][0]
    cal = proc.get("calibration", {})
finally:
    shutil.rmtree(work, ignore_errors=True)

n_rounds = len(res["uninstrumented"])


def per_call(name, key):
    """Median over rounds of (variant - uninstrumented) / calls, in ns, and the median T."""
    d, t = [], []
    for r in range(n_rounds):
        wb, ob = res["uninstrumented"][r]
        wv, ov = res[name][r]
        vb = bl.fields(ob)["loop_ns"] if key == "loop" else wb
        vv = bl.fields(ov)["loop_ns"] if key == "loop" else wv
        d.append((vv - vb) / calls)
        t.append(vv)
    return bl.median(d), min(d), max(d), bl.median(t)


print("calls=%d (exact: 13*N+1); sonde's profile counted %d probe pairs" % (calls, proc["probes"]))
print("sonde calibration: clock %.1f ns, o_in %.1f ns, o_full %.1f ns" %
      (cal.get("clock_ns", 0), cal.get("o_in_ns", 0), cal.get("o_full_ns", 0)))
print("%-15s %12s %12s %9s %19s %15s" % ("variant", "loop (ms)", "process (ms)", "ns/call",
                                        "ns/call min..max", "ns/call process"))
fig = {}
for v in variants:
    med, lo, hi, t = per_call(v.name, "loop")
    pmed, _, _, pt = per_call(v.name, "wall")
    fig[v.name] = med
    print("%-15s %12.1f %12.1f %9.2f %9.2f..%-9.2f %15.2f" % (v.name, t / 1e6, pt / 1e6, med, lo,
                                                         hi, pmed))
# the same run seen by sonde's own model: T_a against the uninstrumented process
Tb = bl.median([w for w, _ in res["uninstrumented"]])
print("sonde's compensated total on this workload (last run): T_m %.1f ms, T_a %.1f ms vs "
      "uninstrumented process %.1f ms: error %+.2f %%; in situ %.2f ns per probe pair vs "
      "calibrated o_full %.2f ns" % (proc["T_m_ns"] / 1e6, proc["T_a_ns"] / 1e6, Tb / 1e6,
                                    100 * (proc["T_a_ns"] - Tb) / Tb,
                                    (proc["T_m_ns"] - Tb) / proc["probes"],
                                    cal.get("o_full_ns", 0)))
uft = None
if have_uftrace:
    uname = min(("uftrace-pg", "uftrace-cyg"), key=lambda k: fig[k])
    uft = fig[uname]
    print("uftrace figure below: %s (the cheaper of its two modes)" % uname)
ratio = fig["sonde"] / fig["ideal"] if fig["ideal"] > 0 else float("inf")
print("sonde/ideal ratio: %.2f (target <= 1.3)" % ratio)
print("overhead: sonde_ns_per_call=%.1f ideal_ns_per_call=%.1f gprof_ns_per_call=%.1f "
      "uftrace_ns_per_call=%s" % (fig["sonde"], fig["ideal"], fig["gprof"],
                                  "%.1f" % uft if uft is not None else "n/a"))
