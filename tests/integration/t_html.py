# SPDX-License-Identifier: MIT
# `sonde report --html` (tool/html/, docs/report-html.md): the page's structure without a
# browser (balanced tags, nothing external, exact rows), then in headless Chromium when it is
# installed (a non-blank screenshot, the rows and sorting after the page's script ran).
# Run by run.py in its own namespace.

import html.parser
import math
import struct
import zlib

VOID_TAGS = {'area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta',
             'source', 'track', 'wbr'}


class PageParser(html.parser.HTMLParser):
    """Balanced tags, every attribute, the text of each table's cells and the tags seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.attrs, self.tags = [], [], [], {}
        self.tables, self.cur_table, self.cur_row, self.cur_cell = {}, None, None, None
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.attrs.append((tag, attrs))
        a = dict(attrs)
        if tag == 'table':
            self.cur_table = self.tables.setdefault(a.get('id', f'#{len(self.tables)}'), [])
        elif tag == 'tr' and self.cur_table is not None:
            self.cur_row = []
        elif tag in ('td', 'th') and self.cur_row is not None:
            self.cur_cell = [a.get('data-v'), '']
        if tag not in VOID_TAGS:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.attrs.append((tag, attrs))

    def handle_endtag(self, tag):
        if tag in VOID_TAGS:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f'</{tag}> at {self.getpos()} closes '
                               f'{self.stack[-1] if self.stack else "nothing"}')
            return
        self.stack.pop()
        if tag in ('td', 'th') and self.cur_cell is not None:
            self.cur_row.append(tuple(self.cur_cell))
            self.cur_cell = None
        elif tag == 'tr' and self.cur_row is not None:
            self.cur_table.append(self.cur_row)
            self.cur_row = None
        elif tag == 'table':
            self.cur_table = None

    def handle_data(self, data):
        self.text.append(data)
        if self.cur_cell is not None:
            self.cur_cell[1] += data


def parse_page(text):
    p = PageParser()
    p.feed(text)
    p.close()
    expect(not p.errors, f'unbalanced tags: {p.errors[:3]}')
    expect(not p.stack, f'tags never closed: {p.stack[:3]}')
    return p


EXTERNAL = re.compile(r'^\s*(https?:|ftp:|//|file:|data:|javascript:)', re.I)


def self_contained(text, p):
    """Nothing a browser would fetch: no src, no link, no URL in an attribute or the style."""
    for tag, attrs in p.attrs:
        for k, v in attrs:
            expect(k != 'src', f'<{tag} src=...>: the page must fetch nothing')
            if k == 'xmlns' or v is None:
                continue
            expect(not EXTERNAL.match(v), f'<{tag} {k}="{v}">: an external reference')
    expect('link' not in p.tags and 'iframe' not in p.tags and 'img' not in p.tags,
           f'tags that fetch: {sorted(set(p.tags) & {"link", "iframe", "img"})}')
    expect(not re.search(r'url\(|@import', text), 'CSS that fetches (url() or @import)')
    for m in re.finditer(r'https?://[^\s"\'<>]*', text):
        expect(m.group(0) == 'http://www.w3.org/2000/svg', f'a URL in the page: {m.group(0)}')


def html_report(d, *opts, name='report.html'):
    out = os.path.join(d, '..', os.path.basename(d) + '-' + name)
    p = run([SONDE, 'report', '--html', d, '-o', out] + list(opts), timeout=300)
    expect(p.returncode == 0, f'sonde report --html {d}: {describe(p)}')
    with open(out, 'rb') as f:
        raw = f.read()
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
        raise Fail(f'the page is not UTF-8: {e}')
    return out, text, parse_page(text)


def table_rows(p, tid):
    """Rows of table TID (header row first) as lists of (data-v, text)."""
    expect(tid in p.tables, f'no table #{tid} (tables: {sorted(p.tables)[:12]})')
    return p.tables[tid]


def by_first_cell(rows):
    return {r[0][1]: r for r in rows[1:]}


@test()
def t_html_page(o):
    """A run of threads (4 workers, 1000 work calls each) as a page: exact rows, structure."""
    b = build('threads', '-O0')
    # a run directory whose name would open a tag and an entity if not escaped
    d = new_dir('html <b>&amp;"x\'')
    p = run([SONDE, 'run', '-o', d, '--', b])
    expect(p.returncode == 0, f'sonde run: {describe(p)}')
    with check('report --html: balanced, self-contained, every section'):
        out, text, pg = html_report(d)
        self_contained(text, pg)
        for sec in ('run', 'profile', 'threads', 'callpaths', 'histograms', 'resources',
                    'timeline', 'consult'):
            expect(f'<section id="{sec}">' in text, f'section {sec}')
        expect(text.startswith('<!DOCTYPE html>'), 'doctype')
        eq(pg.tags.get('script'), 1, 'inline scripts')
    with check('report --html: names from the program escaped'):
        expect('<b>&amp;' not in text, 'the run directory written unescaped')
        expect('html &lt;b&gt;&amp;amp;"x\'' in text, 'the run directory escaped as text')
        eq(pg.tags.get('b', 0), text.count('<b>'), 'b tags')
        expect('b' not in [t for t, _ in pg.stack], 'an open b')
    with check('report --html: function table rows (calls exact)'):
        rows = table_rows(pg, 'functions')
        head = [c[1] for c in rows[0]]
        eq(head[:3], ['function', 'file:line', 'calls'], 'columns')
        expect('excl (c)' in head and 'incl (c)' in head and 'excl' in head, f'columns {head}')
        f = by_first_cell(rows)
        eq(f['work'][2][0], '4000', 'work calls')
        eq(f['worker'][2][0], '4', 'worker calls')
        eq(f['work'][1][1], f'threads.c:{def_line("threads", "work")}', 'work file:line')
    with check('report --html: thread table and per-thread tables'):
        th = table_rows(pg, 'thread-summary')
        eq(len(th) - 1, 5, 'threads')
        eq(sorted(int(r[1][0]) for r in th[1:]), [0, 1, 2, 3, 4], 'thread indices')
        pid = th[1][0][0]
        for t in range(1, 5):
            w = by_first_cell(table_rows(pg, f'functions-p{pid}-t{t}'))
            eq((w['work'][2][0], w['worker'][2][0]), ('1000', '1'), f'thread {t} calls')
    with check('report --html: icicle graph of the call paths'):
        m = re.search(r'<svg id="flame-measured"[^>]*data-frames="(\d+)"', text)
        expect(m, 'no measured icicle graph')
        svg = text[m.start():text.index('</svg>', m.start())]
        titles = re.findall(r'<title>([^\n<]*)\n', svg)
        eq(int(m.group(1)), len(titles), 'data-frames')
        expect(set(titles) <= {'main', 'work', 'worker'} and 'main' in titles,
               f'frames {titles}')
        # a frame at least a pixel wide is drawn (narrower ones may not be: main's time grows
        # with the machine's load, the workers' does not)
        js = report(d)
        root = sum(k['incl_c_ns'] for k in kids(js['callpath']))
        wide = {n['name'] for _, n in walk(js) if n['incl_c_ns'] / root * 1200 >= 1}
        expect(wide <= set(titles), f'frames {titles}, at least a pixel wide {wide}')
        if 'work' in titles:
            expect(re.search(r'<title>work\n[^<]*; 4000 calls</title>', svg), 'work frame calls')
    with check('report --html: no trace, said so'):
        expect('No trace in this run' in text, 'timeline note')
    with check('report --html: bad use is one error line'):
        for args, msg in ((['--html', '--json', d], 'choose one'),
                          (['-o', '/tmp/x.html', d], '-o goes with --html'),
                          (['--html', d, '-o', os.path.join(d, 'no', 'such', 'x.html')],
                           'no/such/x.html')):
            p = run([SONDE, 'report'] + args)
            expect(p.returncode != 0 and p.stderr.startswith(b'sonde: report: ') and
                   msg.encode() in p.stderr and p.stderr.count(b'\n') == 1,
                   f'{args}: {describe(p)}')


@test()
def t_html_trace(o):
    """A --trace run: the timeline (measured and approximated) and the search's graph."""
    b = build_example('consult_cpu')
    d = trun(b, tag='html-trace')
    with check('report --html trace: timeline and Search History Graph'):
        out, text, pg = html_report(d)
        self_contained(text, pg)
        expect(re.search(r'<div class="gantt" data-pid="\d+"><svg', text), 'no Gantt chart')
        expect('measured (upper lane) and approximated (lower lane)' in text, 'chart title')
        th = table_rows(pg, next(t for t in pg.tables if t.startswith('timeline-threads-')))
        eq(len(th) - 1, 1, 'threads in the timeline table')
        nodes = re.findall(r'<g class="shg-node" data-id="(\d+)" data-state="([\w-]+)"'
                           r'( data-bottleneck="1")? data-hyp="([^"]*)" data-focus="([^"]*)" '
                           r'data-phase="([^"]*)"', text)
        expect(nodes, 'no node in the graph')
        eq(nodes[0][3:5], ('TopLevel', '/'), 'first node')
    with check('report --html trace: the same bottlenecks as sonde consult'):
        ctext, js = consult(d)
        want = {(h, f, ph or '') for h, f, ph in findings(js)}
        got = {(h, html_unescape(f), html_unescape(ph)) for _, _, bn, h, f, ph in nodes if bn}
        eq(got, want, 'bottlenecks')
        eq(len(nodes), len(js['nodes']), 'nodes')
        expect('Explanations' in text and 'where: ' in text, 'explanations')
    with check('report --html trace: the time histograms the search used, per bottleneck'):
        hists = re.findall(r'<div class="shg-hist" data-node="(\d+)" data-metric="([^"]*)" '
                           r'data-steps="(\d+)" data-mean="([^"]*)">\n<svg class="chart" '
                           r'[^>]*data-bars="(\d+)"', text)
        want = {(i, m): v for i in js['bottlenecks'] for m, v in js['nodes'][i]['metrics'].items()}
        eq({(int(i), m) for i, m, _, _, _ in hists}, set(want), 'a chart per metric of each '
           'bottleneck')
        for i, m, steps, mean, bars in hists:
            # the engine's own average over the node's observation, from the steps kept
            expect(abs(float(mean) - want[(int(i), m)]) <= 0.02 * max(1, abs(want[(int(i), m)])),
                   f'node {i} {m}: chart mean {mean}, search {want[(int(i), m)]}')
            # measured from when the search reached the node until it concluded (some steps)
            expect(2 <= int(steps) <= math.ceil(js['run_ns'] / 50e6) and
                   int(bars) == min(200, math.ceil(js['run_ns'] / 50e6)),
                   f'node {i} {m}: {steps} steps, {bars} bars, run {js["run_ns"]} ns')
    with check('report --html trace: time histograms of the default metrics'):
        hs = metric_hists(text)
        eq(sorted(hs), [('active_threads', '/'), ('cpu_time', '/')], 'default charts (no --sync)')
        run_s = js['run_ns'] / 1e9
        steps = hs[('cpu_time', '/')][0]
        eq(steps, math.ceil(js['run_ns'] / 50e6), '50 ms steps over the run')
        for k in hs:  # one thread, always computing: a CPU and a thread all along
            expect(abs(hs[k][1] - run_s) <= 0.02 * run_s, f'{k}: {hs[k][1]} s, run {run_s} s')
    with check('report --html --hist: chosen metrics, exact counts'):
        code = '/Code/consult_cpu.c/'
        _, text3, pg3 = html_report(d, '--hist', f'calls@{code}tiny', '--hist',
                                    f'calls@{code}hot_loop', '--hist', f'cpu_time@{code}hot_loop',
                                    name='hist.html')
        self_contained(text3, pg3)
        hs = metric_hists(text3)
        eq(sorted(hs), sorted([('calls', f'{code}tiny'), ('calls', f'{code}hot_loop'),
                               ('cpu_time', f'{code}hot_loop')]), 'charts')
        eq((hs[('calls', f'{code}tiny')][1], hs[('calls', f'{code}hot_loop')][1]), (40000, 20),
           'calls of tiny (20 rounds of 2 x 1000) and hot_loop (20)')
        prof = re.search(r'\*\s+([\d.]+)\s+[\d.]+\s+20\s+hot_loop', ctext)
        expect(prof, f'no hot_loop row in the consult profile: {ctext[-600:]!r}')
        expect(abs(hs[('cpu_time', f'{code}hot_loop')][1] - float(prof.group(1))) <= 0.002,
               f'hot_loop cpu_time {hs[("cpu_time", f"{code}hot_loop")][1]}, consult\'s '
               f'profile {prof.group(1)} s')
    with check('report --html --hist: bad choices are one error line, no page'):
        bad = os.path.join(TMP, 'bad-hist.html')
        _, dp = srun(build('threads', '-O0'), tag='html-no-trace')
        for args, msg in ((['--hist', 'bogus', d], b'not a metric the trace gives'),
                          (['--hist', 'cpu_time@/Nowhere/x', d], b'not METRIC[@FOCUS]'),
                          (['--hist', 'cpu_time', dp], b'has no trace')):
            p = run([SONDE, 'report', '--html', '-o', bad] + args)
            expect(p.returncode == 2 and p.stderr.startswith(b'sonde: report: --hist') and
                   msg in p.stderr and p.stderr.count(b'\n') == 1 and not os.path.exists(bad),
                   f'{args}: {describe(p)}')
    with check('report --html --no-consult --no-timeline: left out, said so'):
        _, text2, _ = html_report(d, '--no-consult', '--no-timeline', name='bare.html')
        eq(text2.count('Left out (--no-'), 2, 'notes')
        expect('shg-node' not in text2 and 'class="gantt"' not in text2, 'parts left out')


