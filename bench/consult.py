# SPDX-License-Identifier: MIT
"""sonde consult on the planted programs (bench/consult.sh): time to isolate, data volume.

Post mortem: each program is recorded BENCH_RUNS times (`sonde run --trace`) and searched; the
figures are medians over the recordings: the run's length, the program time at which the planted
bottleneck was concluded true (the thesis's "found ... 10 seconds into its execution"), the
samples and bytes (12 a sample) the search used, and the ratios of the trace's size and of full
periodic sampling to them (seed 003 Figs. 4.2-4.7, chapter 8: 790x less than tracing).

Live (`sonde consult -- PROGRAM`, the programs built by gcc alone): BENCH_LIVE_RUNS searches of
each (medians): the program time at which the bottleneck was isolated, the perturbation — the
program's wall time under the search against its uninstrumented runs (measured slowdown), beside
the instrumentation's observed cost over the same time —, and the data the search used against
full tracing and full periodic sampling. Full tracing is measured, not estimated: the size of
the trace files of `sonde run --trace --sync` of the same work (the hooked build: every call of
the program's procedures, and the lock, condition, barrier, semaphore and join events the
search's synchronization metrics need; I/O calls and page faults are not trace events, see
docs/consult.md), recorded once per program. The search's side is counted three ways: its samples
at the mean size of a SAMPLE entry received (protocol version 6: variable-length entries; values
that did not change are not sent and not counted), the same samples at the thesis's 12 bytes
(seed 003 Figs. 4.3, 4.5, 4.7), and every byte of the SAMPLE messages it received (frame
headers, the runtime's own counters and the points' execution counters included; protocol
version 7: the BUCKET_REPLYs, one a step). The live MPI part adds a fourth: every byte the tool
received over the control sockets, the replies to its requests included (HELLO, COSTS, LIST,
RESOURCES each second, an OK to each POINT_SET and METRIC_ENABLE). Per second:
what the search received over the time it searched, and the trace's bytes over the traced run's
wall time. BENCH_LIVE=0 skips the live part, BENCH_POST=0 the post-mortem one;
BENCH_LIVE_ONLY=consult_locks,... runs only those live programs.

Live MPI (`sonde consult -- mpirun -np 4 PROGRAM`, examples/consult_mpi_imbalance.c built by
mpicc alone): BENCH_LIVE_RUNS searches, each after an uninstrumented mpirun of the same work: the
program time at which LoadImbalance at rank 2 and WaitAtCollective at ranks 0, 1 and 3 were
concluded true, the slowdown (mpirun's wall time under the search, attaching included, against
the plain run), and the data against the trace files of `mpirun -np 4 sonde run --trace` of the
same work (the hooked build, all ranks). BENCH_LIVE_MPI=0 skips it; skipped without mpirun.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else 'build'
SONDE = os.path.join(BUILD, 'bin', 'sonde')
RUNS = max(1, int(os.environ.get('BENCH_RUNS', '3')))

# the tests' options: 20 ms samples, 5 of them minimum observation time, 20 sufficient
QUICK = ['--period', '20', '--min-obs', '0.1', '--sufficient', '0.4']
# program, its arguments (the tests' scales: locks 2, probes 3, long enough for the search's
# levels on a fast machine), consult options, the bottleneck (hypothesis, focus, phase) that
# counts as isolated
PROGRAMS = [
    ('consult_cpu', [], QUICK, ('CPUBound', '/Code/consult_cpu.c/hot_loop', None)),
    ('consult_phases', [], QUICK, ('CPUBound', '/Code/consult_phases.c/solve', 'solve')),
    ('consult_locks', ['2'], QUICK, ('ExcessiveSyncWaitingTime',
                           '/Code/consult_locks.c/update_shared,/SyncObject/mutex/hot_lock', None)),
    ('consult_probes', ['3'], ['--period', '2', '--min-obs', '0.01', '--sufficient', '0.04',
                               '--budget', '1', '--priority', 'InstrumentationOverhead'],
     ('InstrumentationOverhead', '/Code/consult_probes.c/step', None)),
]


def sh(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f'bench/consult: {" ".join(argv)}: exit {p.returncode}: {p.stderr.strip()}')
    return p.stdout


def one(tmp, name, args, opts, want, i):
    exe = os.path.join(tmp, name)
    run = os.path.join(tmp, f'{name}-{i}')
    js = run + '.json'
    sync = ['--sync'] if name == 'consult_locks' else []
    sh([SONDE, 'run', '--trace'] + sync + ['-o', run, '--', exe] + args)
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


LIVE_RUNS = max(1, int(os.environ.get('BENCH_LIVE_RUNS', '3')))
# program, its argument (the work's scale), consult options, the bottleneck that counts, and
# whether its perturbation counts (the probes program is instrumentation made the bottleneck)
LIVE = [
    ('consult_cpu', '2', [], ('CPUBound', '/Code/consult_cpu.c/hot_loop', None), True),
    ('consult_phases', '2', [], ('CPUBound', '/Code/consult_phases.c/solve', 'solve'), True),
    ('consult_locks', '4', [], ('ExcessiveSyncWaitingTime', '/SyncObject/mutex/hot_lock', None),
     True),
    ('consult_probes', '400', ['--for', '3s'],
     ('InstrumentationOverhead', '/Code/consult_probes.c/step', None), False),
]


def timed(argv):
    t = time.monotonic()
    sh(argv)
    return time.monotonic() - t


def lived(tmp, argv):
    """Run argv whose program was linked with bench/lifetime.c: (wall s, the program's own
    lifetime s, before its constructors s, after its destructors s)."""
    path = os.path.join(tmp, 'lifetime.txt')
    if os.path.exists(path):
        os.unlink(path)
    t = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, BENCH_LIFETIME=path))
    end = time.monotonic()
    if p.returncode != 0:
        sys.exit(f'bench/consult: {" ".join(argv)}: exit {p.returncode}: {p.stderr.strip()}')
    with open(path) as f:
        t0, t1 = map(float, f.read().split())
    return end - t, t1 - t0, t0 - t, end - t1


def live_one(tmp, name, arg, opts, want, i):
    js = os.path.join(tmp, f'{name}-live-{i}.json')
    exe = os.path.join(tmp, name + '-plain')
    wall, life, before, after = lived(tmp, [SONDE, 'consult', '-q', '--json', js, '-o',
                                            os.path.join(tmp, 'live-out')] +
                                      opts + ['--', exe, arg])
    with open(js) as f:
        d = json.load(f)
    found = None
    for n in d['nodes']:
        if (n['hypothesis'], n['focus'], n['phase']) == want and n['was_true']:
            found = n['decided_ns'] / 1e9
    dv = d['data']
    w = dv['wire']
    lv = d['live']
    return {'wall': wall, 'life': life, 'before': before, 'after': after,
            'perturb': lv['perturbation_s'], 'ctl': lv['control_cpu_s'], 'held': lv['held_s'],
            'found': found, 'samples': dv['samples'], 'bytes': dv['bytes'],
            'wire': dv['wire_bytes'], 'received': w.get('received_bytes', 0),
            'cost': d['live']['observed_cost_s'], 'entry_b': dv['sample_bytes'], 'messages': w['messages'],
            'entries': w['entries'], 'req_e': w['request_entries'],
            'point_e': w['point_entries'], 'own_e': w['own_entries'],
            'entry_bytes': w['entry_bytes'], 'by_sent': w.get('sent', {}),
            'by_got': w.get('received', {}),
            'searched': d['run_ns'] / 1e9,
            'vs_full': dv['full_sampling_samples'] / max(1, dv['samples'])}


def by_kind(rows, key):
    """{message type: (median messages, median bytes)} over the rows' by-type tables."""
    types = sorted({t for r in rows for t in r[key]})
    return {t: (statistics.median(r[key].get(t, [0, 0])[0] for r in rows),
                statistics.median(r[key].get(t, [0, 0])[1] for r in rows)) for t in types}


