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
