# SPDX-License-Identifier: MIT
# Integration tests of `sonde run --sync` (runtime/sync_*.c, tool/report_sync.c), run by run.py
# in its own namespace (it executes tests/integration/t_*.py before the tests start).


def sync_objs(js, kind=None):
    """The report's synchronization objects by name (of one kind), in the report's order."""
    expect('sync' in js, 'report lacks "sync" (run with --sync)')
    objs = [o for o in js['sync']['objects'] if kind is None or o['kind'] == kind]
    return {o['name']: o for o in objs}, objs


def line_of(prog, text):
    """The line of tests/programs/PROG.c that holds TEXT (first)."""
    with open(os.path.join(PROGS, prog + '.c')) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise Fail(f'{text!r} not in {prog}.c')


def counts(o, *keys):
    return tuple(o[k] for k in keys)


KEYS = ('acquires', 'shared', 'busy', 'timeouts', 'releases')


def printed(p, lines):
    """Every one of LINES is in the program's output."""
    out = p.stdout.decode()
    for s in lines:
        expect(s in out, f'{s!r} not in the output: {out!r}')


@test('-O0', '-O2')
def t_sync_hot(o):
    name = f'sync_hot{o}'
    b = build('sync_hot', o)
    p, d = srun(b, opts=['--sync'])
    with check(f'{name}: output and status as a direct run'):
        same_output(p, direct(b))
    js = report(d)
    with check(f'{name}: report consistent'):
        sanity(js)
    with check(f'{name}: hot_lock singled out by name, first by wait time'):
        by, objs = sync_objs(js, 'mutex')
        eq(objs[0]['name'], 'hot_lock', 'most waited-for mutex')
        expect(objs[0]['contended'] >= 1, f'hot_lock contended {objs[0]["contended"]} (main '
               'holds it while the 4 workers come to it)')
        expect(objs[0]['wait_ns'] >= 10e6, f'hot_lock wait {objs[0]["wait_ns"]} ns')
        for other in objs[1:]:
            expect(other['wait_ns'] * 10 < objs[0]['wait_ns'],
                   f'{other["name"]} waited {other["wait_ns"]} ns, hot_lock {objs[0]["wait_ns"]}')
    with check(f'{name}: exact operation counts'):
        by, _ = sync_objs(js, 'mutex')
        eq(counts(by['hot_lock'], 'acquires', 'releases', 'busy', 'timeouts'), (8001, 8001, 0, 0),
           'hot_lock acquires, releases, busy, timeouts')
        for k in range(8):
            eq(counts(by[f'cold_locks[{k}]'], 'acquires', 'releases'), (40, 40), f'cold_locks[{k}]')
        eq(counts(by['quiet_lock'], 'acquires', 'releases'), (4, 4), 'quiet_lock (a static)')
        heap = f'initialised at main (sync_hot.c:{line_of("sync_hot", "pthread_mutex_init(")})'
        expect(heap in by, f'heap mutex named by its init site {heap!r}; names: {sorted(by)}')
        eq(counts(by[heap], 'acquires', 'releases', 'init_site'), (4, 4, 1), 'heap mutex')
        threads, _ = sync_objs(js, 'thread')
        eq(sorted(t['acquires'] for t in threads.values()), [1, 1, 1, 1], 'joins')
        expect(by['hot_lock']['hold_samples'] > 0 and by['hot_lock']['hold_ns'] > 0,
               'hot_lock hold time sampled')
    with check(f'{name}: text report and CSV rank hot_lock first'):
        t = run([SONDE, 'report', '--sync', d])
        expect(t.returncode == 0, describe(t))
        rows = [l for l in t.stdout.decode().splitlines() if ' mutex ' in l]
        expect(rows and rows[0].rstrip().endswith('hot_lock'), f'first mutex row {rows[:1]}')
        c = run([SONDE, 'report', '--sync', '--csv', d])
        recs = list(csv.DictReader(io.StringIO(c.stdout.decode())))
        mut = [r for r in recs if r['kind'] == 'mutex']
        eq((mut[0]['name'], mut[0]['acquires']), ('hot_lock', '8001'), 'first CSV mutex row')
    with check(f'{name}: compensation per thread and process'):
        sy = js['sync']
        eq(len(sy['threads']), 5, 'threads with compensation')
        eq(len(sy['processes']), 1, 'processes with compensation')
        pr = sy['processes'][0]
        expect(0 < pr['T_par_ns'] <= pr['T_m_ns'], f'T_par {pr["T_par_ns"]} T_m {pr["T_m_ns"]}')
        for t in sy['threads']:
            expect(t['local_c_ns'] <= t['T_m_ns'], f'thread {t["thread"]}: local above T_m')
            expect(t['wait_c_ns'] >= 0, f'thread {t["thread"]}: negative approximated wait')


