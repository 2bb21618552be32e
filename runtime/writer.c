/* SPDX-License-Identifier: MIT */
/*
 * Writes the process's profile (docs/format-profile.md) at exit, on a terminating signal, or
 * before an exec. Async-signal-safe: a static buffer, open/write/rename, our own formatting.
 * The file appears under its final name only when complete (written as .tmp, then renamed).
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h> /* rename(2) only */

#include <sys/stat.h>
#include <unistd.h>

#define NODE_BYTES 40
#define NODE_CPU_BYTES 16

struct writer {
	int fd;
	uint64_t records;
	struct sprof_buf b;
};

static uint8_t out_buf[1 << 16];
static _Atomic int writing;
static char written[600]; /* the last profile written, for rt_unwrite_profile */

static void w_flush(struct writer *w)
{
	if (w->b.len && rt_write_all(w->fd, w->b.p, w->b.len) != 0)
		w->b.error = 1;
	w->b.len = 0;
}

/* Make room for n bytes (n is always far below the buffer's size). */
static struct sprof_buf *w_room(struct writer *w, size_t n)
{
	if (w->b.cap - w->b.len < n)
		w_flush(w);
	return &w->b;
}

static void w_record(struct writer *w, uint32_t type, uint32_t size)
{
	struct sprof_buf *b = w_room(w, 8);

	sprof_put_u32(b, type);
	sprof_put_u32(b, size);
	w->records++;
}

/* A record's header and room for its payload, for the writers of other records (sync_table.c). */
struct sprof_buf *rt_writer_record(struct writer *w, uint32_t type, uint32_t size)
{
	w_record(w, type, size);
	return w_room(w, size);
}

/* Length of a string as the format stores it (cut at SPROF_MAX_STR). */
static uint32_t str_len(const char *s)
{
	size_t n = rt_strlen(s);

	return n > SPROF_MAX_STR ? SPROF_MAX_STR : (uint32_t)n;
}

static uint64_t ns(uint64_t ticks)
{
	return rt_ticks_to_ns(ticks);
}

/* A sum of per-call differences may be slightly negative through clock jitter: clamp at 0. */
static uint64_t ns_signed(uint64_t ticks)
{
	return (int64_t)ticks < 0 ? 0 : ns(ticks);
}

/* In-run calibrations of the main thread took time that is not the program's. */
static uint64_t main_calib_ticks(void)
{
	struct rt_thread *t;

	for (t = atomic_load(&rt_threads); t; t = t->next)
		if (t->index == 0)
			return t->calib_ticks;
	return 0;
}

static void write_run(struct writer *w, int reason, int signo, uint64_t now, uint32_t nthreads)
{
	uint32_t exe_len = rt_module_count() ? str_len(rt_module_at(0)->path) : 0;
	struct sprof_buf *b;

	w_record(w, SPROF_REC_RUN, 72 + exe_len + (uint32_t)rt_cmdline_len);
	b = w_room(w, 72 + exe_len + rt_cmdline_len);
	sprof_put_u32(b, (uint32_t)rt_pid);
	sprof_put_u32(b, (uint32_t)getppid());
	sprof_put_u64(b, rt_start_unix_ns);
	sprof_put_u64(b, ns(now - rt_start_ticks - main_calib_ticks()));
	sprof_put_u32(b, (uint32_t)reason);
	sprof_put_u32(b, (uint32_t)signo);
	sprof_put_u32(b, rt_cfg.depth);
	sprof_put_u32(b, (rt_cfg.cpu ? SPROF_RUN_CPU : 0u) |
			     (rt_cfg.follow_exec ? SPROF_RUN_FOLLOW_EXEC : 0u) |
			     (rt_cfg.precise ? SPROF_RUN_PRECISE : 0u) |
			     (rt_calib_dyn ? SPROF_RUN_DYNAMIC : 0u));
	sprof_put_u64(b, rt_cfg.throttle_calls);
	sprof_put_u64(b, ns(rt_cfg.throttle_ticks));
	sprof_put_u32(b, nthreads);
	sprof_put_u32(b, 0);
	sprof_put_str(b, exe_len ? rt_module_at(0)->path : "", exe_len);
	sprof_put_str(b, rt_cmdline, rt_cmdline_len);
}

static void write_modules(struct writer *w)
{
	uint32_t i, n = rt_module_count();

	for (i = 0; i < n; i++) {
		const struct rt_module *m = rt_module_at(i);
		uint32_t len = str_len(m->path), k;
		struct sprof_buf *b;

		w_record(w, SPROF_REC_MODULE, 32 + 32 + 4 + len);
		b = w_room(w, 32 + 32 + 4 + len);
		sprof_put_u32(b, i);
		sprof_put_u32(b, m->build_id_len);
		sprof_put_u64(b, m->bias);
		sprof_put_u64(b, m->lo);
		sprof_put_u64(b, m->hi);
		for (k = 0; k < 32; k += 8) {
			uint64_t v = 0;
			uint32_t j;

			for (j = 0; j < 8; j++)
				v |= (uint64_t)m->build_id[k + j] << (8 * j);
			sprof_put_u64(b, v);
		}
		sprof_put_str(b, m->path, len);
	}
}

