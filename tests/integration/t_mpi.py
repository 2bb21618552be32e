# SPDX-License-Identifier: MIT
# Integration tests of MPI programs (libsonde-mpi.so, tool/report_mpi.c; docs/mpi.md), run by
# run.py in its own namespace. 4 ranks under mpirun on this machine (shared memory, no network).

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_btl='self,vader', OMPI_MCA_rmaps_base_oversubscribe='1',
               OMPI_MCA_btl_vader_single_copy_mechanism='none')
MPIRUN = ['mpirun', '--oversubscribe', '--allow-run-as-root', '-np', '4']


def mpi_build(prog, instrument=True):
    """tests/programs/PROG.c with mpicc (through `sonde cc` when instrumented)."""
    key = ('mpi', prog, instrument)
    if key in BUILT:
        if BUILT[key] is None:
            raise Fail(f'{prog} did not build')
        return BUILT[key]
    out = os.path.join(TMP, 'bin', f'{prog}{"-instr" if instrument else "-plain"}')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = ['mpicc', '-O0', '-g', '-Wall', '-Wextra', '-o', out, os.path.join(PROGS, prog + '.c')]
    if instrument:
        cmd = [SONDE, 'cc', '--'] + cmd
    BUILT[key] = None
    with check(f'build {prog} with mpicc{" (sonde cc)" if instrument else ""}'):
        p = run(cmd, cwd=ROOT, env=MPI_ENV)
        expect(p.returncode == 0 and os.access(out, os.X_OK), f'{shlex.join(cmd)}: {describe(p)}')
    BUILT[key] = out
    return out


def mpirun(binary, opts=None, tag='mpi'):
    """4 ranks: plain (opts None) or each under `sonde run -o DIR OPTS`; (process, DIR)."""
    d = new_dir(tag)
    cmd = MPIRUN + ([binary] if opts is None else [SONDE, 'run', '-o', d] + opts + ['--', binary])
    return run(cmd, env=MPI_ENV, timeout=300), d


def ranks(js):
    expect('mpi' in js, 'report lacks "mpi"')
    return {r['rank']: r for r in js['mpi']['ranks']}


def routine(r, name):
    for x in r['routines']:
        if x['name'] == name:
            return x
    return {'calls': 0, 'ns': 0, 'comp_ns': 0, 'bytes_sent': 0, 'bytes_recv': 0}


def peers(r, direction):
    return {(p['peer'], p['tag']): (p['messages'], p['bytes'])
            for p in r['peers'] if p['dir'] == direction}