# every program's volume line, side by side at the end (the live part and the MPI search)
VOLUME = []


def volume(name, rows, trace):
    """Keep the medians of what the search took, by kind, beside the trace."""
    got, sent = by_kind(rows, 'by_got'), by_kind(rows, 'by_sent')
    VOLUME.append({'name': name, 'trace': trace, 'used': med(rows, 'bytes'),
                   'samples': med(rows, 'samples'), 'entry': med(rows, 'entry_bytes'),
                   'wire': med(rows, 'wire'), 'received': med(rows, 'received'),
                   'sent': sum(b for _, b in sent.values()), 'got': got, 'by_sent': sent,
                   'msgs': med(rows, 'messages')})


def print_volume():
    """Bytes by kind and the ratios to the trace, one column a program."""
    if not VOLUME:
        return
    names = [v['name'] for v in VOLUME]
    w = max(14, *(len(n) for n in names))
    print('\ndata by kind (medians, bytes; messages in brackets): what the runtime sent the '
          'tool by message type, frames included; of the samples (SAMPLE, BUCKET_REPLY), their '
          'entries and their frame and bucket headers; the requests the tool sent')
    print(f'{"":22}' + ''.join(f' {n:>{w}}' for n in names))
    types = sorted({t for v in VOLUME for t in v['got']})

    def row(label, cells):
        print(f'{label:22}' + ''.join(f' {c:>{w}}' for c in cells))
    for t in types:
        row('received ' + t, [f'{v["got"][t][1]:.0f} ({v["got"][t][0]:.0f})' if t in v['got']
                              else '-' for v in VOLUME])
    row('  samples: entries', [f'{v["entry"]:.0f}' for v in VOLUME])
    row('  samples: headers', [f'{v["wire"] - v["entry"]:.0f}' for v in VOLUME])
    row('received, all', [f'{v["received"]:.0f}' for v in VOLUME])
    for t in sorted({t for v in VOLUME for t in v['by_sent']}):
        row('sent ' + t, [f'{v["by_sent"][t][1]:.0f} ({v["by_sent"][t][0]:.0f})'
                          if t in v['by_sent'] else '-' for v in VOLUME])
    row('sent, all', [f'{v["sent"]:.0f}' for v in VOLUME])
    print('\nratios: the trace of the same work (sonde run --trace) over what the search took: '
          'its samples used (at the mean entry), the bytes of the sample messages, every byte '
          'received, every byte both ways')
    row('trace bytes', [f'{v["trace"]:.0f}' for v in VOLUME])
    row('samples used', [f'{v["samples"]:.0f}' for v in VOLUME])
    row('trace / samples used', [f'{v["trace"] / max(1, v["used"]):.1f}x' for v in VOLUME])
    row('trace / sample bytes', [f'{v["trace"] / max(1, v["wire"]):.1f}x' for v in VOLUME])
    row('trace / received', [f'{v["trace"] / max(1, v["received"]):.1f}x' for v in VOLUME])
    row('trace / both ways', [f'{v["trace"] / max(1, v["received"] + v["sent"]):.1f}x'
                              for v in VOLUME])
    print('volume figures: ' + '; '.join(
        f'{v["name"]} {v["trace"] / max(1, v["received"]):.1f}x every byte received '
        f'({v["received"]:.0f} B), {v["trace"] / max(1, v["wire"]):.1f}x sample bytes, '
        f'{v["trace"] / max(1, v["used"]):.1f}x samples used' for v in VOLUME))