@test('-O0')
def t_sync_kinds(o):
    name = f'sync_kinds{o}'
    b = build('sync_misc', o)
    pd = direct(b)
    p, d = srun(b, opts=['--sync'])
    with check(f'{name}: output and status as a direct run (errno, ETIMEDOUT, EBUSY, cancel)'):
        same_output(p, pd)
        printed(p, ['mutex timedlock: ETIMEDOUT', 'rwlock timedwrlock: ETIMEDOUT',
                    'sem timedwait: -1 ETIMEDOUT', 'cond timedwait: ETIMEDOUT',
                    'mutex trylock: EBUSY', 'spin trylock: EBUSY', 'rwlock trywrlock: EBUSY',
                    'sem: wait 0 errno kept 1234', 'trywait -1 errno EAGAIN',
                    'cleanup handler ran', 'victim cancelled', 'consumer sum 5050'])
    js = report(d)
    by, _ = sync_objs(js)
    keys = KEYS
    with check(f'{name}: barrier'):
        eq(by['phase_barrier']['kind'], 'barrier', 'kind')
        eq(by['phase_barrier']['acquires'], 15, 'barrier waits (3 threads x 5 rounds)')
        expect(by['phase_barrier']['wait_ns'] > 0, 'the imbalanced barrier was waited for')
    with check(f'{name}: condition variables'):
        eq(counts(by['not_empty'], 'releases', 'timeouts'), (100, 1), 'not_empty signals, timeouts')
        eq(by['not_full']['releases'], 100, 'not_full signals')
        eq(by['not_empty']['contended'], by['not_empty']['acquires'] + 1,
           'not_empty waits begun = woken + timed out')
        eq(counts(by['queue_lock'], 'acquires', 'releases'), (201, 201), 'queue_lock')
        eq(counts(by['never_cond'], 'contended', 'acquires'), (1, 0), 'cancelled wait')
    with check(f'{name}: semaphores'):
        eq(counts(by['items_sem'], *keys), (50, 0, 0, 0, 50), 'items_sem')
        eq(counts(by['empty_sem'], *keys), (1, 0, 1, 0, 1), 'empty_sem')
        eq(counts(by['held_sem'], *keys), (1, 0, 0, 1, 1), 'held_sem')
    with check(f'{name}: timed out and busy locks'):
        eq(counts(by['held_lock'], *keys), (1, 0, 1, 1, 1), 'held_lock')
        eq(counts(by['table_lock'], *keys), (1, 3, 1, 1, 4), 'table_lock')
        eq(counts(by['spin'], *keys), (1, 0, 1, 0, 1), 'spin')
        eq(counts(by['cancel_lock'], 'acquires'), (2,), 'cancel_lock')


