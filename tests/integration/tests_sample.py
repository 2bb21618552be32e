# SPDX-License-Identifier: MIT
# Statistical sampling (sonde run --sample): read by run.py, which runs this file in its own
# namespace (its helpers: build, srun, run, report, check, expect, eq, ...).
#
# Sampling is statistical: a share is checked against the truth within 5 binomial standard
# errors, sqrt(q(1-q)/N) with N the signals taken (q the truth: the program's own CPU-time
# measurement). A correct sampler fails that about once in 1.7 million runs. Counts against CPU
# time use the kernel's granularity: periods = CPU time x HZ within 5 % + 10 periods.

SAMPLE_BOUND = 5.0


def build_fp(prog, instrumented=False, fp=True):
    """tests/programs/PROG.c at -O2 -g, with frame pointers unless fp=False; plain gcc or sonde cc."""
    key = ('sample', prog, instrumented, fp)
    if key in BUILT:
        if BUILT[key] is None:
            raise Fail(f'{prog} did not build')
        return BUILT[key]
    out = os.path.join(TMP, 'bin', f'{prog}{"-instr" if instrumented else ""}'
                       f'{"" if fp else "-nofp"}')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    gcc = [CC, '-O2', '-g', '-Wall', '-Wextra', '-o', out, os.path.join(PROGS, prog + '.c'),
           '-lpthread']
    if fp:
        gcc.insert(3, '-fno-omit-frame-pointer')
    cmd = [SONDE, 'cc', '--'] + gcc if instrumented else gcc
    BUILT[key] = None
    with check(f'build {prog} for sampling{" (sonde cc)" if instrumented else ""}'
               f'{"" if fp else " without frame pointers"}') as c:
        p = run(cmd, cwd=ROOT)
        expect(p.returncode == 0 and os.access(out, os.X_OK), f'{shlex.join(cmd)}: {describe(p)}')
        expect(b'warning' not in p.stderr, f'compiler warnings: {first_line(p.stderr)}')
    if not c.ok:
        raise Fail(f'{prog} did not build')
    BUILT[key] = out
    return out


def loop_lines(prog):
    """Lines of spin()'s loop (its for and its body) in tests/programs/PROG.c."""
    with open(os.path.join(PROGS, prog + '.c')) as f:
        return {i for i, line in enumerate(f, 1)
                if 'for (i = 0; i < n; i++)' in line or 'x = x * 6364136223846793005ul' in line}


def sampled(js):
    expect('samples' in js, 'the report has no "samples" section')
    return js['samples']


def sfuncs(s):
    return {f['name']: f for f in s['functions']}


def program_cpu(stderr):
    """The ratio program's own CPU times of hot_a and hot_b (ns)."""
    m = re.search(rb'cpu hot_a (\d+) hot_b (\d+)', stderr)
    expect(m, f'no CPU times on stderr: {stderr[:200]!r}')
    return int(m.group(1)), int(m.group(2))


def within_se(share, truth, n, what):
    se = (truth * (1 - truth) / n) ** 0.5 if n else 0
    expect(n > 0, f'{what}: no samples')
    expect(abs(share - truth) <= SAMPLE_BOUND * se + 1e-9,
           f'{what}: sampled share {share:.4f}, truth {truth:.4f}, N={n}: '
           f'{abs(share - truth) / se if se else 0:.1f} standard errors apart '
           f'(bound {SAMPLE_BOUND})')


def counts_follow_cpu(s):
    """Every sampled thread's periods are its CPU time x HZ (kernel tick granularity)."""
    for t in s['threads']:
        want = t['cpu_ns'] * s['hz'] / 1e9
        expect(abs(t['samples'] - want) <= 0.05 * want + 10,
               f'thread {t["index"]}: {t["samples"]} samples for {t["cpu_ns"]} ns of CPU at '
               f'{s["hz"]} Hz (want {want:.0f} within 5 % + 10)')
        expect(t['signals'] <= t['samples'], 'signals <= samples')