def live(tmp):
    print(f'\nsonde consult live (-- PROGRAM, built without hooks): {LIVE_RUNS} searches each, '
          'medians; slowdown: wall time under the search / the uninstrumented run just before - 1')
    print(f'{"program":16} {"plain s":>7} {"search s":>8} {"slowdown":>8} {"obs.cost":>8} '
          f'{"found at s":>10} {"isolated":>9} {"samples":>7} {"B/smp":>5} {"bytes":>7} '
          f'{"wire B":>7} {"trace B":>10} {"trace/used":>10} {"trace/12B":>9} '
          f'{"trace/wire":>10} {"full/used":>9}')
    summary = []
    detail = []
    perturb = []
    only = os.environ.get('BENCH_LIVE_ONLY')
    for name, arg, opts, want, counts in LIVE:
        if only and name not in only.split(','):
            continue
        src = os.path.join('examples', name + '.c')
        plain = os.path.join(tmp, name + '-plain')
        sh([os.environ.get('CC', 'gcc'), '-O1', '-g', '-fno-inline-functions-called-once',
            '-Iinclude', '-o', plain, src, 'bench/lifetime.c', '-lpthread'])
        if not os.path.exists(os.path.join(tmp, name)):  # BENCH_POST=0: the hooked build
            sh([SONDE, 'cc', '--', os.environ.get('CC', 'gcc'), '-O1', '-g', '-o',
                os.path.join(tmp, name), src, '-lpthread'])
        rec = os.path.join(tmp, f'{name}-trace-{arg}')
        trace_s = timed([SONDE, 'run', '--trace', '--sync', '-o', rec, '--',
                         os.path.join(tmp, name), arg])
        trace = sum(os.path.getsize(os.path.join(rec, f)) for f in os.listdir(rec)
                    if f.endswith('.strc'))
        rows = []
        for i in range(LIVE_RUNS):  # side by side: an uninstrumented run, then a search
            plain_s, plain_life, _, _ = lived(tmp, [plain, arg])
            rows.append(live_one(tmp, name, arg, opts, want, i))
            rows[-1]['plain'] = plain_s
            rows[-1]['slow'] = rows[-1]['wall'] / plain_s - 1
            rows[-1]['plain_life'] = plain_life
            rows[-1]['slow_life'] = rows[-1]['life'] / plain_life - 1
        hits = sum(r['found'] is not None for r in rows)
        f = med(rows, 'found')
        wall, base = med(rows, 'wall'), med(rows, 'plain')
        slow = med(rows, 'slow') if not opts else float('nan')  # --for: the program runs on
        cost = med(rows, 'cost') / med(rows, 'searched')
        used, wire = med(rows, 'bytes'), med(rows, 'wire')
        thesis = 12 * med(rows, 'samples')
        searched = med(rows, 'searched')
        print(f'{name:16} {base:7.2f} {wall:8.2f} {100 * slow:7.1f}% {100 * cost:7.1f}% '
              f'{f if f is not None else float("nan"):10.2f} {hits:>4}/{len(rows):<4} '
              f'{med(rows, "samples"):7.0f} {med(rows, "entry_b"):5.2f} {used:7.0f} '
              f'{wire:7.0f} {trace:10.0f} {trace / max(1, used):10.1f} '
              f'{trace / max(1, thesis):9.1f} {trace / max(1, wire):10.1f} '
              f'{med(rows, "vs_full"):9.1f}')
        detail.append(f'{name:16} {med(rows, "messages"):8.0f} {med(rows, "entries"):7.0f} '
                      f'{med(rows, "req_e"):7.0f} {med(rows, "point_e"):7.0f} '
                      f'{med(rows, "own_e"):5.0f} {med(rows, "entry_bytes"):7.0f} '
                      f'{wire - med(rows, "entry_bytes"):8.0f} {searched:7.2f} '
                      f'{wire / searched:8.0f} {used / searched:8.0f} {trace_s:7.2f} '
                      f'{trace / trace_s:9.0f}')
        volume(name, rows, trace)
        slow_life = med(rows, 'slow_life') if not opts else float('nan')
        perturb.append(f'{name:16} {100 * slow:7.1f}% {med(rows, "plain_life"):8.2f} '
                       f'{med(rows, "life"):8.2f} {100 * slow_life:7.1f}% '
                       f'{1e3 * med(rows, "before"):8.0f} {1e3 * med(rows, "after"):7.0f} '
                       f'{1e3 * med(rows, "held"):7.0f} {100 * cost:7.2f}% '
                       f'{100 * med(rows, "perturb") / searched:7.2f}% '
                       f'{100 * med(rows, "ctl") / searched:7.2f}%')
        summary.append(f'{name}: isolated {hits}/{len(rows)} at {f}s, slowdown '
                       f'{100 * slow:.1f}% (the program itself {100 * slow_life:.1f}%; '
                       f'observed cost {100 * cost:.1f}%, with the pauses '
                       f'{100 * med(rows, "perturb") / searched:.1f}%'
                       f'{"" if counts else ", the planted instrumentation bottleneck"}), '
                       f'{trace / max(1, used):.1f}x less than the trace '
                       f'({trace / max(1, thesis):.1f}x at 12 bytes a sample, '
                       f'{trace / max(1, wire):.1f}x counting every byte of the samples '
                       f'received, {trace / max(1, med(rows, "received")):.1f}x counting every '
                       f'byte received: {med(rows, "received"):.0f} B, the replies to every '
                       f'request included)')
    print('live figures: ' + '; '.join(summary))
    print('\nwhat the runtime sent (medians): SAMPLE messages, entries (of requests, of the '
          'points\' execution counters, the runtime\'s own), their bytes, the messages\' other '
          'bytes (frame and bucket headers); per second of the search, and of the traced run')
    print(f'{"program":16} {"messages":>8} {"entries":>7} {"request":>7} {"points":>7} '
          f'{"own":>5} {"entry B":>7} {"header B":>8} {"s":>7} {"wire B/s":>8} '
          f'{"used B/s":>8} {"trace s":>7} {"trace B/s":>9}')
    for line in detail:
        print(line)
    print('\nperturbation (medians): the wall-time slowdown above; the program\'s own lifetime '
          '(constructors to destructors, bench/lifetime.c) plain and searched, and its slowdown; '
          'what the search added before the program\'s constructors and after its destructors '
          '(ms: launch, the runtime\'s start; last sample, report); the time the program was '
          'held (ms, the search\'s own figure); the observed cost, the search\'s perturbation '
          '(observed cost and pauses) and its control thread\'s CPU, over the time searched')
    print(f'{"program":16} {"wall":>8} {"plain s":>8} {"prog s":>8} {"prog":>8} '
          f'{"before":>8} {"after":>7} {"held":>7} {"obs.cost":>8} {"perturb.":>8} '
          f'{"ctl cpu":>8}')
    for line in perturb:
        print(line)


MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_btl='self,vader', OMPI_MCA_rmaps_base_oversubscribe='1',
               OMPI_MCA_btl_vader_single_copy_mechanism='none')
MPIRUN = ['mpirun', '--oversubscribe', '--allow-run-as-root', '-np', '4']
MPI_PROG, MPI_ARG = 'consult_mpi_imbalance', '6'  # about 15 s: rank 2 sleeps 20 ms a round
MPI_MOD = '/Code/consult_mpi_imbalance.c'
# the planted bottlenecks: (hypothesis, focus) pairs, each to be concluded true
MPI_WANT = [('LoadImbalance', f'{MPI_MOD}/work,/Process/rank2')] + [
    ('WaitAtCollective', f'{MPI_MOD}/exchange,/Process/rank{r}') for r in (0, 1, 3)]


def mpi_timed(argv):
    t = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=MPI_ENV)
    if p.returncode != 0:
        sys.exit(f'bench/consult: {" ".join(argv)}: exit {p.returncode}: {p.stderr.strip()}')
    return time.monotonic() - t


def live_mpi_one(tmp, plain, i):
    js = os.path.join(tmp, f'mpi-live-{i}.json')
    wall = mpi_timed([SONDE, 'consult', '-q', '--json', js, '--sufficient', '2', '-o',
                      os.path.join(tmp, 'mpi-live-out'), '--'] + MPIRUN + [plain, MPI_ARG])
    with open(js) as f:
        d = json.load(f)
    when = {(n['hypothesis'], n['focus']): n['decided_ns'] / 1e9 for n in d['nodes']
            if n['was_true']}
    found = [when.get(w) for w in MPI_WANT]
    dv = d['data']
    by_metric, by_rank = {}, {}
    for r in d['measured']:
        m = by_metric.setdefault(r['metric'], [0, 0])
        m[0] += r['samples']
        m[1] += r['retest_samples']
        rank = re.search(r'/Process/rank\d+', r['focus'])
        by_rank[rank.group(0) if rank else 'every rank'] = \
            by_rank.get(rank.group(0) if rank else 'every rank', 0) + r['samples']
    return {'wall': wall, 'found': None if None in found else max(found),
            'hits': sum(f is not None for f in found), 'samples': dv['samples'],
            'pair_samples': dv['pair_samples'], 'retest': dv['retest_samples'],
            'settled': dv['settled_samples'], 'settled_steps': dv['settled_steps'],
            'steps': dv['steps'], 'entries': dv['wire']['request_entries'],
            'point_e': dv['wire']['point_entries'], 'messages': dv['wire']['messages'],
            'entry_b': dv['sample_bytes'],
            'bytes': dv['bytes'], 'wire': dv.get('wire_bytes', 0),
            'received': dv['wire'].get('received_bytes', 0),
            'cost': d['live']['observed_cost_s'], 'perturb': d['live']['perturbation_s'],
            'ctl': d['live']['control_cpu_s'], 'searched': d['run_ns'] / 1e9,
            'by_metric': by_metric, 'by_rank': by_rank,
            'rank_wire': {r['rank']: r['wire_bytes'] for r in d['rank_pids']},
            'entry_bytes': dv['wire']['entry_bytes'], 'by_sent': dv['wire'].get('sent', {}),
            'by_got': dv['wire'].get('received', {}),
            'vs_full': dv['full_sampling_samples'] / max(1, dv['samples'])}