@test('-O0')
def t_sync_clock(o):
    name = 'sync_clock'
    b = build('sync_clock', o)
    pd = direct(b)
    p, d = srun(b, opts=['--sync'], tag='syncclock')
    with check(f'{name}: output and status as a direct run (EINVAL, ETIMEDOUT, EBUSY, cancel)'):
        same_output(p, pd)
        printed(p, ['mutex clocklock bad clock: EINVAL', 'mutex clocklock free, bad ns: 0',
                    'rwlock clockrdlock free, bad ns: EINVAL',
                    'rwlock timedrdlock free, bad ns: EINVAL',
                    'rwlock timedwrlock free, bad ns: EINVAL',
                    'mutex clocklock held: ETIMEDOUT', 'rwlock clockwrlock held: ETIMEDOUT',
                    'cond clockwait: ETIMEDOUT', 'cond clockwait signalled: 0',
                    'cleanup handler ran', 'victim cancelled',
                    'sem timedwait full, bad ns: -1 EINVAL',
                    'sem clockwait full: 0 errno kept 1234',
                    'sem clockwait empty: -1 ETIMEDOUT', 'tryjoin running: EBUSY',
                    'timedjoin running: ETIMEDOUT', 'clockjoin running: ETIMEDOUT',
                    'clockjoin: 0 42', 'tryjoin ended: 0 7', 'timedjoin: 0 8'])
    js = report(d)
    by, _ = sync_objs(js)
    keys = KEYS
    with check(f'{name}: clocked locks counted, rejected deadlines not'):
        eq(counts(by['clk_mutex'], *keys), (3, 0, 0, 1, 3), 'clk_mutex')
        eq(counts(by['clk_rwlock'], *keys), (2, 1, 0, 2, 3), 'clk_rwlock')
    with check(f'{name}: clocked waits'):
        eq(counts(by['clk_cond'], 'contended', 'acquires', 'timeouts'), (2, 1, 1), 'clk_cond')
        eq(counts(by['cancel_cond'], 'contended', 'acquires'), (1, 0), 'cancelled clockwait')
        eq(counts(by['clk_sem'], *keys), (2, 0, 0, 1, 1), 'clk_sem')
    with check(f'{name}: every join that returned 0 (7), none that did not'):
        threads, _ = sync_objs(js, 'thread')
        eq(sum(t['acquires'] for t in threads.values()), 7, 'joins over thread objects')


def join_waits(p, rep):
    """The waits of main's two joins (ns), from the thread objects named by the pthread_t values
    sync_join prints on stderr: (slow, quick), or None."""
    m = re.search(rb'slow (0x[0-9a-f]+) quick (0x[0-9a-f]+)', p.stderr)
    if not m:
        return None
    w = {ob['name']: ob['wait_ns'] for ob in rep['objects'] if ob['kind'] == 'thread'}
    return w.get('thread ' + m[1].decode()), w.get('thread ' + m[2].decode())


def delay_slack(slow):
    """How much more than the slow thread's delay main may inherit (ns): main's own few calls
    and the quick join's wait."""
    return 0.01 * slow['delay_ns'] + 100000


def delay_close(main, slow):
    return -1000 <= main['delay_ns'] - slow['delay_ns'] <= delay_slack(slow)