def metric_hists(text):
    """The page's charts of chosen metrics: {(metric, focus): (steps, total)}."""
    return {(html_unescape(m), html_unescape(f)): (int(n), float(t)) for m, f, n, t in
            re.findall(r'<div class="metric-hist" data-metric="([^"]*)" data-focus="([^"]*)" '
                       r'data-steps="(\d+)" data-total="([^"]*)">', text)}


def html_unescape(s):
    import html as _html
    return _html.unescape(s)


@test()
def t_html_histograms(o):
    """--os and --io with phases: the histograms and the files table."""
    b = build('io_phases', '-O0')
    work = tempfile.mkdtemp(prefix='io-', dir=TMP)
    p, d = srun(b, args=[work], opts=['--os', '--io'], tag='html-os')
    expect(p.returncode == 0, f'sonde run: {describe(p)}')
    with check('report --html --os --io: histograms, files'):
        _, text, pg = html_report(d)
        self_contained(text, pg)
        bars = [int(x) for x in re.findall(r'<svg class="chart"[^>]*data-bars="(\d+)"', text)]
        expect(len(bars) >= 4, f'charts: {bars}')
        expect('CPU time per interval' in text and 'I/O per phase' in text, 'chart titles')
        js = report(d)
        files = by_first_cell(table_rows(pg, 'files'))
        eq(sorted(files), sorted(f['path'] for f in js['files']), 'files')
        heavy = next(f for f in files if f.endswith('/heavy.dat'))
        eq([files[heavy][i][0] for i in (3, 4, 5, 6)], ['2001', '8192000', '2000', '8192000'],
           'heavy.dat reads, bytes read, writes, bytes written')
        phases = re.search(r'I/O per phase \(sonde run --io\)</text>', text)
        expect(phases, 'no I/O per phase chart')