def known_counts(rk, n):
    """mpi_known.c's messages, exactly."""
    for r in range(4):
        x = rk[r]
        right, left = (r + 1) % 4, (r + 3) % 4
        sent = {(right, 7): (10, 4000), (right, 8): (8, 3200), (right, 3): (1, 80),
                (right, 4): (1, 80)}
        got = {(left, 7): (10, 4000), (left, 8): (8, 3200), (left, 3): (1, 80), (left, 4): (1, 80)}
        if r:
            sent[(0, 9)] = (1, 80 * r)
        else:
            got.update({(k, 9): (1, 80 * k) for k in (1, 2, 3)})
        eq(peers(x, 'sent'), sent, f'{n}: rank {r} sent per (peer, tag)')
        eq(peers(x, 'received'), got, f'{n}: rank {r} received per (peer, tag)')
        eq(routine(x, 'MPI_Send')['calls'], 10 if r == 0 else 11, f'{n}: rank {r} MPI_Send')
        eq(routine(x, 'MPI_Recv')['calls'], 13 if r == 0 else 10, f'{n}: rank {r} MPI_Recv')
        eq(routine(x, 'MPI_Recv')['bytes_recv'], 4000 + (480 if r == 0 else 0),
           f'{n}: rank {r} MPI_Recv bytes')
        eq(routine(x, 'MPI_Isend')['calls'], 8, f'{n}: rank {r} MPI_Isend')
        eq(routine(x, 'MPI_Irecv')['calls'], 8, f'{n}: rank {r} MPI_Irecv')
        eq(routine(x, 'MPI_Waitall')['calls'], 2, f'{n}: rank {r} MPI_Waitall')
        eq(routine(x, 'MPI_Waitany')['calls'], 4, f'{n}: rank {r} MPI_Waitany')
        nb = sum(routine(x, k)['bytes_recv'] for k in ('MPI_Waitall', 'MPI_Waitany', 'MPI_Test',
                                                       'MPI_Testsome'))
        eq(nb, 3200, f'{n}: rank {r} bytes of the 8 non-blocking receives, at their completion')
        eq(routine(x, 'MPI_Sendrecv')['bytes_recv'], 80, f'{n}: rank {r} MPI_Sendrecv')
        eq(routine(x, 'MPI_Probe')['calls'], 3 if r == 0 else 0, f'{n}: rank {r} MPI_Probe')
        eq(x['wildcard'], 3 if r == 0 else 0, f'{n}: rank {r} wildcard receives')
        for name, c in (('MPI_Barrier', 2), ('MPI_Bcast', 1), ('MPI_Gather', 1),
                        ('MPI_Gatherv', 1), ('MPI_Scatter', 1), ('MPI_Scatterv', 1),
                        ('MPI_Allgather', 1), ('MPI_Allgatherv', 1), ('MPI_Reduce', 2),
                        ('MPI_Allreduce', 1), ('MPI_Alltoall', 1), ('MPI_Alltoallv', 1),
                        ('MPI_Scan', 1), ('MPI_Init', 1), ('MPI_Finalize', 1)):
            eq(routine(x, name)['calls'], c, f'{n}: rank {r} {name}')
        eq(routine(x, 'MPI_Bcast')['bytes_recv'], 0 if r == 0 else 40, f'{n}: rank {r} Bcast in')


@test('')
def t_mpi_known(o):
    plain = mpi_build('mpi_known', instrument=False)
    pd, _ = mpirun(plain)
    with check('mpi_known: runs under mpirun'):
        expect(pd.returncode == 0 and b'checksum' in pd.stdout, describe(pd))
    for mode, opts in (('profile', []), ('piggyback', ['--mpi-comp'])):
        n = f'mpi_known ({mode})'
        p, d = mpirun(plain, opts, tag=f'mpi-{mode}')
        with check(f'{n}: output as a plain run (the data unaltered: checksum)'):
            eq(p.returncode, 0, 'exit status')
            eq(p.stdout, pd.stdout, 'stdout (the checksum of all received data)')
        with check(f'{n}: one profile per rank, ranks 0-3 of 4'):
            eq(len(profiles(d)), 4, 'profiles')
            js = report(d)
            rk = ranks(js)
            eq(sorted(rk), [0, 1, 2, 3], 'ranks')
            expect(all(r['size'] == 4 and r['finalized'] for r in rk.values()), 'size, finalized')
            eq(all(r['piggyback'] for r in rk.values()), mode == 'piggyback', 'piggyback flag')
        with check(f'{n}: exact messages, bytes, peers and calls'):
            known_counts(rk, n)
        with check(f'{n}: --rank 2 selects one process'):
            js2 = report(d, '--rank', '2')
            eq(len(js2['processes']), 1, 'processes')
            eq(list(ranks(js2)), [2], 'ranks')
            t = run([SONDE, 'report', '--mpi', d])
            expect(t.returncode == 0 and b'MPI_Alltoallv' in t.stdout and
                   b'Messages per peer' in t.stdout, describe(t))
            e = run([SONDE, 'report', '--rank', '9', d])
            expect(e.returncode == 1 and e.stderr.startswith(b'sonde: ') and
                   b'no MPI rank 9' in e.stderr, describe(e))