@test('-O0')
def t_sync_join_late(o):
    """The order the late-join rule is for: main waits for the slow thread (its join waits at
    least the slow thread's delay), then joins the quick one, ended long before, at once. A
    loaded machine can deschedule main anywhere (the join of the slow thread then waits less, or
    that of the quick one more, or the quick thread starts so late that unmeasured main would
    have waited for it too), and the rule rightly gives other delays: such runs are tried again,
    five in all, as is a run whose main inherits more than the bound (the last such run is
    checked)."""
    name = 'sync_join_late'
    b = build('sync_join', o)
    ordered = None
    for attempt in range(5):
        # one calibrated price for every thread (--no-insitu): the delays compared are counts
        # of calls at that price
        p, d = srun(b, opts=['--sync', '--no-insitu', '--throttle', 'off'], tag='syncjoin')
        with check(f'{name}: output as a direct run'):
            same_output(p, direct(b), stderr=False)
        rep = report(d)['sync']
        th = {t['thread']: t for t in rep['threads']}
        waits = None
        with check(f'{name}: three threads, the slow one paid for its calls'):
            eq(sorted(th), [0, 1, 2], 'threads with compensation')
            slow, quick = sorted((th[1], th[2]), key=lambda t: -t['overhead_ns'])
            expect(slow['overhead_ns'] > 100 * quick['overhead_ns'],
                   f'overheads: slow {slow["overhead_ns"]} ns, quick {quick["overhead_ns"]} ns')
            waits = join_waits(p, rep)
            expect(waits and None not in waits, f'join waits {waits} ({p.stderr[:200]!r})')
        if sorted(th) != [0, 1, 2] or not waits or None in waits:
            return
        w_slow, w_quick = waits
        m = re.search(rb'quick ended (-?\d+) ns before', p.stderr)
        before = int(m[1]) if m else 0
        # main's second join begins x_slow earlier unmeasured: the quick thread must have ended
        # before that too, else the late-join rule rightly lowers main's delay
        if w_slow >= slow['delay_ns'] and w_quick < 100000 and before > 1.1 * slow['delay_ns']:
            ordered = (th, slow, quick, w_slow, w_quick)
            # main inherits 11-40 us more than the slow thread's delay when idle; once, in a
            # whole make check, 604 us (cause not found; a wall-time part charged under load):
            # such a run is tried again, and the last ordered one is checked whatever it says
            if delay_close(th[0], slow) or attempt == 4:
                break
            print(f'# {name}: main delay {th[0]["delay_ns"]} ns, slow thread {slow["delay_ns"]}'
                  f' ns: run again')
            continue
        print(f'# {name}: joins waited {w_slow} and {w_quick} ns, the quick thread ended {before}'
              f' ns before the second (slow thread delay {slow["delay_ns"]} ns): main descheduled'
              f' or the quick thread late, run again')
    else:
        if ordered is None:
            print(f'# {name}: main descheduled or the quick thread late in 5 runs: delays not'
                  f' checked')
            return
    th, slow, quick, w_slow, w_quick = ordered
    with check(f'{name}: the join of a long-ended thread keeps the delay of the one before'):
        # taken as if the quick thread's end had ended the wait, main's delay would be the
        # quick thread's
        expect(th[0]['delay_ns'] > slow['delay_ns'] / 2,
               f'main delay {th[0]["delay_ns"]} ns, slow thread {slow["delay_ns"]} ns, quick '
               f'{quick["delay_ns"]} ns')
    with check(f'{name}: main inherits the slow thread\'s delay at the same probe price'):
        # the report prices the probe pairs of both at the run's final costs (docs/measurement.md
        # "Which costs"), so they agree to the ns but for main's own few calls and the quick
        # join's wait; with the start-up costs left in main's inherited delay they differed by
        # the change of calibration during the run (up to a third under load)
        between(th[0]['delay_ns'] - slow['delay_ns'], -1000, delay_slack(slow),
                f'main delay {th[0]["delay_ns"]} ns - slow thread {slow["delay_ns"]} ns (joins '
                f'waited {w_slow} and {w_quick} ns)')


def inherit_pairs(rep):
    """sync_inherit's (kind, waiter, releaser) threads: a pair's two threads start with main's
    delay at their creation (the same delay0); its releaser has the most overhead; the kind by
    the releaser's calls: 30,000 (sem), 90,000 (rwlock), 120,000 (cond)."""
    by_x0 = {}
    for t in rep['threads']:
        if t['thread'] != 0:
            by_x0.setdefault(t['delay0_ns'], []).append(t)
    pairs = [sorted(p, key=lambda t: t['overhead_ns']) for p in by_x0.values()]
    pairs.sort(key=lambda p: p[1]['overhead_ns'])
    return [(k, p[0], p[1]) for k, p in zip(('sem', 'rwlock', 'cond'), pairs)], pairs


