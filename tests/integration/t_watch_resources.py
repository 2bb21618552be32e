# SPDX-License-Identifier: MIT
# Integration tests of `sonde watch` on /SyncObject and /Files resources (tool/dyn/resources.c,
# the sync and I/O metrics of share/sonde/metrics.mdl), run by run.py in its own namespace.
# The target is tests/programs/dyn_resources.c: one phase per line of stdin.

RES_THREADS = 2                  # threads of a "sync" phase
RES_HOT, RES_OTHER, RES_HEAP = 1000, 10, 7
RES_SHARED = RES_THREADS * (RES_HOT + 2 * RES_OTHER + 3 * RES_HEAP)  # per "sync" line
RES_A_OPS, RES_A_BYTES = 100 + 10 + 1, 100 * 64 + 10 * 32            # per "io" line
RES_B_OPS, RES_B_BYTES = 3 + 1 + 1, 3 * 100 + 30  # and a read that fails: -1 adds nothing


class ResTarget:
    """A running dyn_resources with its two files in a directory of its own."""

    def __init__(self, tag):
        self.b = build('dyn_resources', '-O2', plain=True)
        d = new_dir(tag)
        os.makedirs(d)
        self.a, self.bfile = os.path.join(d, 'a.dat'), os.path.join(d, 'b.dat')
        self.p = subprocess.Popen([self.b, self.a, self.bfile], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=TMP,
                                  preexec_fn=no_core)
        self.r = LineReader(self.p.stderr, 'dyn_resources')
        self.n = 0
        eq(self.r.line(), 'ready', 'first line of dyn_resources')
        self.heap = self.r.line().split()[1]

    def do(self, *phases):
        for ph in phases:
            self.n += 1
            self.p.stdin.write(ph.encode() + b'\n')
            self.p.stdin.flush()
            eq(self.r.line(), f'done {self.n}', f'acknowledgement of {ph}')

    def finish(self):
        out, err = self.p.communicate(timeout=60)
        return self.p.returncode, out.decode()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate()


def res_watch(t, metric, focus, *phases, settle=0):
    """sonde watch on t while the phases run (settle: seconds before them, for a file's
    descriptors to be read again); (every stdout line, stderr)."""
    w = Watch(t.p.pid, '--metric', metric, '--focus', focus)
    time.sleep(settle)
    for ph in phases:
        if ph == 'pause':
            time.sleep(0.5)  # the descriptors are read every 100 ms
        else:
            t.do(ph)
    rc, lines, err = w.stop()
    eq(rc, 0, f'sonde watch status ({err.strip()[:300]!r})')
    return lines, err


def watch_seconds(lines):
    """The total of a time metric: 'mean X s/s over T s (total N us)' in seconds (or X CPUs)."""
    m = next((re.match(r'mean \S+ (?:s/s|CPUs) over [\d.]+ s \(total ([\d.]+) (s|ms|us|ns)\)', x)
              for x in lines if x.startswith('mean ')), None)
    expect(m, f'no mean line: {lines[-8:]}')
    return float(m[1]) / {'s': 1, 'ms': 1e3, 'us': 1e6, 'ns': 1e9}[m[2]]


