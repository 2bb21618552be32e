# SPDX-License-Identifier: MIT
# The Performance Consultant on MPI runs (docs/consult.md "MPI runs", docs/mpi.md): the planted
# programs examples/consult_mpi_*.c under `sonde run --trace`, 4 ranks, searched post mortem
# over all the ranks' traces. What is found is asserted exactly. Run by run.py in its own
# namespace, after t_mpi.py (its helpers: MPI_ENV, MPIRUN) and the consult helpers of run.py.

# 20 ms samples; 0.2 s of minimum observation (10 samples: rounds are 10-21 ms, and a rank's
# first rounds wait for the others to start), 0.6 s sufficient. The programs run about 2.5 s.
MPI_QUICK = ['--period', '20', '--min-obs', '0.2', '--sufficient', '0.6']


def mpi_ready(label):
    if 'MPIRUN' not in globals() or not os.path.exists(os.path.join(ROOT, 'build', 'lib',
                                                                    'libsonde-mpi.so')):
        emit(True, f'{label}: # SKIP no MPI wrapper library (libsonde-mpi.so) in this tree')
        return False
    if not shutil.which('mpirun') or not shutil.which('mpicc'):
        emit(True, f'{label}: # SKIP mpirun or mpicc is not installed (Debian: openmpi-bin)')
        return False
    return True