FOLDED_LINE = re.compile(r'^[^; ]+(;[^; ]+)* [1-9][0-9]*$')


def folded(d, *opts):
    p = run([SONDE, 'report', '--folded'] + list(opts) + [d])
    expect(p.returncode == 0, f'sonde report --folded: {describe(p)}')
    lines = p.stdout.decode().splitlines()
    out = {}
    for line in lines:
        expect(FOLDED_LINE.match(line), f'folded line {line!r} is not "a;b;c N"')
        path, n = line.rsplit(' ', 1)
        expect(path not in out, f'folded path {path!r} twice')
        out[path] = int(n)
    return out


@test()
def t_sample_ratio(o):
    """Two hot functions in a 3:1 ratio, a program built without sonde cc: shares, counts."""
    for fp in (True, False):
        what = 'sample ratio' + ('' if fp else ' without frame pointers')
        b = build_fp('sample_ratio', fp=fp)
        with check(what):
            p, d = srun(b, opts=['--sample'], tag='sample-ratio')
            eq(p.returncode, 0, f'exit status ({first_line(p.stderr)})')
            eq(p.stdout, direct(b).stdout, 'stdout under sonde vs direct run')
            a, bb = program_cpu(p.stderr)
            js = report(d)
            s = sampled(js)
            eq(s['hz'], 1000, 'default rate')
            eq(s['dropped'], 0, 'dropped samples')
            eq(s['stored'], s['samples'], 'stored samples')
            expect(s['signals'] >= 100, f'only {s["signals"]} signals: too few to judge')
            fs = sfuncs(s)
            for name in ('hot_a', 'hot_b'):
                expect(name in fs, f'{name} was not sampled: {sorted(fs)}')
            total = s['stored']
            hot = fs['hot_a']['self'] + fs['hot_b']['self']
            expect(hot >= 0.9 * total, f'hot_a and hot_b hold {hot} of {total} samples')
            within_se(fs['hot_a']['self'] / hot, a / (a + bb), s['signals'], 'hot_a vs hot_b')
            within_se(fs['hot_a']['self'] / hot, 0.75, s['signals'], 'hot_a vs 3:1')
            eq(fs['hot_a']['file'], 'sample_ratio.c', 'hot_a file')
            eq(fs['hot_a']['line'], def_line('sample_ratio', 'hot_a'), 'hot_a line')
            counts_follow_cpu(s)
            # source lines: hot_a's samples fall on the loop of spin() inlined into it
            loop = loop_lines('sample_ratio')
            in_a = [ln for ln in s['lines'] if ln['function'] == 'hot_a']
            expect(in_a, 'no source line of hot_a')
            eq(in_a[0]['file'], 'sample_ratio.c', 'file of the hottest line')
            on_loop = sum(ln['self'] for ln in in_a if ln['line'] in loop)
            expect(on_loop >= 0.8 * fs['hot_a']['self'],
                   f'{on_loop} of hot_a\'s {fs["hot_a"]["self"]} samples on the loop lines {loop}'
                   f': {in_a[:4]}')


