# SPDX-License-Identifier: MIT
# The other views of a run: folded stacks of the measured call paths (--folded=time|calls),
# --help of every command and the man pages made from it, and the terminal (width, colour,
# NO_COLOR, progress). Run by run.py in its own namespace.

import pty
import struct
import fcntl
import termios


def folded_lines(d, mode):
    p = run([SONDE, 'report', f'--folded={mode}', d])
    expect(p.returncode == 0, f'sonde report --folded={mode}: {describe(p)}')
    out = {}
    for line in p.stdout.decode().splitlines():
        m = re.match(r'^(\S[^;]*(?:;[^;]+)*) (\d+)$', line)
        expect(m, f'folded line {line!r} is not "a;b;c N"')
        expect(m.group(1) not in out, f'path {m.group(1)!r} twice')
        out[m.group(1)] = int(m.group(2))
    return out


@test()
def t_folded_measured(o):
    """--folded=calls: one line per call path with its calls, exactly; =time: the exclusive us."""
    b = build('threads', '-O0')
    p, d = srun(b, tag='folded-measured')
    expect(p.returncode == 0, f'sonde run: {describe(p)}')
    with check('folded calls: the call paths of threads, exact'):
        eq(folded_lines(d, 'calls'), {'main': 1, 'worker': 4, 'worker;work': 4000}, 'lines')
    with check('folded time: compensated exclusive microseconds per path'):
        lines = folded_lines(d, 'time')
        js = report(d)
        total = sum(f['excl_c_ns'] for f in funcs(js).values()) / 1e3
        expect(set(lines) <= {'main', 'worker', 'worker;work'}, f'paths {sorted(lines)}')
        expect(abs(sum(lines.values()) - total) <= 3, f'sum {sum(lines.values())} us, '
               f'functions {total:.1f} us')
    with check('folded: a measured run defaults to time, a mode it lacks is one error line'):
        p = run([SONDE, 'report', '--folded', d])
        eq(p.stdout.decode().splitlines()[0].rsplit(' ', 1)[0] in ('main', 'worker',
                                                                   'worker;work'), True,
           'default lines')
        for mode, msg in (('sampled', b'needs a sampled run'), ('bogus', b'wants sampled')):
            p = run([SONDE, 'report', f'--folded={mode}', d])
            expect(p.returncode != 0 and p.stderr.startswith(b'sonde: report: ') and msg in
                   p.stderr and p.stderr.count(b'\n') == 1, f'--folded={mode}: {describe(p)}')
    b2 = build('recursion', '-O0')
    p, d2 = srun(b2, tag='folded-recursion')
    with check('folded calls: recursion keeps every level'):
        lines = folded_lines(d2, 'calls')
        js = report(d2)
        eq(sum(lines.values()), sum(f['calls'] for f in funcs(js).values()), 'calls in all')
        eq(max(len(k.split(';')) for k in lines), depth(js), 'deepest path')


def commands():
    p = run([SONDE, '--help'])
    expect(p.returncode == 0, f'sonde --help: {describe(p)}')
    cmds = re.findall(r'^  (\w+)\s{2,}', p.stdout.decode(), re.M)
    expect(len(cmds) >= 10, f'commands listed: {cmds}')
    return cmds


@test()
def t_help_every_command(o):
    """`sonde X --help` for every command: usage on stdout, status 0, nothing else."""
    for c in commands():
        with check(f'help: sonde {c} --help'):
            for flag in ('--help',):
                p = run([SONDE, c, flag], timeout=30)
                eq(p.returncode, 0, f'sonde {c} {flag} status ({first_line(p.stderr)})')
                expect(p.stdout.startswith(f'usage: sonde {c}'.encode()),
                       f'sonde {c} {flag}: {first_line(p.stdout)!r}')
                eq(p.stderr, b'', f'sonde {c} {flag} stderr')


