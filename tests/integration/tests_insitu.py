# SPDX-License-Identifier: MIT
# Integration test of `sonde run --insitu` (runtime/insitu.c, format/profile_read_insitu.c),
# run by run.py in its own namespace. Structure only (a noisy machine decides no timing): the
# INSITU record per thread, on the hot leaf, windows used, a price in a broad plausible band,
# the report's text and JSON; without --insitu no record; the program's output unchanged.


def calib_err(pr, t):
    """A thread priced by calibration: what the program's work may hide of each pair (the
    OVERLAP record's pair next to a chain, against o_full), a tenth of its removal at least."""
    c, o = pr['calibration'], pr['overlap']
    hidden = (c['o_full_ns'] - o['pair_ns']) / c['o_full_ns'] if o['pair_ns'] < c['o_full_ns'] \
        else 0
    err = hidden * (t['probes'] * c['o_full_ns'] + t['unmeasured_probes'] * c['o_skip_ns'])
    return max(err, 0.1 * t['overhead_ns'])


def insitu_err(t, s, o_skip):
    """A thread priced in situ: for each measured pair what its windows cannot see (o_skip for
    a skip window's pair, the stub's cost for a bare one's) and two standard errors; o_skip for
    each unmeasured call; the price for each pair of another function than the hot leaf."""
    se = 1.2533 * s['spread_ns'] / s['pairs'] ** 0.5
    unseen = (s['bare_pairs'] * s['stub_ns'] + (s['pairs'] - s['bare_pairs']) * o_skip) \
        / s['pairs']
    others = max(0, t['probes'] - s['calls']) * s['price_ns']  # priced at the hot leaf's
    return t['probes'] * (unseen + 2 * se) + t['unmeasured_probes'] * o_skip + others


def insitu_threads(js):
    """The report's threads by index (one process)."""
    return {t['index']: t for t in proc(js)['threads']}