# ---- in a real browser ---------------------------------------------------------------------

def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of a PNG, decoded with zlib only (8-bit RGB/RGBA)."""
    with open(path, 'rb') as f:
        data = f.read()
    expect(data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG')
    pos, idat, w = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
            expect(depth == 8 and ctype in (2, 6) and not interlace,
                   f'PNG depth {depth} colour type {ctype} interlace {interlace}')
            bpp = 4 if ctype == 6 else 3
        elif kind == b'IDAT':
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b''.join(idat))
    stride, rows, prev = w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ft == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ft == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ft == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif ft == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def chromium(*args):
    exe = shutil.which('chromium') or shutil.which('chromium-browser')
    prof = tempfile.mkdtemp(prefix='chromium-', dir=TMP)
    return run([exe, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                '--disable-extensions', '--disable-background-networking',
                f'--user-data-dir={prof}'] + list(args), timeout=180)


def dom(url):
    p = chromium('--dump-dom', url)
    expect(p.returncode == 0 and b'</html>' in p.stdout, f'--dump-dom {url}: {describe(p)}')
    return p.stdout.decode()


def sorted_names(text, tid):
    pg = parse_page(text)
    return [r[0][1] for r in table_rows(pg, tid)[1:]], pg


@test()
def t_html_browser(o):
    """The page of a known program in headless Chromium: it renders, the script sorts."""
    if not (shutil.which('chromium') or shutil.which('chromium-browser')):
        emit(True, 'html in a browser: # SKIP chromium is not installed (Debian: chromium)')
        return
    b = build('threads', '-O0')
    # work() spins: drawn in the icicle graph (under 0.5 px of 1200 it is not, and its 4000
    # tiny calls alone were that on a loaded machine)
    p, d = srun(b, args=['20000'], tag='html-browser')
    expect(p.returncode == 0, f'sonde run: {describe(p)}')
    out, text, pg = html_report(d)
    url = 'file://' + os.path.abspath(out)
    with check('html in chromium: a screenshot that is not blank'):
        png = os.path.join(TMP, 'html-shot.png')
        p = chromium(f'--screenshot={png}', '--window-size=1000,900', url)
        expect(p.returncode == 0 and os.path.exists(png), f'--screenshot: {describe(p)}')
        w, h, bpp, rows = png_pixels(png)
        eq((w, h), (1000, 900), 'screenshot size')
        lum = [(r[i] * 299 + r[i + 1] * 587 + r[i + 2] * 114) // 1000
               for r in rows for i in range(0, w * bpp, bpp * 4)]
        mean = sum(lum) / len(lum)
        var = sum((x - mean) ** 2 for x in lum) / len(lum)
        dark = sum(1 for x in lum if x < 128) / len(lum)
        colours = len({bytes(r[i:i + 3]) for r in rows[::8] for i in range(0, w * bpp, bpp * 8)})
        print(f'# html screenshot: {w}x{h}, luminance mean {mean:.1f} variance {var:.1f}, '
              f'{100 * dark:.2f} % dark, {colours} colours')
        expect(var > 100 and dark > 0.005 and colours > 8,
               f'blank-looking screenshot: variance {var:.1f}, dark {dark:.4f}, {colours} colours')
    with check('html in chromium: rows in the DOM after the script ran'):
        t = dom(url)
        expect('data-js="ran"' in t, 'the page\'s script did not run')
        names, pg2 = sorted_names(t, 'functions')
        eq(sorted(names), ['main', 'work', 'worker'], 'functions')
        eq(by_first_cell(table_rows(pg2, 'functions'))['work'][2][0], '4000', 'work calls')
    with check('html in chromium: #sort= sorts by calls, ascending'):
        names, pg2 = sorted_names(dom(url + '#sort=functions:2:asc'), 'functions')
        eq(names, ['main', 'worker', 'work'], 'by calls ascending')
        expect(re.search(r'<table class="sortable" id="functions" data-sorted="2:asc"',
                         dom(url + '#sort=functions:2:asc')), 'data-sorted')
    with check('html in chromium: header clicks sort by name, then reverse it'):
        names, _ = sorted_names(dom(url + '#click=functions:0:1'), 'functions')
        eq(names, ['main', 'work', 'worker'], 'one click on "function"')
        t = dom(url + '#click=functions:0:2')
        names, _ = sorted_names(t, 'functions')
        eq(names, ['worker', 'work', 'main'], 'two clicks')
        expect('aria-sort="descending"' in t, 'header marked')
    with check('html in chromium: a click zooms the icicle graph to a frame, reset undoes it'):
        frames = flame_frames(dom(url))
        expect({'main', 'worker', 'work'} <= set(frames), f'frames {sorted(frames)}')
        eq({n: f['shown'] for n, f in frames.items()}, {n: True for n in frames}, 'all shown')
        wk, w = frames['worker'], frames['work']
        z = flame_frames(dom(url + '#zoom=flame-measured:worker'), 'worker')
        eq((z['worker']['x'], z['worker']['w']), (0.0, 1200.0), 'worker: the whole width')
        # (toFixed(1) in the page: a tenth of a pixel either way)
        want = (w['dw'] * 1200 / wk['dw'], (w['dx'] - wk['dx']) * 1200 / wk['dw'])
        expect(abs(z['work']['w'] - want[0]) <= 0.11 and abs(z['work']['x'] - want[1]) <= 0.11,
               f'work at x {z["work"]["x"]} w {z["work"]["w"]}, expected {want} (in proportion '
               f'below worker)')
        eq(z['main']['shown'], False, 'main (not on the path) hidden')
        z = flame_frames(dom(url + '#zoom=flame-measured:work'), 'work')
        eq((z['work']['w'], z['worker']['w'], z['worker']['faded']), (1200.0, 1200.0, True),
           'work zoomed, its caller full width above it, faded')
        z = flame_frames(dom(url + '#zoom=flame-measured:work&zoom=flame-measured:'), '')
        eq({n: (f['x'], f['w'], f['shown']) for n, f in z.items()},
           {n: (f['dx'], f['dw'], True) for n, f in frames.items()}, 'reset: as drawn')


def flame_frames(t, zoom=None):
    """The measured icicle graph's frames in a dumped DOM: {name: drawn (dx, dw) and now (x, w),
    shown, faded}; zoom: the svg's data-zoom expected."""
    m = re.search(r'<svg id="flame-measured"[^>]*>(.*?)</svg>', t, re.S)
    expect(m, 'no measured icicle graph in the DOM')
    if zoom is not None:
        expect(f'data-zoom="{zoom}"' in m.group(0)[:300], f'data-zoom is not "{zoom}": '
               f'{m.group(0)[:200]}')
    out = {}
    for g in re.finditer(r'<g data-x="([\d.]+)" data-w="([\d.]+)" data-d="\d+"( style="[^"]*")?>'
                         r'<title>([^\n<]*).*?<rect x="([\d.]+)" y="\d+" width="([\d.]+)"',
                         m.group(1), re.S):
        style = g.group(3) or ''
        out.setdefault(g.group(4), {'dx': float(g.group(1)), 'dw': float(g.group(2)),
                                    'x': float(g.group(5)), 'w': float(g.group(6)),
                                    'shown': 'none' not in style, 'faded': 'opacity' in style})
    return out