@test()
def t_man_pages(o):
    """scripts/man.py makes a page per command from its --help; man renders each."""
    out = os.path.join(TMP, 'man')
    with check('man: one page per command, from --help'):
        p = run([sys.executable, os.path.join(ROOT, 'scripts', 'man.py'), SONDE, out])
        expect(p.returncode == 0, f'man.py: {describe(p)}')
        cmds = commands()
        eq(sorted(os.listdir(out)), sorted(['sonde.1'] + [f'sonde-{c}.1' for c in cmds]),
           'pages')
        with open(os.path.join(out, 'sonde-report.1')) as f:
            page = f.read()
        expect(page.startswith('.TH SONDE-REPORT 1 ') and '\n.SH NAME\n' in page and
               '\n.SH SYNOPSIS\n' in page, 'sections')
        expect('\\fB\\-\\-html \\-o FILE\\fR' in page, 'the --html option as a tagged paragraph')
    if not shutil.which('man'):
        emit(True, 'man: rendered: # SKIP man is not installed')
        return
    with check('man: every page renders, with the text of --help'):
        for c in cmds:
            p = run(['man', '-l', '-Tutf8', os.path.join(out, f'sonde-{c}.1')],
                    env=dict(os.environ, MANWIDTH='100', MAN_KEEP_FORMATTING=''))
            text = re.sub(r'.\x08', '', p.stdout.decode('utf-8', 'replace'))
            expect(p.returncode == 0 and 'NAME' in text and 'SYNOPSIS' in text,
                   f'man sonde-{c}: {describe(p)}')
            h = run([SONDE, c, '--help']).stdout.decode().splitlines()
            words = h[0].split()[:3]
            expect(' '.join(words[1:]) in ' '.join(text.split()),
                   f'sonde-{c}.1 lacks "{" ".join(words[1:])}"')


def in_pty(cmd, env=None, cols=80):
    """Run cmd with stdout and stderr on a pseudo-terminal COLS wide: (status, bytes)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 50, cols, 0, 0))
    e = dict(os.environ)
    e.pop('COLUMNS', None)
    e.pop('NO_COLOR', None)
    e['TERM'] = 'xterm'
    e.update(env or {})
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=e)
    os.close(slave)
    out = b''
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=120), out


TABLE_ROW = re.compile(r'^\s*\d+\.\d%\s')  # a row of the flat table or the call paths


@test()
def t_terminal(o):
    """Tables fitted to the terminal, colour only there and never with NO_COLOR, progress."""
    b = build('threads', '-O0')
    p, d = srun(b, tag='terminal')
    with check('terminal: a pipe gets whole lines and no colour'):
        t = run([SONDE, 'report', d], env=dict(os.environ, COLUMNS='40'))
        expect(b'\x1b[' not in t.stdout, 'escape sequences in a pipe')
        expect(re.search(rb'work  \(threads\.c:\d+\)', t.stdout), 'whole names')
    with check('terminal: colour on a terminal, elided names fit its width'):
        st, out = in_pty([SONDE, 'report', d], cols=70)
        eq(st, 0, 'status')
        expect(b'\x1b[1m' in out, 'no bold heading on a terminal')
        lines = re.sub(rb'\x1b\[[0-9;]*m', b'', out).decode().replace('\r', '').split('\n')
        rows = [ln for ln in lines if TABLE_ROW.match(ln)]
        expect(len(rows) >= 6, f'table rows: {rows}')
        eq([ln for ln in rows if len(ln) > 70], [], 'table rows wider than the terminal')
    with check('terminal: NO_COLOR turns colour off, COLUMNS sets the width'):
        st, out = in_pty([SONDE, 'report', d], env={'NO_COLOR': '1', 'COLUMNS': '60'}, cols=200)
        eq(st, 0, 'status')
        expect(b'\x1b[' not in out, 'escape sequences with NO_COLOR')
        rows = [ln for ln in out.decode().replace('\r', '').split('\n') if TABLE_ROW.match(ln)]
        expect(len(rows) >= 6, f'table rows: {rows}')
        eq([ln for ln in rows if len(ln) > 60], [], 'table rows wider than COLUMNS')
        expect('(narrow terminal: some columns left out)' in out.decode(),
               'no column left out at 60 columns')
    bt = build_example('consult_cpu')
    dt = trun(bt, tag='terminal-trace')
    with check('terminal: progress on a terminal stderr only, cleared at the end'):
        env = {'SONDE_PROGRESS_AFTER_MS': '0'}
        for cmd in ([SONDE, 'analyze', dt], [SONDE, 'consult', '-q', dt],
                    [SONDE, 'export', '--chrome', '-o', os.path.join(TMP, 'p.json'), dt],
                    [SONDE, 'report', '--html', '-o', os.path.join(TMP, 'p.html'), dt]):
            st, out = in_pty(cmd, env=env)
            eq(st, 0, f'{cmd[1]} status')
            expect(re.search(rb'\r\x1b\[Ksonde: ' + cmd[1].encode() + rb': ', out),
                   f'{cmd[1]}: no progress line on the terminal: {out[:300]!r}')
            expect(b'\r\x1b[K' in out, f'{cmd[1]}: the progress line is not cleared')
            p = run(cmd, env=dict(os.environ, SONDE_PROGRESS_AFTER_MS='0'))
            expect(b'\x1b[K' not in p.stderr and b'\r' not in p.stdout,
                   f'{cmd[1]}: progress written to a pipe')


def lines_of(out):
    """A pty's output as lines, colour sequences and carriage returns removed."""
    text = re.sub(rb'\x1b\[[0-9;]*[mK]', b'', out).decode().replace('\r', '')
    return text.split('\n')


