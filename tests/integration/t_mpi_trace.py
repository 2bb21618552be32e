# SPDX-License-Identifier: MIT
# Integration tests of MPI traces (docs/format-trace.md "MPI events", docs/analysis.md "MPI
# runs", docs/export.md): tests/programs/mpi_known.c under `sonde run --trace`, 4 ranks. Run by
# run.py in its own namespace, after t_mpi.py (its helpers: mpi_build, mpirun).

# mpi_known.c per rank: MPI_SEND and MPI_RECV events (blocking ring 10 + 10, non-blocking ring
# 8 + 8, Sendrecv and Sendrecv_replace 2 + 2, the wildcard round: ranks 1-3 send 1, rank 0
# receives 3), and 15 collectives (14 in collectives(), the checksum's Reduce).
MPI_KNOWN_EVENTS = {0: (20, 23), 1: (21, 20), 2: (21, 20), 3: (21, 20)}
MPI_KNOWN_COLLS = 15


@test()
def t_mpi_trace_known(o):
    if 'mpi_build' not in globals() or not os.path.exists(os.path.join(ROOT, 'build', 'lib',
                                                                       'libsonde-mpi.so')):
        emit(True, 'mpi --trace: # SKIP no MPI wrapper library (libsonde-mpi.so) in this tree')
        return
    if not shutil.which('mpirun'):
        emit(True, 'mpi --trace: # SKIP mpirun is not installed (Debian: openmpi-bin)')
        return
    b = mpi_build('mpi_known')
    plain, _ = mpirun(b, None, tag='mpi-trace-plain')
    p, d = mpirun(b, ['--trace'], tag='mpi-trace')
    with check('mpi --trace: output unchanged; four traces, each rank\'s MPI events exactly'):
        expect(p.returncode == 0, describe(p))
        eq(p.stdout, plain.stdout, 'stdout (the checksum) under sonde run --trace')
        eq(len(traces(d)), 4, 'traces')
        seen = {}
        for t in traces(d):
            head, n, events, _ = dump(os.path.join(d, t))
            m = [h for h in head if h.strip().startswith('mpi ')]
            expect(m, f'{t}: no "mpi" line in the dump header')
            r = int(re.search(r'rank (\d+) of 4', m[0]).group(1))
            seen[r] = (n.get('MPI_SEND', 0), n.get('MPI_RECV', 0))
            eq(n.get('MPI_COLL', 0), MPI_KNOWN_COLLS, f'rank {r}: MPI_COLL events')
            expect(any(x[2] == 'MPI_RECV' and x[3].startswith('from ') and ' tag 9 ' in x[3]
                       for x in events) == (r == 0), f'rank {r}: wildcard receives')
        eq(seen, MPI_KNOWN_EVENTS, 'MPI_SEND, MPI_RECV per rank')
    with check('mpi --trace: analyze matches every message; no receive before its send'):
        out = analyze(d)
        expect('MPI run: 4 ranks of 4' in out, out[:300])
        expect('messages: 83 sent, 83 received, 83 matched; 0 sends and 0 receives without'
               in out, out[:800])
        expect(f'collectives: {MPI_KNOWN_COLLS}, {4 * MPI_KNOWN_COLLS} events' in out, out[:800])
        expect('messages received before they were sent once approximated: 0' in out,
               out[:2000])
        expect('ignored' not in out, f'edges ignored (a cycle): {out[:2000]}')
    if not shutil.which('otf2-print'):
        emit(True, 'mpi --trace: export --otf2 # SKIP otf2-print is not installed')
        return
    with check('mpi --trace: export --otf2: MPI events and MPI_COMM_WORLD, otf2-print reads them'):
        e = run([SONDE, 'export', '--otf2', d])
        expect(e.returncode == 0, describe(e))
        arch = os.path.join(d, 'otf2', 'traces.otf2')
        c = otf2_print(arch)
        eq([c.get(k) for k in ('MPI_SEND', 'MPI_RECV', 'MPI_COLLECTIVE_BEGIN',
                               'MPI_COLLECTIVE_END')],
           [83, 83, 4 * MPI_KNOWN_COLLS, 4 * MPI_KNOWN_COLLS], 'MPI events')
        g = run(['otf2-print', '-G', arch]).stdout.decode(errors='replace')
        expect(re.search(r'Name: "MPI_COMM_WORLD".*COMM_GROUP, Paradigm: MPI, Flags: NONE, '
                         r'4 Members', g), 'MPI_COMM_WORLD of 4 members')
