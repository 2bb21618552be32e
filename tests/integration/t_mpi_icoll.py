# SPDX-License-Identifier: MIT
# Integration tests of the non-blocking collectives (runtime/mpi/mpi_icoll.c; docs/mpi.md
# "Non-blocking collectives"): tests/programs/mpi_icoll.c, 4 ranks, in a profile, with
# --mpi-comp and with --trace (then exported to OTF2). Run by run.py in its own namespace,
# after t_mpi.py (its helpers: mpi_build, mpirun, ranks, routine).

# Per routine and rank r of 4: (calls, bytes sent, bytes received) — mpi_icoll.c's sizes.
def icoll_expected(r):
    return {
        'MPI_Ibarrier': (4, 0, 0),
        'MPI_Ibcast': (2, 80 if r == 0 else 0, 0 if r == 0 else 80),
        'MPI_Igather': (1, 20, 80 if r == 1 else 0),
        'MPI_Igatherv': (1, 4 * (r + 1), 40 if r == 2 else 0),
        'MPI_Iscatter': (1, 96 if r == 3 else 0, 24),
        'MPI_Iscatterv': (1, 56 if r == 0 else 0, 4 * (r + 2)),
        'MPI_Iallgather': (1, 12, 48),
        'MPI_Iallgatherv': (1, 4 * (r + 1), 40),
        'MPI_Ireduce': (2, 112, 112 if r == 0 else 0),
        'MPI_Iallreduce': (4, 256, 256),
        'MPI_Ialltoall': (1, 32, 32),
        'MPI_Ialltoallv': (1, 40, 16 * (r + 1)),
        'MPI_Iscan': (1, 32, 32),
        'MPI_Iexscan': (1, 32, 32),
        'MPI_Ireduce_scatter': (1, 40, 4 * (r + 1)),
        'MPI_Ireduce_scatter_block': (1, 32, 8),
    }


ICOLL_PER_RANK = 24  # the initiations above, per rank


def icoll_counts(rk, n):
    eq(sorted(rk), [0, 1, 2, 3], f'{n}: ranks')
    for r, x in rk.items():
        for name, want in icoll_expected(r).items():
            k = routine(x, name)
            eq((k['calls'], k['bytes_sent'], k['bytes_recv']), want,
               f'{n}: rank {r} {name} (calls, bytes sent, bytes received)')
        eq(routine(x, 'MPI_Wait')['calls'], 3, f'{n}: rank {r} MPI_Wait')
        eq(routine(x, 'MPI_Waitall')['calls'], 3, f'{n}: rank {r} MPI_Waitall')
        eq(routine(x, 'MPI_Waitany')['calls'], 1, f'{n}: rank {r} MPI_Waitany')
        eq(routine(x, 'MPI_Gather')['calls'], 1, f'{n}: rank {r} MPI_Gather (the checksums)')
        eq(routine(x, 'MPI_Barrier')['calls'], 1, f'{n}: rank {r} MPI_Barrier')


@test('')
def t_mpi_icoll(o):
    plain = mpi_build('mpi_icoll', instrument=False)
    pd, _ = mpirun(plain)
    with check('mpi_icoll: runs under mpirun'):
        expect(pd.returncode == 0 and b'checksum' in pd.stdout, describe(pd))
    for mode, opts in (('profile', []), ('piggyback', ['--mpi-comp'])):
        n = f'mpi_icoll ({mode})'
        p, d = mpirun(plain, opts, tag=f'mpi-icoll-{mode}')
        with check(f'{n}: output as a plain run (the data unaltered: checksums)'):
            eq(p.returncode, 0, 'exit status')
            eq(p.stdout, pd.stdout, 'stdout (the checksums of all data received)')
        with check(f'{n}: exact calls and bytes of every non-blocking collective'):
            icoll_counts(ranks(report(d)), n)
        with check(f'{n}: sonde report names them'):
            t = run([SONDE, 'report', '--mpi', d])
            expect(t.returncode == 0 and b'MPI_Ireduce_scatter_block' in t.stdout and
                   b'MPI_Iallreduce' in t.stdout, describe(t))


def icoll_log(d):
    """runtime.log's lines of the non-blocking collectives' rules (one per rank, --mpi-comp):
    (rules, late, delays read before a late one, piggyback slots out at the end)."""
    log = os.path.join(d, 'runtime.log')
    text = open(log).read() if os.path.exists(log) else ''
    return [tuple(int(v) for v in m) for m in re.findall(
        r'mpi: non-blocking collective rules: (\d+), late (\d+), delays read before a late one '
        r'(\d+); piggyback slots out (\d+)', text)]