@test()
def t_sample_folded(o):
    """--folded: every line 'a;b;c N', rooted at main; the paths and counts of the report."""
    b = build_fp('sample_ratio')
    with check('sample folded stacks'):
        p, d = srun(b, args=['30'], opts=['--sample=1000'], tag='sample-folded')
        eq(p.returncode, 0, f'exit status ({first_line(p.stderr)})')
        lines = folded(d)
        s = sampled(report(d))
        # libc has no frame pointers: a tick inside it (printf's buffer, the exit's flush) can
        # end the walk there, rooting the stack at that libc function (docs/runtime.md)
        own = ('main', 'solve', 'hot_a', 'hot_b')
        for path in lines:
            expect(path.split(';')[0] == 'main' or not set(path.split(';')) & set(own),
                   f'{path!r}: rooted at main, or at a library frame with none of the program\'s')
        outside = sum(n for pth, n in lines.items() if not pth.startswith('main'))
        expect(outside * 50 <= s['stored'], f'{outside} of {s["stored"]} samples not under main')
        eq(sum(lines.values()), s['stored'], 'folded counts add up to the samples')
        fs = sfuncs(s)
        eq(lines.get('main;solve;hot_a'), fs['hot_a']['self'], 'main;solve;hot_a')
        eq(lines.get('main;solve;hot_b'), fs['hot_b']['self'], 'main;solve;hot_b')
        eq(fs['solve']['total'] if 'solve' in fs else
           sum(n for pth, n in lines.items() if ';solve' in pth),
           sum(n for pth, n in lines.items() if pth.startswith('main;solve')), 'solve total')
        tree = s['callpath']
        mains = [c for c in tree['children'] if c['name'] == 'main']
        eq(len(mains), 1, 'one main under the root of the sampled call paths')
        eq(sum(c['total'] for c in tree['children'] if c['name'] != 'main'), outside,
           'beside main at the root: the library-rooted stacks of the folded lines')


@test()
def t_sample_with_measured(o):
    """sonde cc + --sample --cpu: both profiles of one run agree within the sampling error
    (CPU time against CPU time: in wall time, the program's clock_gettime calls preempted on a
    loaded machine took 17 % of the run and no sample)."""
    b = build_fp('sample_ratio', instrumented=True)
    with check('sample and measure together'):
        p, d = srun(b, opts=['--sample', '--cpu'], tag='sample-measured')
        eq(p.returncode, 0, f'exit status ({first_line(p.stderr)})')
        eq(p.stdout, direct(build_fp('sample_ratio')).stdout, 'stdout')
        js = report(d)
        sanity(js)
        eq(calls(js, 'hot_a'), 80, 'measured calls of hot_a')
        eq(calls(js, 'solve'), 80, 'measured calls of solve')
        s = sampled(js)
        fs = sfuncs(s)
        eq(s['measured_clock'], 'cpu', 'the measured shares compared are of CPU time')
        # inclusive: the instrumented inline spin() is measured apart, sampled inside hot_a
        for name in ('hot_a', 'hot_b'):
            expect('measured_incl_share' in fs[name], f'{name}: no measured share beside')
            within_se(fs[name]['total_share'], fs[name]['measured_incl_share'], s['signals'],
                      f'{name}: sampled vs measured')
        t = run([SONDE, 'report', d])
        expect(b'agree' in t.stdout and b'Sampled profile' in t.stdout,
               'the text report shows both profiles')
        counts_follow_cpu(s)


@test()
def t_sample_threads(o):
    """Each thread has its own timer: its samples name its own function and follow its CPU."""
    b = build_fp('sample_threads')
    with check('sample threads separately'):
        p, d = srun(b, opts=['--sample'], tag='sample-threads')
        eq(p.returncode, 0, f'exit status ({first_line(p.stderr)})')
        eq(p.stdout, direct(b).stdout, 'stdout')
        s = sampled(report(d))
        eq(len(s['threads']), 3, 'sampled threads')
        eq(len({t['tid'] for t in s['threads']}), 3, 'distinct tids')
        counts_follow_cpu(s)
        owners = {}
        for t in s['threads']:
            st = sampled(report(d, '--thread', str(t['index'])))
            eq([x['index'] for x in st['threads']], [t['index']], '--thread selects one')
            fs = sfuncs(st)
            top = max(fs.values(), key=lambda f: f['self'])
            expect(top['self'] >= 0.9 * st['stored'],
                   f'thread {t["index"]}: {top["name"]} holds {top["self"]} of {st["stored"]}')
            expect(top['name'] not in owners, f'{top["name"]} tops two threads')
            # its entry lies in the inlined spin(): still its own line, not spin's
            eq((top['file'], top['line']), ('sample_threads.c', def_line('sample_threads',
                                                                         top['name'])),
               f'{top["name"]}: file and line')
            owners[top['name']] = t
        eq(sorted(owners), ['spin_main', 'spin_one', 'spin_two'], 'each thread its function')
        expect(owners['spin_two']['samples'] > owners['spin_one']['samples'] >
               owners['spin_main']['samples'], 'samples follow each thread\'s work')