static void write_funcs(struct writer *w)
{
	uint32_t i, n = rt_func_count();

	for (i = 0; i < n; i++) {
		const struct rt_func *f = rt_func_at(i);
		uint32_t len = f->kind == SPROF_REGION ? str_len(f->name) : 0;
		struct sprof_buf *b;

		if (f->kind != SPROF_FUNC && f->kind != SPROF_REGION)
			continue; /* a dead entry or a calibration stand-in */
		w_record(w, SPROF_REC_FUNC, 48 + 4 + len);
		b = w_room(w, 48 + 4 + len);
		sprof_put_u32(b, f->id);
		sprof_put_u32(b, f->kind);
		sprof_put_u32(b, (uint32_t)f->module);
		sprof_put_u32(b, f->flags);
		sprof_put_u64(b, f->addr);
		sprof_put_u64(b, f->vaddr);
		sprof_put_u64(b, ns(f->throttled_at));
		sprof_put_u64(b, f->throttled_calls);
		sprof_put_str(b, len ? f->name : "", len);
	}
}

/* Exclusive time: the node's inclusive time minus its (measured) children's. */
static void exclusive(const struct rt_node *n, uint64_t *excl, uint64_t *cpu_excl)
{
	const struct rt_node *c;

	*excl = n->incl;
	*cpu_excl = n->cpu_incl;
	for (c = n->first_child; c; c = c->next_sibling) {
		*excl -= c->incl;
		*cpu_excl -= c->cpu_incl;
	}
}

static void write_node(struct writer *w, const struct rt_node *n, int cpu)
{
	struct sprof_buf *b = w_room(w, NODE_BYTES + NODE_CPU_BYTES);
	uint64_t excl, cpu_excl;

	exclusive(n, &excl, &cpu_excl);
	sprof_put_u32(b, n->parent ? n->parent->index : SPROF_NO_PARENT);
	sprof_put_u32(b, n->func->id);
	sprof_put_u64(b, n->calls);
	sprof_put_u64(b, ns(n->incl));
	sprof_put_u64(b, ns_signed(excl));
	sprof_put_u64(b, n->skipped);
	if (cpu) {
		sprof_put_u64(b, n->cpu_incl);
		sprof_put_u64(b, (int64_t)cpu_excl < 0 ? 0 : cpu_excl);
	}
}

/*
 * A thread still running in another thread's exit (or signal): its calls in progress count as
 * calls that last until now. The process is ending, so the thread's own later updates no longer
 * matter; a racing update can only blur the values being written.
 */
static void count_open_calls(struct rt_thread *t, uint64_t now)
{
	struct rt_frame *f, *top = t->top;

	t->root->incl = now - t->frames[0].start;
	for (f = t->frames + 1; f <= top; f++)
		if (f->fn == f->node->fn && now > f->start) {
			f->node->calls++;
			f->node->incl += now - f->start;
		}
}

/* Walk the node arena in allocation order: parents always precede their children. */
static void write_thread(struct writer *w, struct rt_thread *t, uint64_t now)
{
	uint32_t node_bytes = NODE_BYTES + (rt_cfg.cpu ? NODE_CPU_BYTES : 0);
	uint64_t end = t->exited ? t->end : now;
	const struct rt_chunk *c;
	struct sprof_buf *b;
	uint32_t nnodes = t->nnodes, done = 0, i;

	if (!t->exited)
		count_open_calls(t, now);
	w_record(w, SPROF_REC_THREAD, 56 + nnodes * node_bytes);
	b = w_room(w, 56);
	sprof_put_u32(b, t->index);
	sprof_put_u32(b, (uint32_t)t->tid);
	sprof_put_u64(b, ns(t->start - rt_start_ticks));
	sprof_put_u64(b, ns(end - rt_start_ticks));
	sprof_put_u64(b, rt_thread_cpu(t) ? t->cpu_end : 0);
	sprof_put_u32(b, t->exited ? 1u : 0u);
	sprof_put_u32(b, nnodes);
	sprof_put_u64(b, t->depth_skips);
	sprof_put_u64(b, t->lost_calls);
	for (c = t->chunks; c && done < nnodes; c = rt_chunk_next(c))
		for (i = 0; i < rt_chunk_used(c) && done < nnodes; i++, done++)
			write_node(w, rt_chunk_node(c, i), rt_cfg.cpu);
}