def mpi_example(name):
    """examples/NAME.c built with `sonde cc -- mpicc -O1 -g`, run by 4 ranks under
    `sonde run --trace`: the run directory."""
    out = os.path.join(TMP, 'bin', name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = [SONDE, 'cc', '--', 'mpicc', '-O1', '-g', '-Wall', '-Wextra', '-o', out,
           os.path.join(EXAMPLES, name + '.c')]
    with check(f'{name}: built, run by 4 ranks with --trace') as c:
        p = run(cmd, cwd=ROOT, env=MPI_ENV)
        expect(p.returncode == 0, f'{shlex.join(cmd)}: {describe(p)}')
        expect(b'warning' not in p.stderr, f'compiler warnings: {first_line(p.stderr)}')
        d = new_dir(name)
        p = run(MPIRUN + [SONDE, 'run', '--trace', '-o', d, '--', out], env=MPI_ENV, timeout=300)
        expect(p.returncode == 0, describe(p))
        eq(len(traces(d)), 4, 'traces (one per rank)')
    if not c.ok:
        raise Fail(f'{name} did not run')
    return d


def mpi_consult_common(d, js, text, label):
    with check(f'{label}: the ranks searched together; the same traces give the same graph'):
        eq(js['ranks'], 4, 'ranks')
        expect('4 MPI ranks' in text, text[:300])
        _, js2 = consult(d, *MPI_QUICK)
        eq([(n['hypothesis'], n['focus'], n['state']) for n in js2['nodes']],
           [(n['hypothesis'], n['focus'], n['state']) for n in js['nodes']], 'graph')


@test()
def t_consult_mpi_imbalance(o):
    """One slow rank: the others wait for it at every MPI_Allreduce."""
    if not mpi_ready('consult mpi imbalance'):
        return
    d = mpi_example('consult_mpi_imbalance')
    m = '/Code/consult_mpi_imbalance.c'
    with check('consult mpi imbalance: LoadImbalance at rank 2, WaitAtCollective at 0, 1, 3'):
        text, js = consult(d, *MPI_QUICK)
        waits = {('WaitAtCollective', f'{m}/exchange,/Process/rank{r},/Communicator/world', None)
                 for r in (0, 1, 3)}
        eq(findings(js), {('CPUBound', f'{m}/work,/Process/rank2', None),
                          ('LoadImbalance', f'{m}/work,/Process/rank2', None)} | waits,
           'bottlenecks')
        imb = shg_node(js, 'LoadImbalance', '/')
        expect(imb['metrics']['cpu_time_rank_max'] > 0.8 and
               imb['metrics']['cpu_time_rank_mean'] < 0.45, f'LoadImbalance /: {imb}')
        for r in (0, 1, 3):
            w = shg_node(js, 'WaitAtCollective',
                         f'{m}/exchange,/Process/rank{r},/Communicator/world')
            expect(w['share'] > 0.5, f'rank {r} waits {w["share"]} of its time')
        expect(not shg_node(js, 'WaitAtCollective', '/Process/rank2')['was_true'],
               'the slow rank does not wait')
        for r in (0, 1, 3):
            expect(not shg_node(js, 'LoadImbalance', f'/Process/rank{r}')['was_true'],
                   f'rank {r} is not overloaded')
        eq(shg_node(js, 'ExcessiveMPISyncWait', '/')['state'], 'true', 'ExcessiveMPISyncWait')
        expect(f'where: {m}/exchange,/Process/rank0,/Communicator/world' in text,
               'explanation: ' + text[-1500:])
    mpi_consult_common(d, js, text, 'consult mpi imbalance')
    with check('consult mpi imbalance: --dot has the MPI nodes'):
        dot = os.path.join(TMP, 'shg-mpi.dot')
        p = run([SONDE, 'consult', d, '-q', '--dot', dot] + MPI_QUICK)
        eq(p.returncode, 0, describe(p))
        with open(dot) as f:
            text = f.read()
        expect('WaitAtCollective' in text and '/Process/rank0' in text and
               '/Communicator/world' in text, text[:300])
    with check('consult mpi imbalance: one rank alone (--pid): its MPI time, no spread, no wait'):
        pid = traces(d)[0].split('.')[1]
        _, js1 = consult(d, '--pid', pid, *MPI_QUICK)
        eq(js1['ranks'], 0, 'ranks')
        eq(shg_node(js1, 'LoadImbalance', '/')['state'], 'unavailable', 'LoadImbalance')
        ms = shg_node(js1, 'ExcessiveMPISyncWait', '/')
        expect(ms['state'] != 'unavailable', f'ExcessiveMPISyncWait: {ms}')
        eq(shg_node(js1, 'WaitAtCollective', '/')['state'] if ms['was_true'] else 'unavailable',
           'unavailable', 'WaitAtCollective without the other ranks')


@test()
def t_consult_mpi_pair(o):
    """A late sender on one tag of one peer pair."""
    if not mpi_ready('consult mpi pair'):
        return
    d = mpi_example('consult_mpi_pair')
    m = '/Code/consult_mpi_pair.c'
    with check('consult mpi pair: LateSender at rank 0 from rank 1 on tag 42, nothing at tag 7'):
        text, js = consult(d, *MPI_QUICK)
        busy = {(h, f'{m}/produce,/Process/rank{r}', None)
                for h in ('CPUBound', 'LoadImbalance') for r in (1, 2, 3)}
        late = ('LateSender', f'{m}/consume,/Process/rank0,/Communicator/world,/Peer/rank1,'
                '/Tag/42', None)
        eq(findings(js), busy | {late}, 'bottlenecks')
        eq(shg_node(js, 'ExcessiveCommWait', '/')['state'], 'true', 'ExcessiveCommWait')
        expect(shg_node(js, 'LateSender', '/Peer/rank1')['was_true'], 'peer rank 1')
        tag7 = [n for n in js['nodes'] if '/Tag/7' in n['focus']]
        expect(tag7 and not any(n['was_true'] for n in tag7), f'tag 7: {tag7}')
        for r in (1, 2, 3):
            expect(not shg_node(js, 'LateSender', f'/Process/rank{r}')['was_true'],
                   f'rank {r} does not wait')
        n = shg_node(js, *late)
        expect(n['share'] > 0.5, f'rank 0 waits {n["share"]} of its time')
        expect(f'where: {late[1]}' in text, 'explanation: ' + text[-1500:])
    mpi_consult_common(d, js, text, 'consult mpi pair')
    with check('consult mpi: two traces of one rank, or a trace of another program: one line'):
        dup = new_dir('consult-mpi-dup')
        shutil.copytree(d, dup)
        first = traces(dup)[0]
        shutil.copy(os.path.join(dup, first), os.path.join(dup, 'trace.1.strc'))
        expect_error(run([SONDE, 'consult', dup, '-q']), 'are of MPI rank', 1)
        os.remove(os.path.join(dup, 'trace.1.strc'))
        other = trun(build_example('consult_cpu'), tag='consult-mpi-other')
        shutil.copy(os.path.join(other, traces(other)[0]), os.path.join(dup, 'trace.2.strc'))
        expect_error(run([SONDE, 'consult', dup, '-q']), 'choose one with --pid P', 1)


# ---- live (docs/consult.md "MPI programs live"): the ranks attached, searched together ----

def mpi_plain(name):
    """examples/NAME.c built with plain mpicc (no hooks: the live search needs none)."""
    out = os.path.join(TMP, 'bin', name + '-plain')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = ['mpicc', '-O1', '-g', '-Wall', '-Wextra', '-o', out, os.path.join(EXAMPLES, name + '.c')]
    with check(f'{name}: built with plain mpicc') as c:
        p = run(cmd, cwd=ROOT, env=MPI_ENV)
        expect(p.returncode == 0, f'{shlex.join(cmd)}: {describe(p)}')
    if not c.ok:
        raise Fail(f'{name} did not build')
    return out


def consult_live_mpi(target, *opts, timeout=600):
    """`sonde consult -q --json F --sufficient 2 OPTS TARGET...` under MPI_ENV: (the process,
    the JSON)."""
    js = os.path.join(TMP, f'consult-live-mpi-{RUNS[0]}.json')
    RUNS[0] += 1
    p = run([SONDE, 'consult', '-q', '--json', js, '--sufficient', '2'] + list(opts) +
            list(target), env=MPI_ENV, timeout=timeout)
    expect(p.returncode == 0, f'sonde consult {shlex.join(map(str, target))}: {describe(p)}')
    with open(js) as f:
        return p, json.load(f)


def ranks_of(js, hyp):
    """The world ranks at whose foci hyp was true (any procedure)."""
    out = set()
    for n in js['nodes']:
        m = re.search(r'/Process/rank(\d+)', n['focus'])
        if n['hypothesis'] == hyp and n['was_true'] and m:
            out.add(int(m.group(1)))
    return out


def live_mpi_checks(js, ended=True):
    eq(js['ranks'], 4, 'ranks')
    eq(sorted(r['rank'] for r in js['rank_pids']), [0, 1, 2, 3], 'ranks attached')
    eq(len({r['pid'] for r in js['rank_pids']}), 4, 'one process a rank')
    live_checks(js, ended)
    # a channel focus measures only MPI receives (mpi_p2p_time), in the chain Communicator ->
    # Peer -> Tag, never refined along Code (docs/consult.md "Communicator, Peer and Tag live")
    for n in js['nodes']:
        if any(k in n['focus'] for k in ('/Communicator', '/Peer', '/Tag')):
            expect(n['hypothesis'] == 'ExcessiveCommWait' or
                   (n['hypothesis'] == 'LateSender' and n['state'] == 'unavailable'),
                   f'a channel focus: {n}')
            expect('/Tag' not in n['focus'] or '/Peer' in n['focus'], f'chain: {n["focus"]}')
            expect('/Peer' not in n['focus'] or '/Communicator/world' in n['focus'],
                   f'chain: {n["focus"]}')


@test()
def t_consult_live_mpi_imbalance(o):
    """Live, launched through mpirun: the slow rank and the ranks that wait for it, the same
    ranks as post mortem."""
    if not mpi_ready('consult live mpi imbalance'):
        return
    d = mpi_example('consult_mpi_imbalance')
    _, pm = consult(d, *MPI_QUICK)
    b = mpi_plain('consult_mpi_imbalance')
    m = '/Code/consult_mpi_imbalance.c'
    with check('consult live mpi imbalance: LoadImbalance at rank 2 in work, WaitAtCollective '
               'at ranks 0, 1, 3 in exchange, as post mortem'):
        # 6: about 15 s (rank 2 sleeps 20 ms a round), so that the search reaches the
        # procedures of every rank even on a loaded machine
        p, js = consult_live_mpi(['--', *MPIRUN, b, '6'])
        live_mpi_checks(js)
        # the planted ranks, found live and post mortem (t_consult_mpi_imbalance asserts the
        # post-mortem sets exactly)
        eq(ranks_of(js, 'LoadImbalance'), {2}, 'LoadImbalance ranks')
        expect({2} <= ranks_of(pm, 'LoadImbalance'), f'post mortem {ranks_of(pm, "LoadImbalance")}')
        eq(ranks_of(js, 'WaitAtCollective'), {0, 1, 3}, 'WaitAtCollective ranks')
        expect({0, 1, 3} <= ranks_of(pm, 'WaitAtCollective'),
               f'post mortem {ranks_of(pm, "WaitAtCollective")}')
        expect(shg_node(js, 'LoadImbalance', f'{m}/work,/Process/rank2')['was_true'],
               'LoadImbalance in work at rank 2')
        for r in (0, 1, 3):
            expect(shg_node(js, 'WaitAtCollective', f'{m}/exchange,/Process/rank{r}')['was_true'],
                   f'WaitAtCollective in exchange at rank {r}')
            expect(not shg_node(js, 'LoadImbalance', f'/Process/rank{r}')['was_true'],
                   f'rank {r} is not overloaded')
        eq(shg_node(js, 'ExcessiveMPISyncWait', '/')['state'], 'true', 'ExcessiveMPISyncWait')
        expect(not [n for n in js['nodes'] if '/Communicator' in n['focus']],
               'no channel: the program makes no MPI_Recv (its collectives have none live)')
        eq(shg_node(js, 'LateSender', '/')['state'] if shg_node(js, 'ExcessiveCommWait', '/')
           ['was_true'] else 'unavailable', 'unavailable', 'LateSender live')
        out = p.stdout.decode()
        expect('4 MPI ranks of process' in out and 'rank 2 = process' in out, out[:400])
        expect(re.search(r'where: \S*/Process/rank[013]\n', out), 'explanation: ' + out[-1500:])
        expect(b'the program exited' not in p.stdout, 'mpirun\'s status')
        # every node concluded some 4 s in, the true ones re-tested to the end of the 15 s run
        # in ever wider buckets (0.25 s to 2 s): most of the run settled in a few steps; the
        # mean of work's time over the ranks at rank 0, 1, 2, 3 is one sample, not four
        dv = js['data']
        expect(dv['settled_steps'] >= 1 and dv['settled_samples'] < dv['samples'] / 2,
               f'settled {dv}')
        expect(dv['pair_samples'] > dv['samples'], f'shared readings counted once {dv}')
        for r in js['rank_pids']:
            expect(r['messages'] > 0 and r['wire_bytes'] > r['entries'], f'rank {r}')
        eq(sum(r['wire_bytes'] for r in js['rank_pids']), dv['wire_bytes'], 'wire by rank')


@test()
def t_consult_live_mpi_attach(o):
    """Live, attached through mpirun's process id: rank 0 waits in its receives (the late
    sender of post mortem), no other rank; the ranks run on and end as they would."""
    if not mpi_ready('consult live mpi attach'):
        return
    d = mpi_example('consult_mpi_pair')
    _, pm = consult(d, *MPI_QUICK)
    b = mpi_plain('consult_mpi_pair')
    with check('consult live mpi attach: ExcessiveCommWait at rank 0 in consume, as post '
               'mortem\'s LateSender; mpirun let go'):
        # 8: about 16 s of rounds of 10 ms; the search takes 10 s of it
        sp = subprocess.Popen(MPIRUN + [b, '8'], env=MPI_ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        try:
            time.sleep(0.5)
            p, js = consult_live_mpi([str(sp.pid)], '--for', '10s')
            out, err = sp.communicate(timeout=600)
        finally:
            if sp.poll() is None:
                sp.terminate()
                sp.wait()
        eq(sp.returncode, 0, f'mpirun\'s status ({err[-300:]})')
        live_mpi_checks(js, ended=False)
        expect(0 in ranks_of(pm, 'LateSender'), f'post mortem {ranks_of(pm, "LateSender")}')
        # live, a receive's whole time counts (no matching: no late-sender part): ranks 2 and 3
        # may wait too when the machine's load holds one of them back two rounds; rank 0 waits
        # most, rank 1 never receives
        cw = ranks_of(js, 'ExcessiveCommWait')
        expect(0 in cw and 1 not in cw, f'ExcessiveCommWait ranks {cw}')
        wait = {r: shg_node(js, 'ExcessiveCommWait', f'/Process/rank{r}')['value'] or 0
                for r in range(4)}
        expect(wait[0] > max(wait[1], wait[2], wait[3]), f'rank 0 waits most: {wait}')
        expect(shg_node(js, 'ExcessiveCommWait',
                        '/Code/consult_mpi_pair.c/consume,/Process/rank0')['was_true'],
               'ExcessiveCommWait in consume at rank 0')
        eq(shg_node(js, 'LateSender', '/')['state'], 'unavailable', 'LateSender live')
        # rank 0 computes nothing: the imbalance is among the others, as post mortem
        li = ranks_of(js, 'LoadImbalance')
        expect(li and li <= {1, 2, 3}, f'LoadImbalance ranks {li}')


@test()
def t_consult_live_mpi_channels(o):
    """Live, the channels of the receives learned from their arguments: rank 0's wait is on
    MPI_COMM_WORLD from rank 1 on tag 42, where post mortem's LateSender is; never tag 7."""
    if not mpi_ready('consult live mpi channels'):
        return
    b = mpi_plain('consult_mpi_pair')
    m = '/Code/consult_mpi_pair.c'
    with check('consult live mpi channels: ExcessiveCommWait at consume, rank 0, world, peer '
               'rank 1, tag 42; never at tag 7'):
        # 12: about 24 s of rounds of 10 ms. The chain is found within some 4 s of it on an idle
        # machine, but its last node (seven levels down) needs a fifth of the run observed
        # (--min-fraction): under a load of 9, 8 (16 s idle, 24-31 s there) ended before it
        # could conclude in 2 of 4 runs of 2026-11-22
        p, js = consult_live_mpi(['--', *MPIRUN, b, '12'])
        live_mpi_checks(js)
        cw = f'{m}/consume,/Process/rank0,/Communicator/world,/Peer/rank1,/Tag/42'
        for f in ('/Communicator/world', '/Communicator/world,/Peer/rank1',
                  '/Communicator/world,/Peer/rank1,/Tag/42', f'{m}/consume,/Process/rank0,'
                  '/Communicator/world,/Peer/rank1', cw):
            n = shg_node(js, 'ExcessiveCommWait', f)
            expect(n['was_true'], f'ExcessiveCommWait at {f}: {n}')
        # rank 0 waits nearly all its time, a quarter of the four ranks'
        expect(shg_node(js, 'ExcessiveCommWait', cw)['value'] > 0.5, f'{cw}')
        # the swapping ranks' channels were learned too (rank 2 receives from 3, 3 from 2)
        for r in (2, 3):
            n = shg_node(js, 'ExcessiveCommWait', f'/Communicator/world,/Peer/rank{r}')
            expect(not n['was_true'], f'peer rank {r} is no bottleneck: {n}')
        # tag 7 (ranks 2 and 3, two rounds ahead) is never a wait of all the ranks; under a
        # heavy load one of them held back two rounds makes the other wait (a receive's whole
        # time counts live), at its own rank only
        for n in js['nodes']:
            if '/Tag/7' in n['focus'] and n['was_true']:
                expect(re.search(r'/Process/rank[23],', n['focus']), f'tag 7: {n["focus"]}')
        for n in js['nodes']:
            if '/Peer/rank1' in n['focus'] and n['was_true']:
                expect('/Process/rank' not in n['focus'] or '/Process/rank0' in n['focus'],
                       f'only rank 0 receives from rank 1: {n["focus"]}')
        eq(shg_node(js, 'LateSender', '/')['state'], 'unavailable', 'LateSender live')
        expect(b'the program exited' not in p.stdout, 'mpirun\'s status')


@test()
def t_consult_live_mpi_errors(o):
    """mpirun of a program without MPI: one line, and mpirun ends."""
    if not mpi_ready('consult live mpi errors'):
        return
    with check('consult live mpi: a program without MPI under mpirun, one line'):
        p = run([SONDE, 'consult', '-q', '--', *MPIRUN[:-1], '2', 'sleep', '30'], env=MPI_ENV,
                timeout=300)
        expect_error(p, 'no MPI library', 1)
        expect(b'has no MPI library' in p.stderr, first_line(p.stderr))
    with check('consult live mpi: a launcher that ends before its ranks, one line'):
        p = run([SONDE, 'consult', '-q', '--', *MPIRUN[:-1], '2', 'true'], env=MPI_ENV,
                timeout=300)
        expect_error(p, 'launcher ended', 1)


def rank_pid(launcher, rank, wait=60):
    """The process of world rank RANK among the children of LAUNCHER (None: not found)."""
    end = time.time() + wait
    while time.time() < end:
        for d in os.listdir('/proc'):
            try:
                with open(f'/proc/{d}/stat') as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
                with open(f'/proc/{d}/environ', 'rb') as f:
                    env = f.read().split(b'\0')
            except (OSError, ValueError, IndexError):
                continue
            if ppid == launcher and f'OMPI_COMM_WORLD_RANK={rank}'.encode() in env:
                return int(d)
        time.sleep(0.1)
    return None


@test()
def t_consult_live_mpi_one_rank(o):
    """One rank attached alone: its MPI time, magnified to its procedure (no other rank: no
    cross-rank hypothesis); the job runs on and ends as it would."""
    if not mpi_ready('consult live mpi one rank'):
        return
    b = mpi_plain('consult_mpi_pair')
    with check('consult live mpi one rank: ExcessiveCommWait at consume in rank 0 alone'):
        sp = subprocess.Popen(MPIRUN + [b, '6'], env=MPI_ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        try:
            pid = rank_pid(sp.pid, 0)
            expect(pid, 'rank 0 not found')
            time.sleep(1)  # past MPI_Init
            p, js = consult_live_mpi([str(pid)], '--for', '6s')
            out, err = sp.communicate(timeout=600)
        finally:
            if sp.poll() is None:
                sp.terminate()
                sp.wait()
        eq(sp.returncode, 0, f'mpirun\'s status ({err[-300:]})')
        eq(js['ranks'], 1, 'ranks')
        eq([(r['rank'], r['pid']) for r in js['rank_pids']], [(0, pid)], 'the rank')
        eq(js['rank_pids'][0]['wire_bytes'], js['data']['wire_bytes'], 'its bytes')
        for h in ('LoadImbalance', 'LateSender'):
            eq(shg_node(js, h, '/')['state'], 'unavailable', h)
        expect(shg_node(js, 'ExcessiveCommWait', '/Code/consult_mpi_pair.c/consume')['was_true'],
               'ExcessiveCommWait in consume')
        expect(b'MPI rank 0, process' in p.stdout, p.stdout[:300])