@test('-O2')
def t_insitu(o):
    b = build('insitu_hot', o)
    p, d = srun(b, opts=['--throttle', 'off', '--insitu'], tag='insitu')
    with check(f'insitu_hot{o} --insitu: output as a direct run'):
        same_output(p, direct(b))
    js = report(d)
    th = insitu_threads(js)
    with check(f'insitu_hot{o} --insitu: an INSITU record per thread, on its hot leaf'):
        eq(sorted(th), [0, 1], 'threads')
        for t in th.values():
            expect('insitu' in t, f'thread {t["index"]} has no "insitu"')
        w, m = th[1]['insitu'], th[0]['insitu']
        eq(w['function'], 'hot', 'worker hot function')
        eq(m['function'], 'warm', 'main hot function (the leaf under mid)')
        for s in (w, m):
            eq(s['window_calls'], 1024, 'calls per window')
            # one unmeasured window per 8 until the price is usable, then per 32
            eq(s['period'], 32 if s['status'] == 'used' else 8, 'windows per unmeasured one')
            expect(s['pairs'] > 0, f'{s["function"]}: no pair of windows kept')
            expect(s['status'] in ('used', 'unstable', 'implausible'), f'status {s["status"]}')
            expect(s['unmeasured_calls'] % 1024 == 0 and s['unmeasured_calls'] > 0,
                   f'{s["function"]}: unmeasured calls {s["unmeasured_calls"]}')
            between(s['price_ns'], 0.25 * s['o_full_start_ns'], 5 * s['o_full_start_ns'],
                    f'{s["function"]} in-situ price (ns)')
            expect(s['used_ns'] == (s['price_ns'] if s['status'] == 'used'
                                    else s['o_full_calib_ns']),
                   f'{s["function"]}: used {s["used_ns"]} for status {s["status"]}')
    with check(f'insitu_hot{o} --insitu: B windows leave calls unmeasured, counted exactly'):
        f = funcs(js)
        # every call of hot() is measured or in a B window: the two add up to the program's
        eq(f['hot']['calls'] + w['unmeasured_calls'], 2000000, 'hot measured + unmeasured')
        eq(f['warm']['calls'] + m['unmeasured_calls'], 1500000, 'warm measured + unmeasured')
        eq(f['mid']['calls'], 1500000, 'mid (never a B window: not a leaf)')
        eq(w['calls'], f['hot']['calls'], 'INSITU calls = the node\'s measured calls')
    with check(f'insitu_hot{o} --insitu: T_a\'s uncertainty from what the windows cannot see'):
        pr = proc(js)
        o_skip = pr['calibration']['o_skip_ns']
        for t in th.values():
            s = t['insitu']
            if s['status'] == 'used':  # what a pair cannot see, 2 standard errors a pair
                want = insitu_err(t, s, o_skip)
                low = want  # either way
            else:
                want, low = calib_err(pr, t), 0.1 * t['overhead_ns']
            near(t['T_a_err_ns'], want, 3 + 2e-3 * want, f'thread {t["index"]} T_a_err_ns')
            near(t['T_a_err_low_ns'], low, 3 + 2e-3 * low, f'thread {t["index"]} T_a_err_low_ns')
        # as T_a takes them: the main thread's and the other thread's (the only one)
        for k in ('T_a_err_ns', 'T_a_err_low_ns'):
            near(pr[k], th[0][k] + th[1][k], 3, f'process {k}')
        removed = pr['T_m_ns'] - pr['T_a_ns']
        hot = funcs(js)['hot']
        near(hot['incl_c_err_ns'], (hot['incl_ns'] - hot['incl_c_ns']) * pr['T_a_err_ns'] /
             removed, 3 + 2e-3 * hot['incl_c_err_ns'], 'hot incl_c_err_ns (the same ratio)')
    p = run([SONDE, 'report', d])
    with check(f'insitu_hot{o} --insitu: the text report shows the price'):
        eq(p.returncode, 0, 'sonde report status')
        out = p.stdout.decode()
        expect(out.count('probes in situ, pid') == 2, 'two "probes in situ" lines')
        expect(', in hot: ' in out and ', in warm: ' in out, 'the hot functions named')
    p, d = srun(b, opts=['--throttle', 'off'], tag='insitu-off')
    with check(f'insitu_hot{o} without --insitu: no INSITU record, every call measured'):
        same_output(p, direct(b))
        js = report(d)
        for t in insitu_threads(js).values():
            expect('insitu' not in t, f'thread {t["index"]} has "insitu" without --insitu')
        eq(funcs(js)['hot']['calls'], 2000000, 'hot calls')
    with check(f'insitu_hot{o} without --insitu: T_a\'s uncertainty from what work can hide'):
        pr = proc(js)
        ov = pr['overlap']
        expect(ov is not None, 'no OVERLAP figures')
        eq((ov['steps'], ov['batches']), (16, 100), 'chain steps, batches')
        expect(ov['work_ns'] > 0 and ov['pair_ns'] >= 0, f'overlap {ov}')
        for t in pr['threads']:
            # above T_a: what work can hide; below: a tenth of what was removed
            want = calib_err(pr, t)
            near(t['T_a_err_ns'], want, 3 + 2e-3 * want, f'thread {t["index"]} T_a_err_ns')
            near(t['T_a_err_low_ns'], 0.1 * t['overhead_ns'], 3, f'thread {t["index"]} low')
        # as T_a takes the threads (the main one and the other); T_a may be clamped at 0
        for k in ('T_a_err_ns', 'T_a_err_low_ns'):
            near(pr[k], sum(t[k] for t in pr['threads']), 3, k)
        text = run([SONDE, 'report', d]).stdout.decode()
        if abs(pr['T_a_err_ns'] - pr['T_a_err_low_ns']) > 1:  # nothing hides: one "±"
            expect(re.search(r'T_a \S+ \S+ \+\S+ \S+ −\S+ \S+ ', text),
                   f'T_a +high −low: {text[:400]}')
        else:
            expect(re.search(r'T_a \S+ \S+ ± \S+ \S+ ', text), f'T_a ± err: {text[:400]}')
        expect(b'probes in situ' not in run([SONDE, 'report', d]).stdout, 'text shows in situ')
    p = run([SONDE, 'run', '--insitu', '--trace', '-o', d + '-t', '--', b])
    with check(f'insitu_hot{o} --insitu --trace: refused'):
        expect(p.returncode != 0 and p.stderr.startswith(b'sonde: run: --insitu'),
               describe(p))