@test()
def t_terminal_widths(o):
    """Every text table of report (all sections), report --diff, analyze, consult and metrics
    fits COLUMNS on a terminal, exactly: no line wider, an elided line (…) exactly as wide;
    columns dropped by priority; off a terminal COLUMNS changes nothing."""
    b = build('wide', '-O0')
    long_path = os.path.join(TMP, 'a_directory_name_long_enough_for_the_files_table_of_sonde')
    p, d = srun(b, args=[long_path], opts=['--sync', '--io', '--os'], tag='wide')
    expect(p.returncode == 0, f'sonde run wide: {describe(p)}')
    pt, dt = srun(b, opts=['--trace', '--sync'], tag='wide-trace')
    expect(pt.returncode == 0, f'sonde run --trace wide: {describe(pt)}')
    cmds = {'report': [SONDE, 'report', d], 'diff': [SONDE, 'report', d, '--diff', d],
            'analyze': [SONDE, 'analyze', dt], 'consult': [SONDE, 'consult', dt],
            'metrics': [SONDE, 'metrics']}
    for cols in (40, 60, 80, 100):
        with check(f'terminal widths: every line of every command fits {cols} columns'):
            for name, cmd in cmds.items():
                st, out = in_pty(cmd, env={'COLUMNS': str(cols)}, cols=200)
                eq(st, 0, f'{name} status')
                lines = lines_of(out)
                expect(len(lines) > 5, f'{name}: {lines}')
                eq([ln for ln in lines if len(ln) > cols], [], f'{name}: lines wider than {cols}')
                # a name elided at the end of its line fills it exactly
                eq([ln for ln in lines if '\u2026' in ln and
                    '  ' not in ln[ln.index('\u2026'):] and len(ln) != cols], [],
                   f'{name}: lines ending in an elided name not exactly {cols} wide')
    with check('terminal widths: the sections of report, names elided'):
        st, out = in_pty(cmds['report'], env={'COLUMNS': '60'}, cols=200)
        text = '\n'.join(lines_of(out))
        for head in ('Flat profile', 'Call paths', 'Counters', 'Phases', 'Synchronization objects',
                     'Shared-memory compensation', 'Files by I/O time', 'I/O by phase',
                     'OS counters per thread', 'OS counters by phase'):
            expect(head in text, f'section {head!r} missing at 60 columns')
        for whole in ('a_function_whose_name_is_much_longer_than_what_a_narrow_terminal_leaves',
                      'a_lock_with_a_rather_long_name_to_be_elided_on_narrow_terminals',
                      'a_counter_with_a_long_name_that_does_not_fit_either',
                      'a_phase_whose_name_is_long_enough_to_be_elided_too'):
            expect(whole not in text and whole[:8] in text, f'{whole} not elided at 60')
    with check('terminal widths: the flat table drops columns by priority, exactly'):
        heads = {}
        for cols in (60, 80, 100, 200):
            st, out = in_pty([SONDE, 'report', '--flat', d], env={'COLUMNS': str(cols)}, cols=200)
            heads[cols] = [ln for ln in lines_of(out) if 'excl(c)' in ln][0].split()
        eq(heads[60], ['excl%', 'excl(c)', 'incl(c)', 'function', '(file:line)'], '60 columns')
        eq(heads[80], ['excl%', 'excl(c)', 'incl(c)', 'incl', 'calls', 'function',
                       '(file:line)'], '80 columns')
        eq(heads[100], ['excl%', 'excl(c)', 'excl', 'incl(c)', 'incl', 'calls', 'function',
                        '(file:line)'], '100 columns')
        eq(heads[200], ['excl%', 'excl(c)', 'excl', 'incl(c)', 'incl', 'calls', 'call(c)',
                        'function', '(file:line)'], '200 columns')
    with check('terminal widths: off a terminal COLUMNS changes nothing (whole lines)'):
        for name, cmd in cmds.items():
            if name == 'consult':
                cmd = cmd[:2] + ['-q'] + cmd[2:]
            plain = run(cmd, env={k: v for k, v in os.environ.items() if k != 'COLUMNS'})
            narrow = run(cmd, env=dict(os.environ, COLUMNS='40'))
            eq(plain.returncode, 0, f'{name}: {describe(plain)}')
            if name in ('report', 'diff', 'metrics'):
                eq(narrow.stdout, plain.stdout, f'{name} in a pipe with COLUMNS=40')
            expect('\u2026' not in narrow.stdout.decode(), f'{name}: elided in a pipe')