def live_mpi(tmp):
    if not shutil.which('mpirun') or not shutil.which('mpicc'):
        print('\nsonde consult live MPI: skipped (mpirun or mpicc not installed)')
        return
    src = os.path.join('examples', MPI_PROG + '.c')
    plain, hooked = os.path.join(tmp, MPI_PROG + '-plain'), os.path.join(tmp, MPI_PROG)
    sh(['mpicc', '-O1', '-g', '-o', plain, src])
    sh([SONDE, 'cc', '--', 'mpicc', '-O1', '-g', '-o', hooked, src])
    rec = os.path.join(tmp, 'mpi-trace')
    mpi_timed(MPIRUN + [SONDE, 'run', '--trace', '-o', rec, '--', hooked, MPI_ARG])
    trace = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(rec) for f in fs
                if f.endswith('.strc'))
    rows = []
    for i in range(LIVE_RUNS):  # side by side: an uninstrumented run, then a search
        base = mpi_timed(MPIRUN + [plain, MPI_ARG])
        rows.append(live_mpi_one(tmp, plain, i))
        rows[-1]['plain'] = base
        rows[-1]['slow'] = rows[-1]['wall'] / base - 1
    isolated = sum(r['hits'] == len(MPI_WANT) for r in rows)
    f, used, wire = med(rows, 'found'), med(rows, 'bytes'), med(rows, 'wire')
    cost = med(rows, 'cost') / med(rows, 'searched')
    print(f'\nsonde consult live MPI (-- mpirun -np 4 {MPI_PROG} {MPI_ARG}, built by mpicc '
          f'alone): {LIVE_RUNS} searches, medians; found: when the last of the {len(MPI_WANT)} '
          'planted (hypothesis, rank) pairs was concluded true')
    print(f'{"plain s":>7} {"search s":>8} {"slowdown":>8} {"obs.cost":>8} {"found at s":>10} '
          f'{"isolated":>9} {"samples":>7} {"bytes":>7} {"wire B":>7} {"trace B":>9} '
          f'{"trace/used":>10} {"trace/wire":>10} {"full/used":>9}')
    print(f'{med(rows, "plain"):7.2f} {med(rows, "wall"):8.2f} {100 * med(rows, "slow"):7.1f}% '
          f'{100 * cost:7.2f}% {f if f is not None else float("nan"):10.2f} '
          f'{isolated:>4}/{len(rows):<4} {med(rows, "samples"):7.0f} {used:7.0f} {wire:7.0f} '
          f'{trace:9.0f} {trace / max(1, used):10.1f} {trace / max(1, wire):10.1f} '
          f'{med(rows, "vs_full"):9.1f}')
    pair_b = med(rows, 'pair_samples') * med(rows, 'entry_b')
    req_b = med(rows, 'entries') * med(rows, 'entry_b')
    print('\nwhere the data went (medians): samples as each pair counted them (a reading of '
          'several pairs counted again: the count of earlier runs), of re-tests (pairs only '
          'concluded nodes read), of the settled steps; the steps, settled steps; the entries '
          'of requests and of the points received, the messages; the trace against each')
    print(f'{"samples":>7} {"per pair":>8} {"retest":>7} {"settled":>7} {"steps":>5} '
          f'{"settled":>7} {"req.ent":>7} {"pt.ent":>7} {"msgs":>5} {"trace/pair":>10} '
          f'{"trace/req.ent":>13} {"perturb.":>8} {"ctl cpu":>8}')
    print(f'{med(rows, "samples"):7.0f} {med(rows, "pair_samples"):8.0f} '
          f'{med(rows, "retest"):7.0f} {med(rows, "settled"):7.0f} {med(rows, "steps"):5.0f} '
          f'{med(rows, "settled_steps"):7.0f} {med(rows, "entries"):7.0f} '
          f'{med(rows, "point_e"):7.0f} {med(rows, "messages"):5.0f} '
          f'{trace / max(1, pair_b):10.1f} {trace / max(1, req_b):13.1f} '
          f'{100 * med(rows, "perturb") / med(rows, "searched"):7.2f}% '
          f'{100 * med(rows, "ctl") / med(rows, "searched"):7.2f}%')
    volume('MPI search', rows, trace)
    last = rows[-1]
    print('last search, samples (re-tests) by metric: ' +
          ', '.join(f'{k} {v[0]} ({v[1]})' for k, v in sorted(last['by_metric'].items())))
    print('last search, samples by rank: ' +
          ', '.join(f'{k} {v}' for k, v in sorted(last['by_rank'].items())) +
          '; wire bytes by rank: ' +
          ', '.join(f'rank{k} {v}' for k, v in sorted(last['rank_wire'].items())))
    print(f'live MPI figures: isolated {isolated}/{len(rows)} at {f}s, slowdown '
          f'{100 * med(rows, "slow"):.1f}% (observed cost {100 * cost:.2f}%), '
          f'{trace / max(1, used):.1f}x less than the trace '
          f'({trace / max(1, pair_b):.1f}x counting each pair\'s readings as before, '
          f'{trace / max(1, req_b):.1f}x counting every entry of a request, '
          f'{trace / max(1, wire):.1f}x counting every byte of the samples received, '
          f'{trace / max(1, med(rows, "received")):.1f}x counting every byte received: '
          f'{med(rows, "received"):.0f} B, the replies to every request included)')


