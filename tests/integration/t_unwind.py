# SPDX-License-Identifier: MIT
# Integration tests of unwinding through hooked returns under dynamic instrumentation (C++
# exceptions, pthread_exit, pthread_cancel; docs/dynamic.md, "Exceptions and unwinding"), run by
# run.py in its own namespace (it executes tests/integration/t_*.py before the tests start).

EXC_ROUNDS = 5
# Calls of each function per round of tests/programs/exceptions.cc (see its header); main's
# first throw adds one call of outer, middle and leaf in the default mode.
EXC_PER_ROUND = {'leaf': 11, 'middle': 9, 'outer': 9, 'relay': 1, 'nested': 1,
                 'outer_guarded': 1, 'middle_guarded': 1, 'top': 3, 'catcher': 3, 'after': 3,
                 'recurse': 21, 'tailer': 1, 'thrower': 1, 'basic_thread': 2,
                 'guarded_thread': 1, 'middle_exit': 1}


def exc_calls(rounds, first=1):
    calls_of = {f: n * rounds for f, n in EXC_PER_ROUND.items()}
    for f in ('leaf', 'middle', 'outer'):
        calls_of[f] += first
    return calls_of


def build_flags(src, opt, flags=(), instrumented=False):
    """tests/programs/SRC (C or C++: gcc or g++) with extra flags, plain or with `sonde cc`."""
    base, ext = os.path.splitext(src)
    key = (src, opt, tuple(flags), instrumented)
    if key in BUILT:
        if BUILT[key] is None:
            raise Fail(f'{src}{opt} did not build')
        return BUILT[key]
    compiler = 'g++' if ext == '.cc' else CC
    out = os.path.join(TMP, 'bin', f'{base}{opt}{"".join(flags)}{"-cc" if instrumented else ""}')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = [compiler, opt, '-g', '-Wall', '-Wextra'] + list(flags) + \
        ['-o', out, os.path.join(PROGS, src), '-lpthread']
    if instrumented:
        cmd = [SONDE, 'cc', '--'] + cmd
    BUILT[key] = None
    with check(f'build {src} {opt} {" ".join(flags)}{" (sonde cc)" if instrumented else ""}') as c:
        p = run(cmd, cwd=ROOT)
        expect(p.returncode == 0 and os.access(out, os.X_OK), f'{shlex.join(cmd)}: {describe(p)}')
        expect(b'warning' not in p.stderr, f'compiler warnings: {first_line(p.stderr)}')
    if not c.ok:
        raise Fail(f'{src}{opt} did not build')
    BUILT[key] = out
    return out


def parents_of(js, name):
    """How often NAME is called under each parent name, over every call path."""
    out = {}
    for path, n in walk(js):
        if path[-1] == name and n['calls']:
            parent = path[-2] if len(path) > 1 else ''
            out[parent] = out.get(parent, 0) + n['calls']
    return out


def expect_times_sane(js):
    """No negative or runaway time: every node's inclusive time (summed over threads) within the
    sum of the threads' measured times."""
    limit = sum(t['T_m_ns'] for p in js['processes'] for t in p['threads'])
    for path, n in walk(js):
        expect(0 <= n['excl_ns'] <= n['incl_ns'] <= limit,
               f'{"/".join(path)}: excl {n["excl_ns"]}, incl {n["incl_ns"]}, T_m {limit}')