static void write_user_data(struct writer *w, const struct rt_thread *t, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < t->ncounters; i++) {
		const struct rt_counter *c = &t->counters[i];
		uint32_t len = str_len(c->name);
		struct sprof_buf *b;

		w_record(w, SPROF_REC_COUNTER, 40 + 4 + len);
		b = w_room(w, 40 + 4 + len);
		sprof_put_u32(b, t->index);
		sprof_put_u32(b, 0);
		sprof_put_u64(b, c->count);
		sprof_put_f64(b, c->sum);
		sprof_put_f64(b, c->min);
		sprof_put_f64(b, c->max);
		sprof_put_str(b, c->name, len);
	}
	for (i = 0; i < t->nphases; i++) {
		const struct rt_phase *p = &t->phases[i];
		uint32_t len = str_len(p->name);
		struct sprof_buf *b;

		w_record(w, SPROF_REC_PHASE, 24 + 4 + len);
		b = w_room(w, 24 + 4 + len);
		sprof_put_u32(b, t->index);
		sprof_put_u32(b, 0);
		sprof_put_u64(b, ns(p->start - rt_start_ticks));
		sprof_put_u64(b, ns((p->end ? p->end : now) - rt_start_ticks));
		sprof_put_str(b, p->name, len);
	}
}

/* RUNDIR/profile.PID.sprof, or profile.PID.N.sprof when an exec'd image already wrote one. */
static int open_out(char *final, size_t cap, char *tmp)
{
	int n, fd;

	for (n = 0; n < 100; n++) {
		char *e = rt_stpcpy(final, rt_cfg.dir, final + cap);

		e = rt_stpcpy(e, "/profile.", final + cap);
		e = rt_utoa(e, (uint64_t)rt_pid, final + cap);
		if (n) {
			e = rt_stpcpy(e, ".", final + cap);
			e = rt_utoa(e, (uint64_t)n, final + cap);
		}
		rt_stpcpy(e, ".sprof", final + cap);
		if (access(final, F_OK) == 0)
			continue;
		e = rt_stpcpy(tmp, final, tmp + cap);
		rt_stpcpy(e, ".tmp", tmp + cap);
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		return fd;
	}
	return -1;
}

static uint32_t count_threads(void)
{
	struct rt_thread *t;
	uint32_t n = 0;

	for (t = atomic_load(&rt_threads); t; t = t->next)
		n++;
	return n;
}

void rt_writer_header(struct writer *w, uint32_t type, uint32_t size)
{
	w_record(w, type, size);
}

struct sprof_buf *rt_writer_room(struct writer *w, size_t n)
{
	return w_room(w, n);
}

/* The OVERLAP record (19), when the start-up calibration measured it. */
static void write_overlap(struct writer *w)
{
	struct sprof_buf *b;

	if (!rt_overlap.batches)
		return;
	w_record(w, SPROF_REC_OVERLAP, SPROF_OVERLAP_SIZE);
	b = w_room(w, SPROF_OVERLAP_SIZE);
	sprof_put_u32(b, rt_overlap.steps);
	sprof_put_u32(b, rt_overlap.batches);
	sprof_put_f64(b, rt_overlap.work_ns);
	sprof_put_f64(b, rt_overlap.o_pair);
	sprof_put_f64(b, rt_overlap.o_pair_sd);
}

static void write_all(struct writer *w, int reason, int signo, uint64_t now)
{
	struct rt_thread *t;

	w->b = (struct sprof_buf){ .p = out_buf, .cap = sizeof(out_buf) };
	sprof_put_header(&w->b, rt_cfg.cpu ? SPROF_F_CPU : 0);
	write_run(w, reason, signo, now, count_threads());
	w_record(w, SPROF_REC_CALIB, 88);
	sprof_put_calib(w_room(w, 88), &rt_calib);
	write_overlap(w);
	write_modules(w);
	write_funcs(w);
	for (t = atomic_load(&rt_threads); t; t = t->next) {
		write_thread(w, t, now);
		write_user_data(w, t, now);
	}
	rt_sync_write(w);
	rt_insitu_write(w);
	rt_io_write(w);
	rt_os_write(w);
	rt_hw_write(w);
	rt_sample_write(w);
	rt_mpi_write(w);
	w_record(w, SPROF_REC_END, 8);
	sprof_put_u64(w_room(w, 8), w->records - 1);
	w_flush(w);
}

static double mean2(double a, double b)
{
	return (a + b) / 2;
}

/* Pooled standard deviation of two calibrations (their spread, plus how far apart they are). */
static double sd2(double sa, double sb, double a, double b)
{
	return sqrt((sa * sa + sb * sb) / 2 + (a - b) * (a - b) / 4);
}

