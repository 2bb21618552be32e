# SPDX-License-Identifier: MIT
"""Driver of bench/dyn_objects.sh: what a /SyncObject or /Files focus costs (medians)."""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

B, SONDE, N = sys.argv[1], sys.argv[2], sys.argv[3]
FILE = os.path.join(os.path.abspath(B), "dyn_objects.dat")
PROG = [os.path.join(B, "dyn_objects"), FILE, N]
FIELDS = ("hot_ns", "cold_ns", "write_ns", "other_write_ns")


def watched(metric, focus, tag):
    return benchlib.Variant(tag, [SONDE, "watch", "--metric", metric, "--focus", focus,
                                  "-o", os.path.join(B, "dyn-objects-" + metric), "--"] + PROG)


def main():
    variants = [benchlib.Variant("alone", PROG),
                # the same launch (runtime preloaded, its control thread sampling) without a
                # point in the loops: the baseline of the figures
                watched("calls", "/Code/dyn_objects.c/main", "watch, no object"),
                watched("sync_ops", "/SyncObject/mutex/hot_lock", "sync_ops hot_lock"),
                watched("lock_hold", "/SyncObject/mutex/hot_lock", "lock_hold hot_lock"),
                watched("io_ops", "/Files" + FILE, "io_ops file"),
                watched("io_bytes", "/Files" + FILE, "io_bytes file")]
    res = benchlib.rounds(variants)
    med = {}
    for name, runs in res.items():
        vals = {f: [] for f in FIELDS}
        for _, out in runs:
            m = re.search(r"hot_ns (\S+) cold_ns (\S+) write_ns (\S+) other_write_ns (\S+)", out)
            if not m:
                raise SystemExit("dyn_objects: no figures in %r" % out[-300:])
            for f, v in zip(FIELDS, m.groups()):
                vals[f].append(float(v))
        med[name] = {f: statistics.median(v) for f, v in vals.items()}
    a = med["watch, no object"]
    print("\nns per operation (medians of %d rounds; fastest of 7 batches each); the watches "
          "at objects: added to 'watch, no object'" % benchlib.runs())
    print("%-20s %12s %12s %12s %12s" % ("", "hot pair", "other pair", "write", "other write"))
    for name, m in med.items():
        if name in ("alone", "watch, no object"):
            print("%-20s %12.2f %12.2f %12.2f %12.2f" % ((name,) + tuple(m[f] for f in FIELDS)))
        else:
            print("%-20s %+12.2f %+12.2f %+12.2f %+12.2f" %
                  ((name,) + tuple(m[f] - a[f] for f in FIELDS)))
    s, io = med["sync_ops hot_lock"], med["io_bytes file"]
    print("figures: focused pair +%.1f ns, other pair +%.1f ns (sync_ops); focused write +%.1f "
          "ns, other write +%.1f ns (io_bytes)" % (s["hot_ns"] - a["hot_ns"],
                                                   s["cold_ns"] - a["cold_ns"],
                                                   io["write_ns"] - a["write_ns"],
                                                   io["other_write_ns"] - a["other_write_ns"]))


if __name__ == "__main__":
    main()