@test('-O0')
def t_sync_inherit(o):
    """A condition variable, a semaphore and an rwlock pass the releaser's delay to the waiter
    (tests/programs/sync_inherit.c): after its wait each of the three waiters, with almost no
    probes of its own, has the delay its releaser released with, which is the releaser's final
    delay. The condition waiter needed the signal and then the unlock, 60,000 calls later: it
    must have the unlock's delay (the signal's is about half of it). The rule rightly gives
    another delay when a waiter began its wait after the release in approximated time (its wait
    shorter than the releaser's delay growth: a loaded machine descheduled it): such runs, and
    runs with a waiter late, are tried again, five in all."""
    name = 'sync_inherit'
    b = build('sync_inherit', o)
    for attempt in range(5):
        # one calibrated price for every thread (--no-insitu): the overheads compared are
        # counts of calls at that price
        p, d = srun(b, opts=['--sync', '--no-insitu', '--throttle', 'off'], tag='syncinherit')
        with check(f'{name}: output as a direct run'):
            same_output(p, direct(b), stderr=False)
        rep = report(d)['sync']
        kinds, pairs = inherit_pairs(rep)
        with check(f'{name}: three pairs, each a releaser that paid for its calls'):
            eq([len(p) for p in pairs], [2, 2, 2], 'threads per pair')
            r = [rel['overhead_ns'] for _, _, rel in kinds]
            expect(r[0] > 100 * max(w['overhead_ns'] for _, w, _ in kinds),
                   f'overheads: releasers {r} ns')
            between(r[1] / r[0], 2.5, 3.5, f'rwlock over sem releaser overhead ({r})')
            between(r[2] / r[0], 3.5, 4.5, f'cond over sem releaser overhead ({r})')
        early = all(w['wait_ns'] > rel['delay_ns'] - rel['delay0_ns'] for _, w, rel in kinds)
        if b'late' not in p.stderr and early:
            break
        print(f'# {name}: {p.stderr.decode().strip()} waits '
              f'{[(k, w["wait_ns"], rel["delay_ns"] - rel["delay0_ns"]) for k, w, rel in kinds]}'
              f' (wait, releaser delay growth): run again')
    else:
        print(f'# {name}: a waiter late in 5 runs: delays not checked')
        return
    with check(f'{name}: each waiter has its releaser\'s delay'):
        for kind, w, rel in kinds:
            x = rel['delay_ns']
            between(w['delay_ns'] - x, -0.01 * x - 100000, 0.01 * x + 100000,
                    f'{kind}: waiter delay {w["delay_ns"]} ns, releaser {x} ns')
    with check(f'{name}: the condition waiter waited for the unlock, not only the signal'):
        # with the signal's delay it would have about half of its releaser's growth
        _, w, rel = kinds[2]
        expect(w['delay_ns'] - w['delay0_ns'] > 0.75 * (rel['delay_ns'] - rel['delay0_ns']),
               f'cond waiter delay {w["delay_ns"]} ns, releaser {rel["delay_ns"]} ns')


@test()
def t_sync_insitu_default(o):
    """--sync turns --insitu on (a priced record per thread), but with --no-insitu (or --trace:
    t_sync_trace records with --trace --sync, which --insitu would refuse)."""
    b = build('threads', '-O0')
    for opts, has in ((['--sync'], True), (['--sync', '--no-insitu'], False), ([], False)):
        with check(f'sync insitu default: {" ".join(opts)}: in-situ records {has}'):
            p, d = srun(b, opts=opts, tag='sync-insitu')
            same_output(p, direct(b))
            ths = proc(report(d))['threads']
            eq([('insitu' in t) for t in ths], [has] * 5, 'threads with an in-situ record')


@test()
def t_sync_off(o):
    b = build('sync_misc', '-O0')
    p, d = srun(b)
    with check('sync_off: without --sync, no sync section and the same output'):
        same_output(p, direct(b))
        js = report(d)
        expect('sync' not in js, 'a "sync" key without --sync')


