#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
Man pages from the one source of sonde's usage text: `sonde --help` and `sonde CMD --help`.
  scripts/man.py SONDE OUTDIR      writes OUTDIR/sonde.1 and OUTDIR/sonde-CMD.1 (`make man`)
Option lines ("  --name ARG   what it does", continued by deeper-indented lines) become tagged
paragraphs; other lines are kept as they are (no fill), escaped for roff.
"""
import os
import re
import subprocess
import sys

OPTION = re.compile(r'^(\s{1,4})(-\S.*?)(?:\s{2,}(\S.*))?$')


def roff(s):
    s = s.replace('\\', '\\e').replace('-', '\\-')
    return '\\&' + s if s[:1] in ('.', "'") else s


def helptext(sonde, *args):
    p = subprocess.run([sonde, *args, '--help'], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or not p.stdout.startswith('usage:'):
        sys.exit(f'man.py: {" ".join([sonde, *args])} --help: status {p.returncode}, '
                 f'{(p.stdout or p.stderr)[:200]!r}')
    return p.stdout.rstrip('\n').split('\n')


def body(lines):
    """The lines after the usage line: tagged paragraphs for options, the rest kept."""
    out, in_nf, indent = [], False, None

    def nf(on):
        nonlocal in_nf
        if on != in_nf:
            out.append('.nf' if on else '.fi')
            in_nf = on

    for line in lines:
        m = OPTION.match(line)
        if m:
            nf(False)
            out.append('.TP')
            out.append('\\fB' + roff(m.group(2).rstrip()) + '\\fR')
            out.append(roff(m.group(3) or ''))
            indent = len(m.group(1)) + 2
            continue
        lead = len(line) - len(line.lstrip(' '))
        if indent is not None and line.strip() and lead > indent and not in_nf:
            out.append(roff(line.strip()))
            continue
        indent = None
        if not line.strip():
            nf(False)
            out.append('.PP')
            continue
        nf(True)
        out.append(roff(line.strip() if lead <= 2 else line))
    nf(False)
    return out


def page(name, section_title, summary, usage, rest, version, see):
    head = [f'.TH {name.upper()} 1 "" "sonde {version}" "sonde manual"',
            '.SH NAME', f'{roff(name)} \\- {roff(summary)}',
            '.SH SYNOPSIS', '.nf', roff(usage), '.fi', '.SH DESCRIPTION']
    tail = ['.SH ENVIRONMENT',
            '.TP', '\\fBNO_COLOR\\fR',
            'when set and not empty, no colour is written (https://no\\-color.org).',
            '.TP', '\\fBCOLUMNS\\fR',
            'the width tables are fitted to when they go to a terminal.',
            '.SH SEE ALSO', roff(see),
            '.PP', 'The manual is in docs/ of the source tree; this page is generated from '
            f'\\fB{roff(section_title)} \\-\\-help\\fR.']
    return '\n'.join(head + body(rest) + tail) + '\n'


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    sonde, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    version = subprocess.run([sonde, '--version'], capture_output=True, text=True).stdout.split()
    version = version[1] if len(version) > 1 else '?'
    top = helptext(sonde)
    cmds = []
    for line in top:
        m = re.match(r'^  (\w+)\s{2,}(.*)$', line)
        if m:
            cmds.append((m.group(1), m.group(2)))
    if not cmds:
        sys.exit('man.py: sonde --help lists no command')
    see = ', '.join(f'sonde-{c}(1)' for c, _ in cmds)
    lines = [ln for ln in top[1:]]
    body_top = []
    for ln in lines:
        m = re.match(r'^  (\w+)\s{2,}(.*)$', ln)
        body_top.append(f'  sonde-{m.group(1)}(1)   {m.group(2)}' if m else ln)
    with open(os.path.join(outdir, 'sonde.1'), 'w') as f:
        f.write(page('sonde', 'sonde', 'measure where the time of a C or C++ program goes',
                     top[0][len('usage: '):], body_top, version, see))
    for c, summary in cmds:
        h = helptext(sonde, c)
        with open(os.path.join(outdir, f'sonde-{c}.1'), 'w') as f:
            f.write(page(f'sonde-{c}', f'sonde {c}', summary.split(':')[0],
                         h[0][len('usage: '):], h[1:], version, 'sonde(1), ' + see))
    print(f'man.py: {len(cmds) + 1} pages in {outdir}')


if __name__ == '__main__':
    main()