/*
 * Calibrate again at the end and keep the mean of both: the probes cost what the machine's speed
 * makes them cost, and on a shared machine that drifts during a run. Not in a signal handler,
 * where the process should end promptly.
 */
static void recalibrate(void)
{
	struct sprof_calib e = { 0 }, *c = &rt_calib;

	rt_calibrate(&e, rt_cfg.cpu);
	if (!(e.o_full > 0))
		return;
	c->o_in_sd = sd2(c->o_in_sd, e.o_in_sd, c->o_in, e.o_in);
	c->o_full_sd = sd2(c->o_full_sd, e.o_full_sd, c->o_full, e.o_full);
	c->o_skip_sd = sd2(c->o_skip_sd, e.o_skip_sd, c->o_skip, e.o_skip);
	c->clock_sd = sd2(c->clock_sd, e.clock_sd, c->clock_ns, e.clock_ns);
	c->o_in = mean2(c->o_in, e.o_in);
	c->o_full = mean2(c->o_full, e.o_full);
	c->o_skip = mean2(c->o_skip, e.o_skip);
	c->clock_ns = mean2(c->clock_ns, e.clock_ns);
	c->samples += e.samples;
}

static double in_run_full[4096], in_run_in[4096];

/*
 * With enough batches measured during the run, they decide the probe costs: they saw the
 * machine as the program did. The unmeasured-call cost, not sampled, is scaled alike.
 */
static void use_in_run_samples(void)
{
	struct sprof_calib *c = &rt_calib;
	struct rt_thread *t;
	double full, full_sd, in, in_sd;
	int n = 0;
	uint32_t i;

	for (t = atomic_load(&rt_threads); t; t = t->next)
		for (i = 0; i < t->nsamples && n < 4096; i++, n++) {
			in_run_full[n] = t->sample_full[i];
			in_run_in[n] = t->sample_in[i];
		}
	if (n < 16 || !(c->o_full > 0))
		return;
	rt_trimmed_stats(in_run_full, n, &full, &full_sd);
	rt_trimmed_stats(in_run_in, n, &in, &in_sd);
	c->o_skip *= full / c->o_full;
	c->o_skip_sd *= full / c->o_full;
	c->o_full = full;
	c->o_full_sd = full_sd;
	c->o_in = in;
	c->o_in_sd = in_sd;
	c->samples = (uint32_t)n;
}

/*
 * Write the profile once. The calling thread's open frames are closed first (it is exiting,
 * or being killed); other threads still running are written as they stand.
 */
int rt_write_profile(int end_reason, int signo)
{
	char final[600], tmp[600];
	struct writer w = { 0 };
	uint64_t now;
	int ret = -1, saved = errno;

	if (!atomic_load(&rt_used) || atomic_exchange(&writing, 1))
		return 0;
	rt_busy = 1;
	rt_sample_stop();
	now = rt_now();
	rt_clock_mark_end();
	if (rt_trace_on) { /* the trace is the record of this run; `sonde report` reads it */
		if (end_reason != SPROF_END_SIGNAL)
			recalibrate();
		return rt_trace_end(end_reason, signo, now); /* stamped before recalibrating */
	}
	if (rt_self)
		rt_thread_finish(rt_self, now);
	rt_os_end(rt_self, now); /* before recalibrating: that is not the program's */
	if (end_reason != SPROF_END_SIGNAL && !rt_sample_only())
		recalibrate();
	use_in_run_samples();
	if (end_reason != SPROF_END_SIGNAL) { /* the loader's lock may be held where a signal hit */
		rt_modules_refresh();
		rt_funcs_locate();
	}
	mkdir(rt_cfg.dir, 0755); /* made only now: a run that measures nothing leaves nothing */
	w.fd = open_out(final, sizeof(final), tmp);
	if (w.fd < 0) {
		rt_log("cannot create the profile file in the run directory");
		goto out;
	}
	write_all(&w, end_reason, signo, now);
	close(w.fd);
	if (w.b.error)
		rt_log("writing the profile failed (disk full?)");
	else if ((ret = rename(tmp, final)) == 0)
		rt_stpcpy(written, final, written + sizeof(written));
out:
	errno = saved;
	return ret;
}

void rt_writer_after_fork(void)
{
	atomic_store(&writing, 0);
}

/*
 * An exec failed after its profile was written: take the file back and measure on (the
 * frames open at the exec were closed then; later exits of those calls find no frame).
 */
void rt_unwrite_profile(void)
{
	struct rt_thread *t = rt_self;

	if (written[0])
		unlink(written);
	written[0] = 0;
	if (t)
		atomic_store(&t->exited, 0);
	rt_sample_resume();
	atomic_store(&writing, 0);
	rt_busy = 0;
}
