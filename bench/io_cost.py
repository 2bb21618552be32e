# SPDX-License-Identifier: MIT
"""Cost of `sonde run --io` per call and of `sonde run --os` sampling: bench/io_cost.c, side by side.

Called by bench/io_cost.sh. Variants, one run each per round, the order rotating:
  uninstrumented   gcc -O2
  sonde            the `sonde cc` build under `sonde run` (the I/O wrappers are there but pass
                   the calls through: what every run pays)
  sonde --io       the same with --io: each call timed and counted on its file
the same in one process (io_cost paired: write() against syscall(SYS_write) in alternating
blocks, so that the machine's noise falls on both alike), and for --os, the arithmetic loop under `sonde run`, `--os` (100 ms) and `--os --os-interval 1`
(1000 samples a second, so that a sample's cost stands out of the noise).
Figures are the program's own timings of its loops; medians over rounds of per-round
differences against the uninstrumented run (I/O) or against plain `sonde run` (OS).
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

B = os.path.abspath(sys.argv[1])
SONDE = os.path.abspath(sys.argv[2])
N_IO = sys.argv[3]
N_OS = sys.argv[4]
work = tempfile.mkdtemp(prefix="bench-io-", dir=bl.fast_dir(B))
base = os.path.join(B, "io_cost.base")
inst = os.path.join(B, "io_cost.inst")


def srun(name, opts, args):
    d = os.path.join(work, name.replace(" ", "_"))
    return bl.Variant(name, [SONDE, "run", "-o", d] + opts + ["--", inst] + args,
                      after=lambda out: (shutil.rmtree(d, ignore_errors=True), out)[1])


def num(out, key):
    return float(bl.fields(out)[key])


def per_round(res, name, key, ref):
    return [num(o, key) - num(r, key) for (_, o), (_, r) in zip(res[name], res[ref])]


def io_part():
    args = ["io", N_IO]
    res = bl.rounds([bl.Variant("uninstrumented", [base] + args), srun("sonde", [], args),
                     srun("sonde --io", ["--io"], args)])
    bl.same_results(res)
    print("\nI/O calls (%s of each; ns per call, medians)" % N_IO)
    print("%-16s %10s %10s %12s %12s" % ("variant", "write", "read", "+write", "+read"))
    out = {}
    for name in ("uninstrumented", "sonde", "sonde --io"):
        w = bl.median([num(o, "write_ns") for _, o in res[name]])
        r = bl.median([num(o, "read_ns") for _, o in res[name]])
        dw = bl.median(per_round(res, name, "write_ns", "uninstrumented"))
        dr = bl.median(per_round(res, name, "read_ns", "uninstrumented"))
        out[name] = (dw, dr)
        print("%-16s %10.1f %10.1f %12.1f %12.1f" % (name, w, r, dw, dr))
    return out


def paired_part():
    args = ["paired", N_IO]
    res = bl.rounds([bl.Variant("uninstrumented", [base] + args), srun("sonde", [], args),
                     srun("sonde --io", ["--io"], args)])
    print("\nThe same inside one process: write() against syscall(SYS_write) in alternating "
          "blocks\n(ns per call, medians of blocks, then of rounds; the uninstrumented row is "
          "libc's own wrapper)")
    out = {}
    for name in ("uninstrumented", "sonde", "sonde --io"):
        w = bl.median([num(o, "write_wrap_ns") for _, o in res[name]])
        r = bl.median([num(o, "read_wrap_ns") for _, o in res[name]])
        out[name] = (w, r)
        print("%-16s %10.1f %10.1f" % (name, w, r))
    return out


def os_part():
    args = ["compute", N_OS]
    res = bl.rounds([bl.Variant("uninstrumented", [base] + args), srun("sonde", [], args),
                     srun("sonde --os", ["--os"], args),
                     srun("sonde --os 1ms", ["--os", "--os-interval", "1"], args)])
    bl.same_results(res)
    t = bl.median([num(o, "compute_ns") for _, o in res["sonde"]])
    d100 = bl.median(per_round(res, "sonde --os", "compute_ns", "sonde"))
    d1 = bl.median(per_round(res, "sonde --os 1ms", "compute_ns", "sonde"))
    # the sampler's own CPU time per sample: its thread's schedstat over the samples it took
    per = bl.median([num(o, "sampler_ns") / (num(o, "compute_ns") / 1e6)
                     for _, o in res["sonde --os 1ms"]])
    print("\n--os interval sampling (a loop of %.0f ms; medians)" % (t / 1e6))
    print("  loop time vs plain sonde run: every 100 ms %+.2f %%, every 1 ms %+.2f %% "
          "(noise of this machine: several %%)" % (100 * d100 / t, 100 * d1 / t))
    print("  the sampler thread's CPU: %.2f us per sample = %.4f %% of a CPU at 100 ms" %
          (per / 1e3, 100 * per / 100e6))
    return per


try:
    print("bench/io_cost: " + bl.machine())
    io = io_part()
    pair = paired_part()
    osr = os_part()
    print("\nio_cost: --io adds %.1f ns per write and %.1f ns per read (in one process: %.1f / "
          "%.1f); without --io the wrappers add %.1f / %.1f ns (in one process: %.1f / %.1f); "
          "an --os sample costs %.2f us (%.4f %% of a CPU at 100 ms)" %
          (io["sonde --io"][0], io["sonde --io"][1],
           pair["sonde --io"][0] - pair["uninstrumented"][0],
           pair["sonde --io"][1] - pair["uninstrumented"][1], io["sonde"][0], io["sonde"][1],
           pair["sonde"][0] - pair["uninstrumented"][0],
           pair["sonde"][1] - pair["uninstrumented"][1], osr / 1e3, 100 * osr / 100e6))
finally:
    shutil.rmtree(work, ignore_errors=True)