@test()
def t_sync_trace(o):
    name = 'sync_trace'
    b = build('sync_misc', '-O0')
    pd = direct(b)
    p, d = srun(b, opts=['--trace', '--sync'], tag='synctrace')
    with check(f'{name}: output and status as a direct run'):
        same_output(p, pd)
    _, dp = srun(b, opts=['--sync'], tag='syncprof')
    js = report(dp)
    files = traces(d)
    with check(f'{name}: one SYNC_RELEASE per release, DEF_SYNC for each object'):
        eq(len(files), 1, 'trace files')
        t = run([SONDE, 'trace', 'dump', os.path.join(d, files[0])])
        expect(t.returncode == 0, describe(t))
        text = t.stdout.decode()
        objs = [x for x in js['sync']['objects'] if x['kind'] != 'thread']
        want = sum(x['releases'] + x['broadcasts'] for x in objs if x['kind'] != 'barrier')
        want += sum(x['acquires'] for x in objs if x['kind'] == 'barrier')
        eq(len(re.findall(r' SYNC_RELEASE ', text)), want,
           'SYNC_RELEASE events (releases and barrier arrivals of the profile run)')
        m = re.search(r'sync +(\d+) objects', text)
        expect(m, 'dump lists the sync objects')
        eq(int(m.group(1)), len(objs), 'DEF_SYNC records (every object of the profile run)')
        waits = len(re.findall(r' SYNC_WAIT ', text))
        dones = len(re.findall(r' SYNC_DONE ', text))
        expect(0 < dones <= waits, f'{dones} SYNC_DONE after {waits} SYNC_WAIT')
    with check(f'{name}: sonde analyze follows synchronization edges'):
        a = run([SONDE, 'analyze', d])
        expect(a.returncode == 0, describe(a))
        m = re.search(r'(\d+) synchronization', a.stdout.decode())
        expect(m and int(m.group(1)) > 0, f'no synchronization edges: {a.stdout.decode()[-400:]}')
    with check(f'{name}: exports and report still work'):
        for opts in (['--chrome', '-o', os.path.join(d, 'x.json')],
                     ['--otf2', '-o', os.path.join(d, 'otf2')]):
            x = run([SONDE, 'export'] + opts + [d])
            expect(x.returncode == 0, f'export {opts[0]}: {describe(x)}')
        report(d)


@test()
def t_sync_table_full(o):
    name = 'sync_table_full'
    b = build('sync_many', '-O0')
    p, d = srun(b, opts=['--sync'], tag='syncmany')
    with check(f'{name}: output as a direct run'):
        same_output(p, direct(b))
    with check(f'{name}: objects beyond the table counted in the overflow entry, totals exact'):
        c = run([SONDE, 'report', '--sync', '--csv', d])
        expect(c.returncode == 0, describe(c))
        recs = [r for r in csv.DictReader(io.StringIO(c.stdout.decode())) if r['kind'] == 'mutex']
        eq(sum(int(r['acquires']) for r in recs), 70010, 'acquisitions over all mutexes')
        eq(sum(int(r['releases']) for r in recs), 70010, 'releases over all mutexes')
        over = [r for r in recs if 'table was full' in r['name']]
        eq(len(over), 1, 'overflow entries')
        expect(0 < int(over[0]['acquires']) < 70000, f'overflow entry {over[0]}')
        expect(len(recs) > 60000, f'{len(recs)} mutexes listed')


@test('-O0')
def t_sync_rule_collide(o):
    """SONDE_SYNC_RULE=collide (a diagnostic switch of the wait rule, docs/measurement.md
    "Collisions"): the program behaves as alone, runtime.log says what the start-up calibration
    found (or why it found nothing) and counts every contended mutex wait in one of the rule's
    four cases; without the switch the log says nothing of it."""
    name = 'sync_rule_collide'
    b = build('sync_hot', o)
    d = new_dir('collide')
    p = run([SONDE, 'run', '-o', d, '--sync', '--', b],
            env=dict(os.environ, SONDE_SYNC_RULE='collide'))
    with check(f'{name}: output and status as a direct run'):
        same_output(p, direct(b))
    log = ''
    with check(f'{name}: the calibration and the cases in runtime.log'):
        with open(os.path.join(d, 'runtime.log')) as f:
            log = f.read()
        cal = re.search(r'rule collide: (s (\d+) ns, c (\d+) ns, l (\d+) ns|no collision '
                        r'measured|a wake-up costs less)', log)
        expect(cal, f'no calibration line in runtime.log: {log!r}')
        if cal and cal[2]:
            s, c, l = int(cal[2]), int(cal[3]), int(cal[4])
            expect(0 < s and 2 * c <= l, f'calibration s {s} c {c} l {l} ns')
    with check(f'{name}: every contended mutex wait counted once'):
        m = re.search(r'mutex waits free (\d+) \([-+]\d+ ns\), followed (\d+) \([-+]\d+ ns\), '
                      r'slept (\d+) \([-+]\d+ ns\), would sleep (\d+)', log)
        expect(m, f'no count line in runtime.log: {log!r}')
        _, objs = sync_objs(report(d), 'mutex')
        eq(sum(int(v) for v in m.groups()), sum(ob['contended'] for ob in objs),
           'waits in the four cases vs contended mutex acquisitions')
        expect(int(m[1]) + int(m[2]) + int(m[3]) + int(m[4]) > 0, 'no contended wait')
    p2, d2 = srun(b, opts=['--sync'], tag='woken')
    with check(f'{name}: the default rule logs nothing of it'):
        same_output(p2, direct(b))
        lp = os.path.join(d2, 'runtime.log')
        text = open(lp).read() if os.path.exists(lp) else ''
        expect('rule collide' not in text, f'runtime.log: {text!r}')


