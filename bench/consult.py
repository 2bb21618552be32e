# SPDX-License-Identifier: MIT
"""sonde consult on the planted programs (bench/consult.sh): time to isolate, data volume.

Each program is recorded BENCH_RUNS times (`sonde run --trace`) and searched; the figures are
medians over the recordings: the run's length, the program time at which the planted bottleneck
was concluded true (the thesis's "found ... 10 seconds into its execution"), the samples and
bytes (12 a sample) the search used, and the ratios of the trace's size and of full periodic
sampling to them (seed 003 Figs. 4.2-4.7, chapter 8: 790x less than tracing).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

BUILD = sys.argv[1] if len(sys.argv) > 1 else 'build'
SONDE = os.path.join(BUILD, 'bin', 'sonde')
RUNS = max(1, int(os.environ.get('BENCH_RUNS', '3')))

# the tests' options: 20 ms samples, 5 of them minimum observation time, 20 sufficient
QUICK = ['--period', '20', '--min-obs', '0.1', '--sufficient', '0.4']
# program, consult options, the bottleneck (hypothesis, focus, phase) that counts as isolated
PROGRAMS = [
    ('consult_cpu', QUICK, ('CPUBound', '/Code/consult_cpu.c/hot_loop', None)),
    ('consult_phases', QUICK, ('CPUBound', '/Code/consult_phases.c/solve', 'solve')),
    ('consult_locks', QUICK, ('ExcessiveSyncWaitingTime',
                           '/Code/consult_locks.c/update_shared,/SyncObject/mutex/hot_lock', None)),
    ('consult_probes', ['--period', '2', '--min-obs', '0.01', '--sufficient', '0.04',
                        '--budget', '1', '--priority', 'InstrumentationOverhead'],
     ('InstrumentationOverhead', '/Code/consult_probes.c/step', None)),
]


def sh(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f'bench/consult: {" ".join(argv)}: exit {p.returncode}: {p.stderr.strip()}')
    return p.stdout


def one(tmp, name, opts, want, i):
    exe = os.path.join(tmp, name)
    run = os.path.join(tmp, f'{name}-{i}')
    js = run + '.json'
    sync = ['--sync'] if name == 'consult_locks' else []
    sh([SONDE, 'run', '--trace'] + sync + ['-o', run, '--', exe])
    sh([SONDE, 'consult', run, '-q', '--json', js] + opts)
    with open(js) as f:
        d = json.load(f)
    found = None
    for n in d['nodes']:
        if (n['hypothesis'], n['focus'], n['phase']) == want and n['was_true']:
            found = n['decided_ns'] / 1e9
    dv = d['data']
    return {'run': d['run_ns'] / 1e9, 'found': found, 'samples': dv['samples'],
            'bytes': dv['bytes'], 'trace': dv['trace_bytes'],
            'vs_trace': dv['trace_bytes'] / max(1, dv['bytes']),
            'vs_full': dv['full_sampling_samples'] / max(1, dv['samples'])}


def med(rows, key):
    vals = [r[key] for r in rows if r[key] is not None]
    return statistics.median(vals) if vals else None


def main():
    print(f'sonde consult on the planted programs: {RUNS} recordings each, medians')
    print(f'{"program":16} {"run s":>7} {"found at s":>10} {"isolated":>9} {"samples":>8} '
          f'{"bytes":>8} {"trace B":>10} {"trace/used":>10} {"full/used":>9}')
    summary = []
    with tempfile.TemporaryDirectory(prefix='sonde-bench-consult-') as tmp:
        for name, opts, want in PROGRAMS:
            sh([SONDE, 'cc', '--', os.environ.get('CC', 'gcc'), '-O1', '-g', '-o',
                os.path.join(tmp, name), os.path.join('examples', name + '.c'), '-lpthread'])
            rows = [one(tmp, name, opts, want, i) for i in range(RUNS)]
            hits = sum(r['found'] is not None for r in rows)
            f = med(rows, 'found')
            print(f'{name:16} {med(rows, "run"):7.2f} {f if f is not None else float("nan"):10.2f} '
                  f'{hits:>4}/{len(rows):<4} {med(rows, "samples"):8.0f} {med(rows, "bytes"):8.0f} '
                  f'{med(rows, "trace"):10.0f} {med(rows, "vs_trace"):10.0f} '
                  f'{med(rows, "vs_full"):9.1f}')
            summary.append(f'{name}: isolated {hits}/{len(rows)} at {f}s, '
                           f'{med(rows, "vs_trace"):.0f}x less than the trace')
    print('figures: ' + '; '.join(summary))


if __name__ == '__main__':
    main()