@test('-O2')
def t_insitu_bare(o):
    """Bare windows (runtime/insitu_bare.c): an out-of-line leaf that one thread calls runs
    without its probes in its unmeasured windows, and an exit site first met in a bare window is
    learned; a leaf two threads call, and one inlined into its caller, keep the skip path; every
    call is counted either way, and the output is the program's."""
    b = build('insitu_bare', o)
    p, d = srun(b, opts=['--throttle', 'off', '--insitu'], tag='insitu-bare')
    with check(f'insitu_bare{o} --insitu: output as a direct run'):
        same_output(p, direct(b))
    js = report(d)
    th = {t['insitu']['function']: t for t in insitu_threads(js).values() if 'insitu' in t}
    f = funcs(js)
    with check(f'insitu_bare{o}: the out-of-line leaf of one thread runs bare'):
        s = th['two_exits']['insitu']
        expect(s['pairs'] > 0, 'no pair')
        eq(s['bare_pairs'], s['pairs'], 'bare pairs (every unmeasured window bare)')
        eq(s['bare_exits'], 1, 'exit sites rewritten (gcc merges the two returns)')
        between(s['stub_ns'], 0.05, 50, 'the stub\'s cost in a loop (ns)')
        eq(f['two_exits']['calls'] + s['unmeasured_calls'], 1500000,
           'two_exits measured + unmeasured')
        # a pair dropped (its windows slept unequally) leaves its window unmeasured too
        expect(s['unmeasured_calls'] == 1024 * (s['pairs'] + s['rejected']),
               f'unmeasured {s["unmeasured_calls"]}, pairs {s["pairs"]}, rejected {s["rejected"]}')
    with check(f'insitu_bare{o}: an exit the periodic checks never see is learned as a stray'):
        s = th['two_sites']['insitu']
        eq(s['bare_exits'], 2, 'exit sites rewritten')
        expect(s['rejected'] >= 1, f'no pair dropped for the stray exit: {s}')
        expect(s['pairs'] > 0, 'no pair')
        eq(s['bare_pairs'], s['pairs'], 'bare pairs')
        # the stray call is counted with its window's: nothing is lost
        eq(f['two_sites']['calls'] + s['unmeasured_calls'], 300000,
           'two_sites measured + unmeasured')
    with check(f'insitu_bare{o}: a leaf of two threads and an inlined one keep the skip path'):
        sh = [t['insitu'] for t in insitu_threads(js).values()
              if t.get('insitu', {}).get('function') == 'shared']
        eq(len(sh), 2, 'threads priced on shared()')
        for s in sh + [th['inlined']['insitu']]:
            eq((s['bare_pairs'], s['bare_exits'], s['stub_ns']), (0, 0, 0), s['function'])
        eq(f['shared']['calls'] + sum(s['unmeasured_calls'] for s in sh), 1200000,
           'shared measured + unmeasured')
        eq(f['inlined']['calls'] + th['inlined']['insitu']['unmeasured_calls'], 400000,
           'inlined measured + unmeasured')
    with check(f'insitu_bare{o}: T_a\'s uncertainty from the stub where the windows were bare'):
        o_skip = proc(js)['calibration']['o_skip_ns']
        for t in th.values():
            s = t['insitu']
            if s['status'] == 'used':
                want = insitu_err(t, s, o_skip)
                near(t['T_a_err_ns'], want, 3 + 2e-3 * want, f'{s["function"]} T_a_err_ns')
    with check(f'insitu_bare{o}: the text report says which windows were bare'):
        out = run([SONDE, 'report', d]).stdout.decode()
        expect(re.search(r'\n    \d+ of the pairs\' unmeasured windows bare: the function ran '
                         r'without its probes \(1 exit site rewritten', out), out[:1500])
        expect(re.search(r'\n    \d+ of the pairs\' unmeasured windows bare: the function ran '
                         r'without its probes \(2 exit sites rewritten', out), out[:1500])
        eq(out.count("unmeasured windows bare"), 2, 'bare lines (two_exits, two_sites)')