@test('')
def t_mpi_exclude(o):
    """--exclude under mpirun: every rank's sonde resolves the globs into a selection file of its
    own (a shared one was read half rewritten by another rank's sonde, and that rank measured
    every function: 9 of 12 runs of bench/mpi_pi.c); removed when the program is over."""
    b = mpi_build('mpi_known')
    p, d = mpirun(b, [], tag='mpi-all')
    with check('mpi_known (instrumented): mix() measured on every rank'):
        eq(p.returncode, 0, 'exit status')
        mix = {r: calls(report(d, '--rank', str(r)), 'mix') for r in range(4)}
        expect(all(n > 0 for n in mix.values()), f'calls of mix per rank {mix}')
    for k in range(3):  # the race lost in most runs: three runs make a regression show
        n = f'mpi_known --exclude mix (run {k + 1})'
        p, d = mpirun(b, ['--exclude', 'mix'], tag='mpi-exclude')
        with check(f'{n}: output as measured'):
            eq(p.returncode, 0, 'exit status')
            expect(b'checksum' in p.stdout, describe(p))
        with check(f'{n}: mix() unmeasured on every rank, each of its calls skipped'):
            for r in range(4):
                js = report(d, '--rank', str(r))
                eq(measured(js, 'mix'), 0, f'rank {r}: measured calls of mix')
                eq(proc(js)['unmeasured_probes'], mix[r], f'rank {r}: unmeasured probes')
            log = os.path.join(d, 'runtime.log')
            eq(open(log).read() if os.path.exists(log) else '', '', 'runtime.log')
        with check(f'{n}: no selection file left in the run directory'):
            eq([f for f in os.listdir(d) if f.startswith('select')], [], 'selection files')


def mpi_delay_insitu(js, rk, n, on):
    """--insitu's records of mpi_delay's ranks: with it, rank 1 prices its probes on work() (the
    calls its B windows left unmeasured returned); without, no record at all."""
    by_pid = {p['pid']: p for p in js['processes']}
    with check(f'{n}: {"an INSITU record on work() in rank 1" if on else "no INSITU record"}'):
        recs = {r: [t['insitu'] for t in by_pid[rk[r]['pid']]['threads'] if 'insitu' in t]
                for r in rk}
        if not on:
            eq(recs, {r: [] for r in rk}, 'INSITU records per rank')
            return 0
        hot = [x for x in recs[1] if x['function'] == 'work']
        eq(len(hot), 1, 'rank 1 threads pricing work()')
        expect(hot[0]['unmeasured_calls'] > 0 and hot[0]['unmeasured_calls'] % 1024 == 0,
               f'unmeasured calls {hot[0]["unmeasured_calls"]}')
        for r in (0, 2, 3):
            eq([x['function'] for x in recs[r] if x['function']], [], f'rank {r} hot functions')
        return hot[0]['unmeasured_calls']
    return 0