@test('')
def t_mpi_icoll_many(o):
    """mpi_icoll many: 3000 Iallreduce completed one by one, 300 Ibcast in flight at once, an
    Ibarrier by Testsome. Every request is followed to its completion (the map and the slots give
    their entries back): exact counts, one rule per completion that applies one (the Ibcast's root
    applies none), no slot left out, one trace event per collective."""
    plain = mpi_build('mpi_icoll', instrument=False)
    pd = run(MPIRUN + [plain, 'many'], env=MPI_ENV, timeout=300)
    with check('mpi_icoll many: runs under mpirun'):
        expect(pd.returncode == 0 and b'checksum' in pd.stdout, describe(pd))
    for mode, opts in (('piggyback', ['--mpi-comp']), ('trace', ['--trace'])):
        n = f'mpi_icoll many ({mode})'
        d = new_dir(f'mpi-icoll-many-{mode}')
        p = run(MPIRUN + [SONDE, 'run', '-o', d] + opts + ['--', plain, 'many'], env=MPI_ENV,
                timeout=300)
        with check(f'{n}: output as a plain run'):
            eq(p.returncode, 0, 'exit status')
            eq(p.stdout, pd.stdout, 'stdout (the checksums)')
        if mode == 'trace':
            with check(f'{n}: one MPI_COLL event per collective, each rank'):
                eq(len(traces(d)), 4, 'traces')
                for t in traces(d):
                    _, cnt, events, _ = dump(os.path.join(d, t))
                    names = {}
                    for x in events:
                        if x[2] == 'MPI_COLL':
                            k = x[3].split(' ', 1)[0]
                            names[k] = names.get(k, 0) + 1
                    eq(names, {'Iallreduce': 3000, 'Ibcast': 300, 'Ibarrier': 1, 'Gather': 1},
                       f'{t}: MPI_COLL events per operation')
            continue
        with check(f'{n}: exact calls; one rule per completion; no slot left out'):
            rk = ranks(report(d))
            for r, x in rk.items():
                eq([routine(x, k)['calls'] for k in ('MPI_Iallreduce', 'MPI_Ibcast',
                                                     'MPI_Ibarrier', 'MPI_Wait', 'MPI_Waitall')],
                   [3000, 300, 1, 3000, 1], f'rank {r} calls')
                eq(routine(x, 'MPI_Ibcast')['bytes_recv'], 0 if r == 0 else 1200,
                   f'rank {r} Ibcast bytes received')
            got = sorted(icoll_log(d))
            eq([(a, c) for a, _, _, c in got], [(3001, 0)] + [(3301, 0)] * 3,
               'rules (the root of the Ibcasts applies none), slots out at the end')


@test('')
def t_mpi_icoll_comp(o):
    """--mpi-comp at the completion of a non-blocking collective: rank 1 computes 2000000
    measured calls before its MPI_Ibarrier, which ranks 0, 2, 3 started at once and wait for in
    MPI_Wait. Without measurement they would have waited rank 1's probes less: they inherit its
    delay (mpi_rule.h, mpi_rule_icoll), the rank's own overhead aside."""
    b = mpi_build('mpi_icoll')
    pd, _ = mpirun(b)
    for mode, opts in (('local', ['--throttle', 'off', '--no-insitu']),
                       ('parallel', ['--throttle', 'off', '--no-insitu', '--mpi-comp'])):
        n = f'mpi_icoll delay ({mode})'
        p, d = mpirun(b, opts, tag=f'mpi-icoll-{mode}')
        with check(f'{n}: output as a plain run'):
            eq(p.returncode, 0, 'exit status')
            eq(p.stdout, pd.stdout, 'stdout')
        js = report(d)
        rk = ranks(js)
        with check(f'{n}: exact counts as in a profile; work() 2000000 calls'):
            icoll_counts(rk, n)
            eq(funcs(js)['work']['calls'], 2000000, 'work() calls')
        x1 = rk[1]['overhead_ns'] - rk[1]['extra_ns']  # rank 1's own: its probes, wrappers
        if mode == 'local':
            with check(f'{n}: without piggybacking parallel(c) is local(c), no rule'):
                for r in rk.values():
                    eq(r['t_par_ns'], r['t_local_ns'], f'rank {r["rank"]}')
                    eq(r['waits'], 0, f'rank {r["rank"]} waits')
            continue
        with check(f'{n}: ranks 0, 2, 3 inherit rank 1 delay at their MPI_Wait'):
            expect(x1 > 10_000_000, f'rank 1 overhead besides the delay exchanges {x1} ns')
            for r in (0, 2, 3):
                # x' = min(x + w, rank 1's delay): rank 1's, or only what it waited when it came
                # to its Wait late (its longest MPI_Wait: the delayed barrier's, after a barrier)
                wait = routine(rk[r], 'MPI_Wait')
                inherit = min(wait['max_ns'], x1)
                between(rk[r]['delay_ns'] - rk[r]['overhead_ns'], 0.8 * inherit,
                        1.05 * x1 + 200_000, f'rank {r} delay less its own overhead (its '
                        f'longest MPI_Wait {wait["max_ns"]} ns, rank 1 delay {x1})')
                expect(wait['comp_ns'] < wait['ns'] - 0.7 * inherit,
                       f'rank {r} MPI_Wait {wait["ns"]} ns measured, {wait["comp_ns"]} '
                       'compensated')
                expect(rk[r]['t_par_ns'] < rk[r]['t_local_ns'] - 0.7 * inherit,
                       f'rank {r} parallel(c) {rk[r]["t_par_ns"]} vs local(c) '
                       f'{rk[r]["t_local_ns"]}')
        with check(f'{n}: runtime.log counts the rules per rank'):
            text = open(os.path.join(d, 'runtime.log')).read()
            got = icoll_log(d)
            eq(len(got), 4, f'ranks that logged their rules: {text}')
            expect(all(a >= b for a, b, _, _ in got), f'rules, late: {got}')
            eq([x[3] for x in got], [0] * 4, 'piggyback slots out of the pool at the end')