CXX_PHASE = {'hot': 1000, 'app::queue_lock': 100, '(anonymous namespace)::anon_lock': 7,
             'S::m': 7, 'tick()::local': 7}  # per thread and phase (tests/programs/cxx_sync.cc)


@test()
def t_cxx_sync(o):
    """C++ sync objects (std::mutex, recursive_mutex, shared_mutex, condition_variable) named
    as the source spells them: file scope, namespaces, a class's static, a function's static;
    exact counts over two phases of two threads."""
    b = build_flags('cxx_sync.cc', '-O0', instrumented=True)
    p, d = srun(b, opts=['--sync'], stdin=b'a\nb\n')
    with check('cxx_sync: output and status as a direct run'):
        same_output(p, direct(b, stdin=b'a\nb\n'), stderr=False)
    js = report(d)
    with check('cxx_sync: the objects by their C++ names, exact counts'):
        by, _ = sync_objs(js)
        for name, n in CXX_PHASE.items():
            eq(counts(by[name], 'kind', 'acquires', 'releases'), ('mutex', 4 * n, 4 * n), name)
        eq(counts(by['rec'], 'kind', 'acquires'), ('mutex', 4 * 7 * 2), 'rec (recursively)')
        eq(counts(by['rw'], 'kind', 'acquires', 'shared'), ('rwlock', 4, 4 * 7), 'rw')
        eq(by['cv']['kind'], 'cond', 'cv')
        expect(not [n for n in by if n.startswith('_Z')], f'mangled names: {sorted(by)}')


@test('-O2')
def t_sync_wake_unneeded(o):
    """A wake-up only the measurement causes goes into the waker's delay (tests/programs/
    wake_unneeded.c, runtime/sync_wrap.c mutex_wake): main holds a mutex for 600,000 calls of an
    empty function while its waiter, after 5 ms of uninstrumented work, sleeps on it; without
    the probes main would have released before the waiter came (main preempted for 5 ms of its
    hold would make it the program's). Main's unlock is counted as such a wake-up, and the
    waiter's wait is judged free, by the same line. Holding it for 12 ms of work instead, the
    wake-up is the program's. A waiter that came too late to sleep (a
    loaded machine) makes the run go again, five in all."""
    b = build('wake_unneeded', o)
    for mode, unneeded in (('probes', 1), ('work', 0)):
        for attempt in range(5):
            p, d = srun(b, args=[mode], opts=['--sync', '--no-insitu', '--throttle', 'off'],
                        tag='wake-' + mode)
            with check(f'wake_unneeded {mode}: output as a direct run'):
                same_output(p, direct(b, [mode]))
            th = {t['thread']: t for t in report(d)['sync']['threads']}
            if th[1]['waits'] == 1 and th[1]['wait_ns'] > 1000000:
                break
            print(f'# wake_unneeded {mode}: the waiter did not sleep ({th[1]}): run again')
        else:
            print(f'# wake_unneeded {mode}: the waiter never slept in 5 runs: not checked')
            continue
        with check(f'wake_unneeded {mode}: {unneeded} wake-up caused by the measurement'):
            eq(th[0]['wakes_unneeded'], unneeded, 'main\'s wakes_unneeded')
            eq(th[1]['wakes_unneeded'], 0, 'the waiter\'s (it woke nobody)')
            if unneeded:
                eq(th[1]['wait_c_ns'], 0, 'the waiter\'s wait, judged free')
            else:
                near(th[1]['wait_c_ns'], th[1]['wait_ns'], 1, 'the waiter\'s wait, kept')