@test()
def t_html_sample_sync(o):
    """--sample: the sampled table and icicle graph; --sync: the objects, hot_lock first."""
    b = build_fp('sample_ratio')
    p, d = srun(b, args=['30'], opts=['--sample'], tag='html-sample')
    eq(p.returncode, 0, f'exit status ({first_line(p.stderr)})')
    with check('report --html --sample: sampled table and graph, counts of the JSON'):
        _, text, pg = html_report(d)
        self_contained(text, pg)
        s = sampled(report(d))
        fs = sfuncs(s)
        rows = by_first_cell(table_rows(pg, 'sampled'))
        for name in ('hot_a', 'hot_b'):
            eq(rows[name][2][0], str(fs[name]['self']), f'{name} self samples')
        m = re.search(r'<svg id="flame-sampled"[^>]*data-frames="(\d+)"', text)
        expect(m and int(m.group(1)) >= 3, 'no sampled icicle graph')
        expect(f'<title>hot_a\n{fs["hot_a"]["total"]} samples' in text, 'hot_a frame')
    b = build('sync_hot', '-O0')
    p, d = srun(b, opts=['--sync'], tag='html-sync')
    with check('report --html --sync: objects by wait time, compensation per thread'):
        _, text, pg = html_report(d)
        self_contained(text, pg)
        rows = table_rows(pg, 'sync-objects')
        eq(rows[1][0][1], 'hot_lock', 'first object')
        eq(by_first_cell(rows)['hot_lock'][6][0], '8001', 'hot_lock acquires')
        eq(len(table_rows(pg, 'sync-threads')) - 1, 5, 'threads compensated')