@test('')
def t_mpi_delay(o):
    b = mpi_build('mpi_delay')
    pd, _ = mpirun(b)
    # parallel: --mpi-comp --no-insitu, calibrated prices; parallel+insitu: --mpi-comp alone,
    # which measures the probes' price in situ (docs/mpi.md)
    for mode, opts in (('local', ['--throttle', 'off']),
                       ('parallel', ['--throttle', 'off', '--mpi-comp', '--no-insitu']),
                       ('parallel+insitu', ['--throttle', 'off', '--mpi-comp'])):
        n = f'mpi_delay ({mode})'
        p, d = mpirun(b, opts, tag=f'mpi-delay-{mode}')
        with check(f'{n}: output as a plain run'):
            eq(p.returncode, 0, 'exit status')
            eq(p.stdout, pd.stdout, 'stdout')
        js = report(d)
        rk = ranks(js)
        unmeasured = mpi_delay_insitu(js, rk, n, mode == 'parallel+insitu')
        o1 = rk[1]['overhead_ns']
        with check(f'{n}: rank 1 paid for 200000 measured calls, rank 0 almost nothing'):
            calib = js['processes'][0]['calibration']['o_full_ns'] \
                if 'calibration' in js['processes'][0] else None
            # (its probes at the start-up calibration's cost: a calibration upset by a loaded
            # machine can make it small, never nothing)
            expect(o1 > 0, f'rank 1 overhead {o1} ns')
            own0 = rk[0]['overhead_ns'] - rk[0]['extra_ns']  # the delay collectives: load
            expect(own0 * 20 < o1, f'rank 0 overhead {own0} ns (besides the delay collectives) '
                   f'against rank 1 {o1} ns (calibration {calib})')
            f = {x['name']: x for x in js['functions']}
            eq(f['work']['calls'] + unmeasured, 200000, 'work() calls (measured + unmeasured)')
        if mode == 'local':
            with check(f'{n}: without piggybacking parallel(c) is local(c)'):
                for r in rk.values():
                    eq(r['t_par_ns'], r['t_local_ns'], f'rank {r["rank"]}')
                    eq(r['waits'], 0, f'rank {r["rank"]} waits')
            continue
        mpi_delay_rules(rk, n)


def mpi_delay_rules(rk, n):
    """The receive and barrier rules (MODELS 2.4, docs/mpi.md) on mpi_delay's waits, from the
    report alone. Before the barrier each rank's delay is its overhead less its delay
    collective's time (the one after the barrier); rank 0's receive adds what it inherits. The
    ranks start MPI_Init's end milliseconds apart on a loaded machine, so a rank that came late
    to the barrier can set its delay below rank 1's: the rule says by how much, exactly."""
    tol = lambda v: 20000 + 0.01 * abs(v)
    pre = {r: k['overhead_ns'] - k['extra_ns'] for r, k in rk.items()}
    recv = routine(rk[0], 'MPI_Recv')
    with check(f'{n}: rank 0 inherits rank 1 delay at its receive (MODELS 2.4)'):
        # x_0' = min(x_0 + w, x_1): rank 1's delay, or only what rank 0 waited when it came late
        want = min(recv['ns'], pre[1] - pre[0])
        expect(pre[1] > 0, f'rank 1 delay before the barrier {pre[1]} ns')
        near(recv['ns'] - recv['comp_ns'], want, tol(want),
             f'rank 0 receive: waited {recv["ns"]} ns, rank 1 delay {pre[1]} ns, inherited')
        pre[0] += want
    with check(f'{n}: the barrier hands the delay on to ranks 2 and 3'):
        # every rank leaves with x' = min_i(x_i + w_i) - min_i(w_i), at most x_r + w_r
        w = {r: routine(k, 'MPI_Barrier')['ns'] for r, k in rk.items()}
        x = min(pre[r] + w[r] for r in rk) - min(w.values())
        expect(x >= 0, f'delay after the barrier {x} ns')
        for r, k in rk.items():
            xr = min(x, pre[r] + w[r])
            near(w[r] - routine(k, 'MPI_Barrier')['comp_ns'], xr - pre[r], tol(xr),
                 f'rank {r} barrier: waited {w[r]} ns, delay {pre[r]} ns, inherited')
            near(k['delay_ns'] - k['extra_ns'], xr, tol(xr), f'rank {r} final delay')
            eq(k['t_local_ns'] - k['t_par_ns'], k['delay_ns'] - k['overhead_ns'],
               f'rank {r} local(c) - parallel(c)')