@test()
def t_watch_sync(o):
    """Sync objects of a running program: the resources listed (globals, array elements, a
    static, a typedef'd mutex, an rwlock, a semaphore, a barrier), then sync_ops at one object
    among others: exactly its operations (hot_lock's 1000 per thread and line, locks[3]'s 10,
    a heap mutex by its address), sync_wait and lock_hold plausible; the program untouched."""
    t = ResTarget('res-sync')
    try:
        t.do('sync')
        p = run([SONDE, 'watch', str(t.p.pid), '--resources'])
        with check('watch --resources: the sync objects of the data, the open files'):
            eq(p.returncode, 0, f'status ({p.stderr.decode()[:300]!r})')
            out = p.stdout.decode()
            for name in ('mutex/hot_lock', 'mutex/locks[0]', 'mutex/locks[3]', 'mutex/typed_lock',
                         'mutex/local_lock', 'rwlock/rw', 'sem/sem', 'barrier/barrier'):
                expect(re.search(r'^/SyncObject/' + re.escape(name) + r' +0x[0-9a-f]+ .*'
                                 r'dyn_resources', out, re.M), f'{name} in {out[:600]!r}')
            expect(not re.search(r'^/SyncObject/mutex/locks\[4\]', out, re.M), 'locks[4]')
            for f in (t.a, t.bfile):
                expect(re.search(r'^/Files' + re.escape(f) + r' +fd \d+$', out, re.M),
                       f'{f} in {out[-400:]!r}')
        per = RES_THREADS
        cases = [('/SyncObject/mutex/hot_lock', 2 * per * RES_HOT),
                 ('/SyncObject/mutex/locks[3]', 2 * per * RES_OTHER),
                 (f'/SyncObject/mutex/{t.heap}', 2 * per * RES_HEAP),
                 ('/SyncObject/mutex/typed_lock', 2 * per * RES_HEAP),
                 ('/SyncObject/mutex/local_lock', 2 * per * RES_HEAP),
                 ('/SyncObject/rwlock/rw', 2 * per * 7),
                 ('/SyncObject/sem/sem', 2 * per * 3),
                 ('/SyncObject/barrier/barrier', 2 * per),
                 ('/SyncObject/rwlock', 2 * per * 7),  # every rwlock, every semaphore:
                 ('/SyncObject/sem', 2 * per * 3)]     # the program's only ones are used
        for focus, want in cases:
            with check(f'watch sync_ops {focus}: exactly its operations'):
                lines, err = res_watch(t, 'sync_ops', focus, 'sync', 'io', 'sync')
                eq(watch_total(lines), want, f'sync_ops at {focus}')
                expect(any(x.startswith(f'object {focus if "0x" not in focus else ""}') or
                           x == f'objects: every one of {focus}' for x in lines),
                       f'object line in {lines[-8:]}')
        with check('watch sync_ops at /SyncObject/mutex: every mutex'):
            lines, err = res_watch(t, 'sync_ops', '/SyncObject/mutex', 'sync', 'sync')
            # and the lock pthread_create takes (the loader's), once per thread
            between(watch_total(lines) - 2 * RES_SHARED, 0, 4 * RES_THREADS, 'mutex locks')
            expect('objects: every one of /SyncObject/mutex' in lines, lines[-9:])
        with check('watch sync_wait and lock_hold at hot_lock: times within the watch'):
            t0 = time.time()
            lines, err = res_watch(t, 'sync_wait', '/SyncObject/mutex/hot_lock', 'sync')
            between(watch_seconds(lines), 0, RES_THREADS * (time.time() - t0), 'sync_wait s')
            t0 = time.time()
            lines, err = res_watch(t, 'lock_hold', '/SyncObject/mutex/hot_lock', 'sync', 'sync')
            between(watch_seconds(lines), 1e-7, RES_THREADS * (time.time() - t0), 'lock_hold s')
        with check('watch sync: a wrong object is one line, the process untouched'):
            for focus, msg in (('/SyncObject/rwlock/hot_lock', 'hot_lock is a mutex, not a rwlock'),
                               ('/SyncObject/mutex/nosuch', "no mutex 'nosuch' among the data"),
                               ('/SyncObject/mutex/locks[4]', 'locks has 4 elements'),
                               ('/SyncObject/mutex/locks', 'locks is an array'),
                               ('/SyncObject/spin/x', "no sync object kind 'spin'")):
                p = run([SONDE, 'watch', str(t.p.pid), '--metric', 'sync_ops', '--focus', focus,
                         '--for', '1s'])
                expect_error(p, focus, 1)
                expect(msg.encode() in p.stderr, f'{focus}: {p.stderr.decode()!r}')
            eq(open(f'/proc/{t.p.pid}/status').read().count('TracerPid:\t0\n'), 1, 'TracerPid')
            p = run([SONDE, 'watch', '999999999', '--resources'])
            expect_error(p, '--resources of no process', 1)
            expect(b'no process 999999999' in p.stderr, p.stderr.decode())
            p = run([SONDE, 'watch', '--resources', '--', t.b])
            expect_error(p, '--resources with a program', 2)
        with check('metrics --plan --exe: a sync object at its link-time address'):
            p = run([SONDE, 'metrics', '--plan', 'sync_ops', '--focus',
                     '/SyncObject/mutex/locks[3]', '--exe', t.b])
            eq(p.returncode, 0, f'status ({p.stderr.decode()[:300]!r})')
            nm = run(['nm', t.b]).stdout.decode()
            locks = int(re.search(r'^([0-9a-f]+) [BbDd] locks$', nm, re.M)[1], 16)
            expect(f'$object /SyncObject/mutex/locks[3]: {hex(locks + 3 * 40)}\n'.encode()
                   in p.stdout, p.stdout.decode()[:400])
        with check('watch sync: the program ends as an untouched run would'):
            t.do('sync')
            rc, out = t.finish()
            eq((rc, out), (0, f'shared {(1 + len(cases) * 2 + 2 + 3 + 1) * RES_SHARED}\n'),
               'status and stdout')
    finally:
        t.kill()