@test('-O2')
def t_insitu_throttle(o):
    """With a throttle (sonde's default is on), the thread's hot leaf is chosen before the
    throttle's count and its throttle waits until its price is usable (runtime/insitu.c,
    hold_throttle); its thread's unmeasured calls are priced in situ too
    (sprof_insitu_skip_price). A throttle of 20,000 calls comes before the 5 pairs a price
    needs (about 37,000 calls of hot at one pair per 8 windows of 1024)."""
    b = build('insitu_hot', o)
    p, d = srun(b, opts=['--insitu', '--throttle', '20000:10'], tag='insitu-thr')
    with check(f'insitu_hot{o} --insitu, throttled: output as a direct run'):
        same_output(p, direct(b))
    js = report(d)
    th, f = insitu_threads(js), funcs(js)
    w, t = th[1]['insitu'], th[1]
    with check(f'insitu_hot{o} --insitu, throttled: the throttle waits for the price'):
        eq(w['function'], 'hot', 'worker hot function')
        expect(f['hot']['throttled'], 'hot is not throttled')
        n = f['hot']['throttled_after_calls']
        expect(w['pairs'] >= 5, f'{w["pairs"]} pairs: the throttle did not wait')
        # held until the price was usable, or for at most 16 times the throttle's count (and
        # the checks' lag)
        between(n, 20000 + 4096, 16 * 20000 + 4096, 'hot calls when throttled')
        expect(w['status'] == 'used' or n >= 16 * 20000, f'{w["status"]} at {n} calls')
        # every call of hot measured, in a B window or after the throttle: all counted
        eq(f['hot']['calls'] + t['unmeasured_probes'], 2000000, 'hot measured + unmeasured')
    with check(f'insitu_hot{o} --insitu, throttled: unmeasured calls priced in situ'):
        cal = proc(js)['calibration']
        want = w['price_ns'] * w['o_skip_ns'] / w['o_full_start_ns'] if w['status'] == 'used' \
            else cal['o_skip_ns']
        near(w['used_skip_ns'], want, 2e-3, 'price of an unmeasured call')
        oh = t['probes'] * w['used_ns'] + t['unmeasured_probes'] * w['used_skip_ns']
        # the JSON's prices have 3 decimals
        near(t['overhead_ns'], oh, 2 + 5e-4 * (t['probes'] + t['unmeasured_probes']),
             'the thread\'s overhead at those prices')
    p, d = srun(b, opts=['--throttle', '20000:10'], tag='thr-plain')
    with check(f'insitu_hot{o} without --insitu: throttled at the throttle\'s count'):
        same_output(p, direct(b))
        n = funcs(report(d))['hot']['throttled_after_calls']
        between(n, 20001, 20000 + 4096, 'hot calls when throttled')


@test('-O2')
def t_insitu_hold_bound(o):
    """A thread that holds its hot leaf's throttle and then stops calling it (insitu_hold.c:
    20,000 calls, then a wait while another thread makes 2,000,000) keeps the function measured
    no longer than 16 times the throttle's count of its calls, all threads together."""
    b = build('insitu_hold', o)
    p, d = srun(b, opts=['--insitu', '--throttle', '20000:10'], tag='insitu-hold')
    with check(f'insitu_hold{o} --insitu, throttled: output as a direct run'):
        same_output(p, direct(b))
    js = report(d)
    f = funcs(js)['leaf']
    with check(f'insitu_hold{o} --insitu: a holder that stopped calling cannot hold for long'):
        expect(f['throttled'], 'leaf is not throttled')
        between(f['throttled_after_calls'], 16 * 20000, 16 * 20000 + 2 * 4096,
                'leaf calls when throttled (over both threads)')
        # thread A (its leaf calls, measured and in B windows, are 20,000) chose leaf, and its
        # calls could not price it
        ins = [t['insitu'] for t in insitu_threads(js).values()]
        a = [s for s in ins if s['function'] == 'leaf' and
             s['calls'] + s['unmeasured_calls'] == 20000]
        eq(len(a), 1, 'threads whose hot leaf is leaf, with 20,000 calls of it')
        a = a[0]
        expect(a['status'] != 'used', f'thread A priced leaf: {a}')