@test('')
def t_mpi_comp_insitu(o):
    """--mpi-comp turns --insitu on (what the program's environment gets), but with --no-insitu
    or --trace; --insitu with --no-insitu is refused in one line (exit 2, as other bad
    options)."""
    show = ['sh', '-c', 'echo "insitu=${SONDE_INSITU:-} comp=${SONDE_MPI_COMP:-}"']
    for opts, want in ((['--mpi-comp'], b'insitu=1 comp=1'),
                       (['--mpi-comp', '--no-insitu'], b'insitu= comp=1'),
                       (['--mpi-comp', '--trace'], b'insitu= comp=1'),
                       (['--mpi'], b'insitu= comp=')):
        with check(f'sonde run {" ".join(opts)}: {want.decode()}'):
            p = run([SONDE, 'run', '-o', new_dir('mpi-insitu-opt')] + opts + ['--'] + show)
            eq((p.returncode, p.stdout.strip()), (0, want), 'exit status, environment')
    with check('sonde run --insitu --no-insitu: refused in one line'):
        p = run([SONDE, 'run', '-o', new_dir('mpi-insitu-opt'), '--mpi-comp', '--insitu',
                 '--no-insitu', '--', 'true'])
        expect(p.returncode == 2 and p.stderr.startswith(b'sonde: ') and
               b'--no-insitu' in p.stderr and len(p.stderr.splitlines()) == 1, describe(p))


@test('')
def t_mpi_errors(o):
    with check('mpi: a corrupt MPI_COMP record is refused with one line'):
        plain = mpi_build('mpi_known', instrument=False)
        p, d = mpirun(plain, ['--mpi-comp'], tag='mpi-corrupt')
        f = os.path.join(d, profiles(d)[0])
        data = bytearray(open(f, 'rb').read())
        i = data.find((17).to_bytes(4, 'little') + (144).to_bytes(4, 'little'))
        expect(i > 0, 'MPI_COMP record in the file')
        data[i + 8:i + 12] = (7).to_bytes(4, 'little')  # rank 7 of 4
        open(f, 'wb').write(bytes(data))
        e = run([SONDE, 'report', d])
        expect(e.returncode == 1 and e.stderr.startswith(b'sonde: ') and
               b'MPI_COMP' in e.stderr and len(e.stderr.splitlines()) == 1, describe(e))


@test('')
def t_mpi_paths(o):
    """Persistent requests, matched probes, a cancelled receive, non-blocking collectives and
    one-sided communication (tests/programs/mpi_paths.c): data and counts as in a plain run, with
    and without piggybacking; exact messages where the wrappers follow them."""
    plain = mpi_build('mpi_paths', instrument=False)
    pd, _ = mpirun(plain)
    with check('mpi_paths: runs under mpirun, its own checks pass'):
        expect(pd.returncode == 0 and b'errors 0 cancelled 1' in pd.stdout, describe(pd))
    for mode, opts in (('profile', []), ('piggyback', ['--mpi-comp'])):
        n = f'mpi_paths ({mode})'
        p, d = mpirun(plain, opts, tag=f'mpi-paths-{mode}')
        with check(f'{n}: output as a plain run (data, MPI_Get_count, cancellation unaltered)'):
            eq(p.returncode, 0, 'exit status')
            eq(p.stdout, pd.stdout, 'stdout')
        rk = ranks(report(d))
        with check(f'{n}: exact messages and bytes of the persistent and matched paths'):
            eq(sorted(rk), [0, 1, 2, 3], 'ranks')
            for r, x in rk.items():
                right, left = (r + 1) % 4, (r + 3) % 4
                eq(peers(x, 'sent'), {(right, 21): (5, 200), (right, 31): (1, 56),
                                      (right, 32): (1, 12)}, f'rank {r} sent')
                eq(peers(x, 'received'), {(left, 21): (5, 200), (left, 31): (1, 56),
                                          (left, 32): (1, 12)}, f'rank {r} received '
                   '(the cancelled receive not among them)')
                eq(routine(x, 'MPI_Start')['calls'], 4, f'rank {r} MPI_Start')
                eq(routine(x, 'MPI_Startall')['calls'], 3, f'rank {r} MPI_Startall')
                eq(routine(x, 'MPI_Start')['bytes_sent'] +
                   routine(x, 'MPI_Startall')['bytes_sent'], 200, f'rank {r} bytes started')
                eq(routine(x, 'MPI_Waitall')['bytes_recv'], 200, f'rank {r} persistent received')
                eq(routine(x, 'MPI_Mprobe')['calls'], 1, f'rank {r} MPI_Mprobe')
                expect(routine(x, 'MPI_Improbe')['calls'] >= 1, f'rank {r} MPI_Improbe')
                eq(routine(x, 'MPI_Mrecv')['bytes_recv'], 56, f'rank {r} MPI_Mrecv bytes')
                eq(routine(x, 'MPI_Imrecv')['calls'], 1, f'rank {r} MPI_Imrecv')
                eq(routine(x, 'MPI_Wait')['bytes_recv'], 12, f'rank {r} MPI_Imrecv completed')
                eq(x['wildcard'], 1, f'rank {r} wildcard receives (Improbe any source)')
                eq(x['piggyback'], mode == 'piggyback', f'rank {r} piggyback flag')