@test('-O0', '-O2')
def t_dynamic_exceptions(o):
    """sonde run --dynamic of a C++ program whose exceptions cross instrumented functions (every
    function of it has entry and exit points): caught as without sonde (rethrow, nested, RAII,
    threads, a tail call, pthread_exit), exact calls, the call paths of compiled-in hooks; an
    uncaught one still ends the program with terminate."""
    plain = build_flags('exceptions.cc', o)
    p, d = srun(plain, args=[str(EXC_ROUNDS)], opts=['--dynamic', '--throttle', 'off'],
                tag='dyn-exc')
    with check(f'run --dynamic exceptions{o}: every exception caught, output and status unchanged'):
        same_output(p, direct(plain, args=[str(EXC_ROUNDS)]))
        expect(f'caught {11 * EXC_ROUNDS} (of {11 * EXC_ROUNDS})' in p.stdout.decode(),
               p.stdout.decode())
    with check(f'run --dynamic exceptions{o}: exact calls, exits where the calls returned'):
        js = report(d)
        sanity(js)
        eq({f: calls(js, f) for f in EXC_PER_ROUND}, exc_calls(EXC_ROUNDS), 'calls')
        # after() runs once the exception was caught in catcher: it is catcher's callee, never
        # that of a function the exception left (outer, middle, leaf)
        eq(parents_of(js, 'after'), {'catcher': 3 * EXC_ROUNDS}, 'callers of after')
        eq(parents_of(js, 'catcher'), {'top': 3 * EXC_ROUNDS}, 'callers of catcher')
        eq(parents_of(js, 'leaf'), {'middle': 9 * EXC_ROUNDS + 1, 'middle_guarded': EXC_ROUNDS,
                                    'recurse': EXC_ROUNDS}, 'callers of leaf')
        expect_times_sane(js)
    with check(f'run --dynamic exceptions{o}: the call paths of compiled-in hooks'):
        _, dc = srun(build_flags('exceptions.cc', o, instrumented=True), args=[str(EXC_ROUNDS)],
                     opts=['--throttle', 'off'], tag='exc-compiled')
        # at -O2 the compiler's hooks also see the inlined constructor and destructor of Guard
        compiled = {k: v for k, v in path_calls(report(dc)).items()
                    if o == '-O0' or not any(n.startswith('Guard::') for n in k)}
        eq(path_calls(js), compiled, 'calls per call-path (dynamic, compiled)')
    with check(f'run --dynamic exceptions{o}: uncaught, terminate as without sonde'):
        p, d = srun(plain, args=['uncaught'], opts=['--dynamic'], tag='dyn-exc-uncaught')
        pd = direct(plain, args=['uncaught'])
        eq(pd.returncode, -signal.SIGABRT, 'status of the direct run')
        same_output(p, pd)
        expect(b'terminate called after throwing' in p.stderr, first_line(p.stderr))


@test('-O0', '-O2')
def t_dynamic_cleanup(o):
    """pthread_exit and pthread_cancel through instrumented C functions: the cleanup handlers of
    the frames beyond the hooked returns run (with -fexceptions: unwinding landing pads; without:
    glibc's own cleanup buffers, found by the same unwinder walk)."""
    for flags in (['-fexceptions'], []):
        plain = build_flags('cleanup.c', o, flags)
        name = f'run --dynamic cleanup{o} {" ".join(flags) or "(no -fexceptions)"}'
        p, d = srun(plain, opts=['--dynamic'], tag='dyn-cleanup')
        with check(f'{name}: every cleanup handler ran, output and status unchanged'):
            same_output(p, direct(plain))
            eq(p.stdout.decode().count('cleanups ih\n') + p.stdout.decode().count('cleanups wc\n'),
               8, 'threads whose two handlers ran in order')
        with check(f'{name}: exact calls'):
            js = report(d)
            sanity(js)
            eq([calls(js, f) for f in ('holder', 'inner', 'quit', 'holder_cancel', 'waiter',
                                       'note')], [4, 4, 4, 4, 4, 16], 'calls')
            expect_times_sane(js)


class ExcServer:
    """exceptions.cc serve: one round per line of stdin, acknowledged on stderr."""

    def __init__(self, binary):
        self.binary = binary
        self.p = subprocess.Popen([binary, 'serve'], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=TMP,
                                  preexec_fn=no_core)
        self.r = LineReader(self.p.stderr, 'exceptions serve')
        self.lines = 0
        eq(self.r.line(), 'ready', 'first line of exceptions serve on stderr')

    def feed(self, n):
        for _ in range(n):
            self.lines += 1
            self.p.stdin.write(b'round %d\n' % self.lines)
            self.p.stdin.flush()
            eq(self.r.line(), f'done {self.lines}', 'acknowledgement')

    def finish(self, timeout=60):
        out, err = self.p.communicate(timeout=timeout)
        return self.p.returncode, out.decode(), self.r.rest(err)

    def untouched(self):
        data = b''.join(b'round %d\n' % (i + 1) for i in range(self.lines))
        p = run([self.binary, 'serve'], stdin=data)
        return p.returncode, p.stdout.decode(), p.stderr.decode().splitlines()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate()