@test()
def t_sample_program_signals(o):
    """A program with its own SIGPROF timer and the sampler's signal behaves identically."""
    b = build_fp('sample_signals')
    for args in ([], ['die']):
        with check(f'sample: a program\'s own signals {" ".join(args)}'):
            p, d = srun(b, args=args, opts=['--sample'], tag='sample-signals')
            same_output(p, direct(b, args))
            expect(profiles(d), 'no profile written')
            s = sampled(report(d))
            expect(s['signals'] > 0, 'the program was not sampled meanwhile')


@test()
def t_sample_errors(o):
    """Wrong rates and combinations: one line, status 2; --folded=sampled of an unsampled run: 1
    (plain --folded of a measured run gives its measured call paths: tests/integration/t_views.py)."""
    b = build_fp('sample_ratio')
    for opts, what in ((['--sample=0'], 'rate 0'), (['--sample=abc'], 'rate abc'),
                       (['--sample=20000'], 'rate too high'),
                       (['--sample', '--trace'], 'with --trace')):
        with check(f'sample errors: {what}'):
            expect_error(run([SONDE, 'run', '-o', new_dir('bad')] + opts + ['--', b]), what, 2)
    with check('sample errors: --folded of a run without samples'):
        _, d = srun(build('recursion'), tag='unsampled')
        expect_error(run([SONDE, 'report', '--folded=sampled', d]), 'unsampled', 1)
        expect_error(run([SONDE, 'report', '--folded', '--json', d]), 'two formats', 2)


@test()
def t_sample_fork(o):
    """A forked child is sampled apart: its own profile, its own function, from zero."""
    b = build_fp('sample_fork')
    with check('sample a forked child'):
        p, d = srun(b, opts=['--sample'], tag='sample-fork')
        same_output(p, direct(b))
        files = profiles(d)
        eq(len(files), 2, 'profiles (parent and child)')
        seen = {}
        for f in files:
            s = sampled(report(os.path.join(d, f)))
            eq(len(s['threads']), 1, f'{f}: sampled threads')
            counts_follow_cpu(s)
            fs = sfuncs(s)
            top = max(fs.values(), key=lambda x: x['self'])
            expect(top['self'] >= 0.9 * s['stored'], f'{f}: {top["name"]} holds {top["self"]} '
                   f'of {s["stored"]}')
            seen[top['name']] = s['stored']
        eq(sorted(seen), ['spin_child', 'spin_parent'], 'each process its own function')
        expect(seen['spin_child'] > seen['spin_parent'], 'the child worked twice as long')


@test()
def t_sample_dynamic(o):
    """--dynamic --sample: the walk goes through hooked returns (the shadow stack's addresses)."""
    b = build_fp('sample_ratio')
    with check('sample with --dynamic'):
        p, d = srun(b, args=['40'], opts=['--dynamic', '--sample'], tag='sample-dynamic')
        eq(p.returncode, 0, f'exit status ({first_line(p.stderr)})')
        eq(p.stdout, direct(b, ['40']).stdout, 'stdout')
        js = report(d)
        eq(calls(js, 'hot_a'), 40, 'measured calls of hot_a (patched)')
        s = sampled(js)
        lines = folded(d)
        hot = {k: v for k, v in lines.items() if k.endswith(';hot_a') or k.endswith(';hot_b')}
        eq(sorted(hot), ['main;solve;hot_a', 'main;solve;hot_b'], 'paths of the hot functions')
        expect(sum(hot.values()) >= 0.9 * s['stored'], f'{hot} of {s["stored"]}')
        a, bb = program_cpu(p.stderr)
        within_se(hot['main;solve;hot_a'] / sum(hot.values()), a / (a + bb), s['signals'],
                  'hot_a vs hot_b under --dynamic')