def pb_type_lines(d):
    """runtime.log's piggyback type table lines, one per rank (libsonde-mpi.so at MPI_Finalize)."""
    log = os.path.join(d, 'runtime.log')
    text = open(log).read() if os.path.exists(log) else ''
    pat = re.compile(r'mpi: piggyback types: built (\d+), reused (\d+), evicted (\d+), '
                     r'dropped (\d+), failed (\d+)')
    return [tuple(int(x) for x in m.groups()) for m in pat.finditer(text)]


@test('')
def t_mpi_pbtypes(o):
    """The piggyback's type table (runtime/mpi/mpi_pbtypes.c; tests/programs/mpi_pbtypes.c):
    data unaltered with and without piggybacking, and per rank the exact counts of types made,
    reused, replaced and dropped with the program's freed types."""
    plain = mpi_build('mpi_pbtypes', instrument=False)
    # per mode: lookups per rank, and the table's counts (built, reused, evicted, dropped)
    # that a right table gives; None: checked below by relations
    want = {'hit': (200, (4, 196, 0, 0)), 'churn': (1800, None), 'free': (80, (80, 0, 0, 80))}
    for mode, (lookups, counts) in want.items():
        pd = run(MPIRUN + [plain, mode], env=MPI_ENV, timeout=300)
        with check(f'mpi_pbtypes {mode}: runs under mpirun, every value as sent'):
            expect(pd.returncode == 0 and f'{mode} errors 0 sum'.encode() in pd.stdout,
                   describe(pd))
        for opts in ([], ['--mpi-comp']):
            n = f'mpi_pbtypes {mode} ({"piggyback" if opts else "profile"})'
            d = new_dir(f'mpi-pbt-{mode}')
            p = run(MPIRUN + [SONDE, 'run', '-o', d] + opts + ['--', plain, mode], env=MPI_ENV,
                    timeout=300)
            with check(f'{n}: output as a plain run (the data unaltered)'):
                eq(p.returncode, 0, 'exit status')
                eq(p.stdout, pd.stdout, 'stdout (errors and sum of the values received)')
            lines = pb_type_lines(d)
            if not opts:
                with check(f'{n}: no piggyback types without --mpi-comp'):
                    eq(lines, [], 'runtime.log lines')
                continue
            with check(f'{n}: the type table per rank'):
                eq(len(lines), 4, 'ranks that logged their table')
                for built, reused, evicted, dropped, failed in lines:
                    eq(failed, 0, 'types the library refused')
                    eq(built + reused, lookups, 'lookups (one per piggybacked buffer)')
                    if counts:
                        eq((built, reused, evicted, dropped), counts,
                           'built, reused, evicted, dropped')
                    else:  # more keys than the table's 128 entries: every set full at the end
                        expect(built >= 1500, f'built {built}: 1500 distinct buffers and more')
                        eq(evicted, built - 128, 'evicted (all but the 128 the table holds)')
                        eq(dropped, 0, 'dropped')