@test()
def t_mpi_icoll_trace(o):
    """--trace: every non-blocking collective is an MPI_COLL event (op | NB) when the Wait or
    Test that completed it returns; not matched across ranks; exported to OTF2 as a
    NonBlockingCollectiveRequest / Complete pair."""
    if not shutil.which('mpirun'):
        emit(True, 'mpi_icoll --trace: # SKIP mpirun is not installed (Debian: openmpi-bin)')
        return
    b = mpi_build('mpi_icoll')
    plain, _ = mpirun(b, None, tag='mpi-icoll-trace-plain')
    p, d = mpirun(b, ['--trace'], tag='mpi-icoll-trace')
    with check('mpi_icoll --trace: output unchanged; each rank\'s collectives exactly'):
        expect(p.returncode == 0, describe(p))
        eq(p.stdout, plain.stdout, 'stdout (the checksums)')
        eq(len(traces(d)), 4, 'traces')
        for t in traces(d):
            head, cnt, events, _ = dump(os.path.join(d, t))
            r = int(re.search(r'rank (\d+) of 4', [h for h in head
                                                   if h.strip().startswith('mpi ')][0]).group(1))
            eq(cnt.get('MPI_COLL', 0), ICOLL_PER_RANK + 2, f'rank {r}: MPI_COLL events')
            names = {}
            for x in events:
                if x[2] == 'MPI_COLL':
                    k = 'MPI_' + x[3].split(' ', 1)[0]
                    names[k] = names.get(k, 0) + 1
            want = {k: v[0] for k, v in icoll_expected(r).items()}
            want['MPI_Ireduce_scatter'] += want.pop('MPI_Ireduce_scatter_block')  # one op
            want['MPI_Gather'] = want['MPI_Barrier'] = 1
            eq(names, want, f'rank {r}: MPI_COLL events per operation')
    with check('mpi_icoll --trace: analyze matches the blocking one, leaves the others'):
        out = analyze(d)
        expect('MPI run: 4 ranks of 4' in out, out[:300])
        expect('collectives: 2, 8 events' in out, out[:800])
    if not shutil.which('otf2-print'):
        emit(True, 'mpi_icoll --trace: export --otf2 # SKIP otf2-print is not installed')
        return
    with check('mpi_icoll --trace: export --otf2, otf2-print reads the non-blocking pairs'):
        e = run([SONDE, 'export', '--otf2', d])
        expect(e.returncode == 0, describe(e))
        c = otf2_print(os.path.join(d, 'otf2', 'traces.otf2'))
        eq([c.get(k) for k in ('NON_BLOCKING_COLLECTIVE_REQUEST',
                               'NON_BLOCKING_COLLECTIVE_COMPLETE', 'MPI_COLLECTIVE_BEGIN',
                               'MPI_COLLECTIVE_END')],
           [4 * ICOLL_PER_RANK, 4 * ICOLL_PER_RANK, 8, 8], 'MPI collective events')