@test()
def t_watch_files(o):
    """Files of a running program: io_ops and io_bytes on one file among others, exact (the
    bytes from the return values); the file closed and opened again on another descriptor
    while watched, its old number reused by another file: followed; a file not open counts
    nothing; io_bytes of the whole program exact too."""
    t = ResTarget('res-files')
    try:
        t.do('io')
        with check('watch io_ops on a file: exactly its calls, through a reopen'):
            lines, err = res_watch(t, 'io_ops', '/Files' + t.a, 'io', 'reopen', 'pause', 'io')
            eq(watch_total(lines), 2 * RES_A_OPS, 'io_ops of a.dat')
            expect(any(re.match(r'file /Files' + re.escape(t.a) + r': fd \d+ \(.*1 change '
                                r'followed\)', x) for x in lines), f'file line in {lines[-9:]}')
        with check('watch io_bytes on a file: the bytes its calls returned'):
            lines, err = res_watch(t, 'io_bytes', '/Files' + t.a, 'io', 'io')
            eq(watch_total(lines), 2 * RES_A_BYTES, 'io_bytes of a.dat')
            lines, err = res_watch(t, 'io_bytes', '/Files' + t.bfile, 'io')
            # b.dat is open twice since the reopen: its first descriptor and B2's 5 bytes
            eq(watch_total(lines), RES_B_BYTES + 5, 'io_bytes of b.dat')
            expect(any(re.match(r'file /Files' + re.escape(t.bfile) + r': fd \d+, fd \d+ ', x)
                       for x in lines), f'two descriptors in {lines[-9:]}')
            lines, err = res_watch(t, 'io_ops', '/Files' + t.bfile, 'io')
            eq(watch_total(lines), RES_B_OPS + 1, 'io_ops of b.dat (a failed read, B2 too)')
        with check('watch io_time on a file: within the watch; a file not open: nothing'):
            t0 = time.time()
            lines, err = res_watch(t, 'io_time', '/Files' + t.a, 'io')
            between(watch_seconds(lines), 1e-7, time.time() - t0, 'io_time s')
            lines, err = res_watch(t, 'io_ops', '/Files' + os.path.join(TMP, 'never.dat'), 'io')
            eq(watch_total(lines), 0, 'io_ops of a file never open')
            expect(any(x.startswith('file ') and 'not open' in x for x in lines), lines[-9:])
        with check('watch io_bytes of the whole program: every read and write returned'):
            lines, err = res_watch(t, 'io_bytes', '/Code', 'io', 'io')
            # per line: 'io\n' read a byte at a time (the first byte by a read begun before the
            # watch: not counted), a.dat, b.dat (its failed read: nothing), B2's 5 bytes,
            # "done N\n" on stderr
            done = len(f'done {t.n - 1}\n') + len(f'done {t.n}\n')
            eq(watch_total(lines), 2 * (3 + RES_A_BYTES + RES_B_BYTES + 5) - 1 + done,
               'io_bytes of the program')
        with check('watch files: the program ends as an untouched run would'):
            rc, out = t.finish()
            eq((rc, out), (0, 'shared 0\n'), 'status and stdout')
            eq(os.path.getsize(t.a), (1 + 2 + 2 + 1 + 1 + 1 + 1 + 2) * 6400, "size of a.dat")
    finally:
        t.kill()