@test('-O0', '-O2')
def t_attach_exceptions(o):
    """sonde attach to a running C++ program (the runtime injected: no symbol interposition)
    whose exceptions cross the functions it patches: caught as without sonde, exact calls in the
    window, exits where the calls returned; the program goes on as an untouched run."""
    b = build_flags('exceptions.cc', o)
    t = ExcServer(b)
    try:
        t.feed(2)
        d = new_dir('attach-exc')
        sp, r = sprofile(t.p.pid, d)
        t.feed(3)
        sp.send_signal(signal.SIGINT)
        out, err = sp.communicate(timeout=60)
        t.feed(2)
        with check(f'attach exceptions{o}: detached, the program as an untouched run'):
            eq(sp.returncode, 0, f'sonde attach status ({err.decode().strip()[:300]!r})')
            eq(t.finish(), t.untouched(), 'status, stdout, stderr')
        with check(f'attach exceptions{o}: exactly the calls made while profiled'):
            js = report(d)
            sanity(js)
            eq({f: calls(js, f) for f in EXC_PER_ROUND}, exc_calls(3, first=0), 'calls')
            eq(parents_of(js, 'after'), {'catcher': 9}, 'callers of after')
            expect_times_sane(js)
    finally:
        t.kill()


EXITS_MDL = '''
constraint exits_of /Code/*, /Code/*/* is replace counter {
	append at $constraint->exit [ addCounter($metric, 1); ]
}
metric exits {
	name "Exits";
	units calls;
	foldOperator sum;
	aggregateOperator sum;
	constraint exits_of;
	constraint thread;
	constraint process;
	base is counter {
		append at $procedures->exit [ addCounter(exits, 1); ]
	}
}
'''


@test('-O0', '-O2')
def t_watch_exceptions(o):
    """sonde watch of a running C++ program, metrics with exit actions on functions that
    exceptions leave: every call exits once (counted at the hooked return, or as the exception
    passes it), timers stop; the program goes on as an untouched run."""
    b = build_flags('exceptions.cc', o)
    mdl = os.path.join(TMP, 'exits.mdl')
    with open(mdl, 'w') as f:
        f.write(EXITS_MDL)
    for metric, focus, per_line in (('exits', 'middle', 9), ('exits', 'leaf', 11),
                                    ('exits', 'catcher', 3), ('calls', 'middle', 9),
                                    ('wall_time', 'outer', None)):
        t = ExcServer(b)
        try:
            t.feed(1)
            w = Watch(t.p.pid, '--file', mdl, '--metric', metric, '--focus',
                      f'/Code/exceptions.cc/{focus}')
            t0 = time.monotonic()
            t.feed(4)
            rc, lines, err = w.stop()
            elapsed = time.monotonic() - t0
            t.feed(1)
            with check(f'watch exceptions{o} {metric} {focus}: exact, the program untouched'):
                eq(rc, 0, f'sonde watch status ({err.strip()[:300]!r})')
                if per_line is not None:
                    eq(watch_total(lines), 4 * per_line, f'{metric} of {focus}')
                else:  # seconds inside outer: no runaway timer (each thread's at most its time)
                    m = next((re.search(r'\(total ([\d.]+) (ns|us|ms|s)\)', x) for x in lines
                              if re.search(r'\(total [\d.]+ (ns|us|ms|s)\)', x)), None)
                    expect(m, f'no "(total X unit)" line in {lines[-12:]}')
                    scale = {'ns': 1e-9, 'us': 1e-6, 'ms': 1e-3, 's': 1}[m[2]]
                    between(float(m[1]) * scale, 1e-9, 3 * (elapsed + 1),
                            'wall time inside outer, s')
                eq(t.finish(), t.untouched(), 'status, stdout, stderr')
        finally:
            t.kill()
