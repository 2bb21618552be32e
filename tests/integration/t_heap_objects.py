# SPDX-License-Identifier: MIT
# Integration tests of heap sync objects in dynamic mode (docs/dynamic.md, "Heap sync
# objects"): the runtime's RECORD primitive and the RESOURCES request (protocol version 5)
# behind `sonde watch PID --resources`, and the live consultant's /SyncObject refined to heap
# objects. Run by run.py in its own namespace. Programs: tests/programs/heap_locks.c (one phase
# per line of stdin), examples/consult_heap_locks.c.

HEAP_THREADS, HEAP_QUIET, HEAP_HOT, HEAP_QUIET_USES = 4, 11, 250, 10


class HeapTarget:
    """A running heap_locks: phases fed on stdin, acknowledged "done N" on stderr."""

    def __init__(self):
        self.b = build('heap_locks', '-O0', plain=True)
        self.p = subprocess.Popen([self.b], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=TMP, preexec_fn=no_core)
        self.r = LineReader(self.p.stderr, 'heap_locks')
        self.n = 0
        self.said = []
        eq(self.r.line(), 'ready', 'first line of heap_locks')

    def do(self, ph):
        self.n += 1
        self.p.stdin.write(ph.encode() + b'\n')
        self.p.stdin.flush()
        while True:
            line = self.r.line()
            if line == f'done {self.n}':
                return
            self.said.append(line.split())

    def addr(self, what):
        return [hex(int(a, 16)) for w, a in self.said if w == what]

    def finish(self):
        out, err = self.p.communicate(timeout=60)  # closes stdin: the program ends
        return self.p.returncode, out.decode()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate()


def heap_listing(out):
    """The heap objects of `sonde watch --resources`: {path: (uses, inits, site)}."""
    objs = {}
    for m in re.finditer(r'^(/SyncObject/\w+/0x[0-9a-f]+) +uses (\d+) +inits (\d+) +init at (.*)$',
                         out, re.M):
        objs[m[1]] = (int(m[2]), int(m[3]), m[4])
    return objs


@test()
def t_watch_heap(o):
    """`sonde watch PID --resources` while the program makes and uses its heap objects: every
    heap mutex by its address with exactly its lock calls (the hot one 4 x 250, the quiet ones
    10 or none), its initialisation's call site, the heap rwlock and semaphore; none of the
    libc's variables among them; the program's output untouched; then a second listing sees
    nothing (a new session) and a focus on the hot mutex's address counts its locks."""
    t = HeapTarget()
    try:
        w = Watch(t.p.pid, '--resources', '--for', '10m')
        t.do('make')
        t.do('use')
        rc, lines, err = w.stop()
        out = '\n'.join(lines)
        mutex_site = 'new_mutex (heap_locks.c:%d)' % line_of('heap_locks', "the mutexes' init site")
        rw_site = 'make_locks (heap_locks.c:%d)' % line_of('heap_locks', "the rwlock's init site")
        with check('watch --resources: the heap objects used, exactly'):
            eq(rc, 0, f'status ({err.strip()[:300]!r})')
            hot, quiet = t.addr('hot'), t.addr('quiet')
            eq((len(hot), len(quiet)), (1, HEAP_QUIET), 'addresses said by the program')
            want = {f'/SyncObject/mutex/{hot[0]}': (HEAP_THREADS * HEAP_HOT, 1, mutex_site)}
            for k, a in enumerate(quiet):
                want[f'/SyncObject/mutex/{a}'] = (HEAP_QUIET_USES if k < HEAP_THREADS else 0, 1,
                                                  mutex_site)
            want[f'/SyncObject/rwlock/{t.addr("rwlock")[0]}'] = (5, 1, rw_site)
            sem_site = 'make_locks (heap_locks.c:%d)' % line_of('heap_locks', 'sem_init(sem')
            want[f'/SyncObject/sem/{t.addr("sem")[0]}'] = (8, 1, sem_site)
            eq(heap_listing(out), want, 'heap objects')
            expect('/SyncObject/mutex/__gai_requests_mutex' in out, 'the data variables first')
            expect('uses not recorded' not in out, out[-300:])
        with check('watch --resources again: a new session, nothing used since'):
            p = run([SONDE, 'watch', str(t.p.pid), '--resources', '--for', '300ms'])
            eq(p.returncode, 0, f'status ({p.stderr.decode()[:300]!r})')
            expect(b'no heap sync object used while recorded' in p.stdout, p.stdout[-300:])
        with check('watch sync_ops at the heap mutex by its address: exactly its locks'):
            w = Watch(t.p.pid, '--metric', 'sync_ops', '--focus', f'/SyncObject/mutex/{hot[0]}')
            t.do('use')
            rc, lines, err = w.stop()
            eq(rc, 0, f'status ({err.strip()[:300]!r})')
            eq(watch_total(lines), HEAP_THREADS * HEAP_HOT, 'sync_ops at the hot mutex')
        with check('heap_locks: untouched'):
            rc, out = t.finish()
            eq(rc, 0, 'status')
            eq(out, f'shared {2 * HEAP_THREADS * (HEAP_HOT + HEAP_QUIET_USES)}\n', 'output')
    finally:
        t.kill()


@test()
def t_consult_live_heap_locks(o):
    """Live: the hot mutex among twelve quiet ones, all on the heap (no variable names them):
    the runtime records the objects the lock calls take, /SyncObject/mutex refines to them by
    address, and ExcessiveSyncWaitingTime is true at the hot one's address, never at a quiet
    one's."""
    b = build_plain_example('consult_heap_locks')
    with check('consult live heap locks: ExcessiveSyncWaitingTime at the hot heap mutex'):
        # 9: about 9 s of program on an idle machine, so that the refinement below
        # /SyncObject/mutex has the time to be tested even under load (with 6 s, two loaded
        # `make check` runs of 2026-11-22 ended before /SyncObject/mutex was concluded)
        p, js = consult_live(['--', b, '9'])
        out = p.stdout.decode()
        m = re.search(r'^hot mutex (0x[0-9a-f]+)$', out, re.M)
        expect(m and 'consult_heap_locks: 1' in out, f'the program\'s output {out[:300]!r}')
        hot = f'/SyncObject/mutex/{m[1]}'
        eq(shg_node(js, 'ExcessiveSyncWaitingTime', '/SyncObject/mutex')['state'], 'true',
           '/SyncObject/mutex')
        eq(shg_node(js, 'ExcessiveSyncWaitingTime', hot)['state'], 'true', 'the hot mutex')
        heap = {n['focus'] for n in js['nodes'] if n['hypothesis'] == 'ExcessiveSyncWaitingTime'
                and re.fullmatch(r'/SyncObject/mutex/0x[0-9a-f]+', n['focus'])}
        expect(len(heap) >= 5, f'heap mutexes refined to: {sorted(heap)}')
        for n in js['nodes']:
            if re.search(r'/SyncObject/mutex/0x', n['focus']) and hot not in n['focus']:
                expect(not n['was_true'], f'{n["hypothesis"]} {n["focus"]} was true')
        live_checks(js)