@test()
def t_watch_resources_launch(o):
    """sonde watch -- PROGRAM with a sync object (resolved before main) and with a file (not
    open before main: followed once opened): exact counts; the program's status is sonde's."""
    b = build('dyn_resources', '-O2', plain=True)
    d = new_dir('res-launch')
    os.makedirs(d)
    a, bf = os.path.join(d, 'a.dat'), os.path.join(d, 'b.dat')
    for metric, focus, phases, want in (
            ('sync_ops', '/SyncObject/mutex/hot_lock', ('sync', 'sync'), 2 * RES_THREADS * RES_HOT),
            ('io_ops', '/Files' + a, ('io', 'io'), 2 * RES_A_OPS)):
        sp = subprocess.Popen([SONDE, 'watch', '--metric', metric, '--focus', focus, '-o',
                               new_dir('res-launch-out'), '--', b, a, bf],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=TMP, preexec_fn=no_core)
        try:
            out, err = LineReader(sp.stdout, 'sonde watch'), LineReader(sp.stderr, 'stderr')
            with check(f'watch launch {metric} at {focus}: exact, then the program ends'):
                out.until('watching ')
                eq(err.line(), 'ready', 'the program started after it was patched')
                err.line()  # heap 0x...
                time.sleep(0.5)  # a.dat opened in main: its descriptor is read within 100 ms
                for i, ph in enumerate(phases):
                    send(sp, err, ph.encode() + b'\n', f'done {i + 1}')
                sp.stdin.close()
                eq(sp.wait(timeout=60), 0, 'status')
                lines = out.rest(sp.stdout.read())
                eq(watch_total(lines), want, f'{metric} at {focus}')
        finally:
            if sp.poll() is None:
                sp.kill()
                sp.communicate()


@test()
def t_watch_cxx_sync(o):
    """A C++ program's sync objects as watch resources, named as in profiles (std::mutex
    holds the pthread object alone: its DWARF type is a class), and sync_ops at two of them
    exactly."""
    b = build_flags('cxx_sync.cc', '-O2')
    t = subprocess.Popen([b], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=TMP, preexec_fn=no_core)
    r = LineReader(t.stderr, 'cxx_sync')
    done = [0]

    def phase():
        t.stdin.write(b'x\n')
        t.stdin.flush()
        done[0] += 1
        eq(r.line(), f'done {done[0]}', 'acknowledgement')

    try:
        eq(r.line(), 'ready', 'first line of cxx_sync')
        phase()
        with check('watch --resources: C++ sync objects by their source names'):
            p = run([SONDE, 'watch', str(t.pid), '--resources'])
            eq(p.returncode, 0, f'status ({p.stderr.decode()[:300]!r})')
            out = p.stdout.decode()
            for name in ['mutex/' + n for n in CXX_PHASE] + ['mutex/rec', 'rwlock/rw', 'cond/cv']:
                expect(re.search(r'^/SyncObject/' + re.escape(name) + r' +0x[0-9a-f]+ .*cxx_sync',
                                 out, re.M), f'{name} in {out[:800]!r}')
            expect('_Z' not in out, f'a mangled name in {out[:800]!r}')
        for name, ops in (('app::queue_lock', 100), ('tick()::local', 7)):
            focus = '/SyncObject/mutex/' + name
            with check(f'watch sync_ops {focus}: exactly its operations'):
                w = Watch(t.pid, '--metric', 'sync_ops', '--focus', focus)
                phase()
                rc, lines, err = w.stop()
                eq(rc, 0, f'sonde watch status ({err.strip()[:300]!r})')
                eq(watch_total(lines), 2 * ops, f'sync_ops at {focus}')  # 2 threads, 1 phase
        with check('watch cxx_sync: the program ends as an untouched run would'):
            phase()
            out, _ = t.communicate(b'', timeout=60)
            eq((t.returncode, out), (0, f'shared {4 * 2272}\n'.encode()), 'status and stdout')
    finally:
        if t.poll() is None:
            t.kill()
            t.communicate()