def main():
    print(f'sonde consult on the planted programs: {RUNS} recordings each, medians')
    print(f'{"program":16} {"run s":>7} {"found at s":>10} {"isolated":>9} {"samples":>8} '
          f'{"bytes":>8} {"trace B":>10} {"trace/used":>10} {"full/used":>9}')
    summary = []
    with tempfile.TemporaryDirectory(prefix='sonde-bench-consult-') as tmp:
        for name, args, opts, want in PROGRAMS if os.environ.get('BENCH_POST', '1') != '0' else []:
            sh([SONDE, 'cc', '--', os.environ.get('CC', 'gcc'), '-O1', '-g', '-o',
                os.path.join(tmp, name), os.path.join('examples', name + '.c'), '-lpthread'])
            rows = [one(tmp, name, args, opts, want, i) for i in range(RUNS)]
            hits = sum(r['found'] is not None for r in rows)
            f = med(rows, 'found')
            print(f'{name:16} {med(rows, "run"):7.2f} {f if f is not None else float("nan"):10.2f} '
                  f'{hits:>4}/{len(rows):<4} {med(rows, "samples"):8.0f} {med(rows, "bytes"):8.0f} '
                  f'{med(rows, "trace"):10.0f} {med(rows, "vs_trace"):10.0f} '
                  f'{med(rows, "vs_full"):9.1f}')
            summary.append(f'{name}: isolated {hits}/{len(rows)} at {f}s, '
                           f'{med(rows, "vs_trace"):.0f}x less than the trace')
        print('figures: ' + '; '.join(summary))
        if os.environ.get('BENCH_LIVE', '1') != '0':
            live(tmp)
        if os.environ.get('BENCH_LIVE_MPI', '1') != '0':
            live_mpi(tmp)
        print(f'load average at the end: {open("/proc/loadavg").read().strip()}')
        print_volume()


if __name__ == '__main__':
    main()
