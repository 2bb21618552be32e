# SPDX-License-Identifier: MIT
# Integration tests of Paradyn's catch-up (docs/dynamic.md, "Calls already running"; the
# runtime's sonde__dyn_catch_up, tool/dyn/catchup.c), run by run.py in its own namespace.
# The target is tests/programs/catchup.c: a thread blocked on `held`, a thread inside spin().


class CatchupTarget:
    """A running catchup: "ready" once its waiter sleeps in the kernel; "release" ends it."""

    def __init__(self):
        self.b = build('catchup', '-O2', plain=True)
        self.p = subprocess.Popen([self.b], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=TMP, preexec_fn=no_core)
        self.r = LineReader(self.p.stderr, 'catchup')
        eq(self.r.line(), 'ready', 'first line of catchup')

    def finish(self):
        out, err = self.p.communicate(b'release\n', timeout=60)
        return self.p.returncode, out.decode(), self.r.rest(err)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate()


def catchup_watch(t, metric, focus, secs=1.0):
    """sonde watch for about secs: (its length in seconds, the metric's total in seconds, every
    stdout line)."""
    w = Watch(t.p.pid, '--metric', metric, '--focus', focus)
    time.sleep(secs)
    rc, lines, err = w.stop()
    eq(rc, 0, f'sonde watch status ({err.strip()[:300]!r})')
    m = next((re.match(r'mean \S+ \S+ over ([\d.]+) s', x) for x in lines
              if x.startswith('mean ')), None)
    expect(m, f'no mean line: {lines[-8:]}')
    return float(m[1]), watch_seconds(lines), lines


@test()
def t_watch_catchup(o):
    """Calls running before the watch: the thread blocked on `held` since before waits through
    all of the watch (sync_wait its whole length, where without catch-up it is 0: the wait
    neither begins nor ends inside it), the thread looping in spin() since before is in it
    all along (wall_time its whole length; cpu_time more than none), one call caught up each
    time, also the second time its return is hooked; at the module, the four running calls of
    three threads; the program's output and status those of an untouched run."""
    t = CatchupTarget()
    try:
        with check('watch wall_time at the module: every thread\'s running calls, nested'):
            # first, before any return is hooked: main (in fgets), the waiter, the spinner and
            # spin inside it; timers nest, so three threads' time; the spinner's two frames are
            # put in stack order
            length, total, lines = catchup_watch(t, 'wall_time', '/Code/catchup.c')
            between(total, 2.7 * length, 3.06 * length + 0.03, 'wall_time s')
            expect(any(re.match(r'catch-up: 4 calls already running', x) for x in lines),
                   f'catch-up line in {lines[-8:]}')
        with check('watch sync_wait at the waiter: its flag raised by catch-up, outermost first'):
            # the waiter's "active" flag (its entry and exit) and the timer the flag guards at
            # pthread_mutex_lock: two calls caught up, the flag's first; the waiter's frame was
            # hooked by the watch before (another session's point): taken over
            length, total, lines = catchup_watch(t, 'sync_wait', '/Code/catchup.c/waiter')
            between(total, 0.9 * length, 1.02 * length + 0.01, 'sync_wait s')
            expect(any(re.match(r'catch-up: 2 calls already running .* 0 not hooked\)$', x)
                       for x in lines), f'catch-up line in {lines[-8:]}')
        for metric, focus, least in (('sync_wait', '/SyncObject/mutex/held', 0.9),
                                     ('wall_time', '/Code/catchup.c/spin', 0.9),
                                     ('cpu_time', '/Code/catchup.c/spin', 0.05),
                                     ('wall_time', '/Code/catchup.c/spin', 0.9)):
            with check(f'watch {metric} at {focus}: the call running since before counts'):
                length, total, lines = catchup_watch(t, metric, focus)
                between(total, least * length, 1.02 * length + 0.01, f'{metric} s')
                expect(any(re.match(r'catch-up: 1 call already running when the points were '
                                    r'set \(\d+ threads looked at, 0 not hooked\)$', x)
                           for x in lines), f'catch-up line in {lines[-8:]}')
        with check('watch sync_wait at /SyncObject/mutex: every mutex, the wait caught up too'):
            length, total, lines = catchup_watch(t, 'sync_wait', '/SyncObject/mutex')
            between(total, 0.9 * length, 1.02 * length + 0.01, 'sync_wait s')
        with check('catch-up: the program untouched'):
            rc, out, err = t.finish()
            eq(rc, 0, f'status ({err[-300:]!r})')
            expect(re.fullmatch(r'waited 1 spin [01]\n', out), f'output {out!r}')
    finally:
        t.kill()
