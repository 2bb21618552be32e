/* SPDX-License-Identifier: MIT */
/*
 * dyn_driver — the part of bench/dynamic.sh that must hold a running process: it links the
 * tool's own objects (tool/inject: stop the world, load the runtime; tool/dyn + tool/patch:
 * plan, write and remove patches; tool/dyn/client.c + format/protocol.o: set points), drives
 * bench/dyn_target (or the generated program) in lockstep, and prints raw figures as
 * key=value lines; bench/dynamic.py takes medians and prints the tables.
 *
 *   dyn_driver prims RT DIR CPU ROUNDS CALLS REPS TARGET
 *       cost of each primitive on the patched function work() against its twin ref(), in two
 *       processes side by side: libsonde.so preloaded with SONDE_DYNAMIC=1, as `sonde run
 *       --dynamic` starts a program (the PROFILE primitive works there), and injected into the
 *       running process as `sonde attach` does; control sockets and profiles under DIR
 *   dyn_driver insert RT CTL CPU REPS TARGET FN
 *       insertion and removal latency: FN alone, then every function of TARGET (a running
 *       process, attached), REPS times each, a fresh process each time
 *   dyn_driver detach RT CTL CPU ROUNDS N TARGET
 *       callheavy's loop in a process before attaching, with one counter at every function,
 *       and after the patches are removed and the runtime detached; a twin process never
 *       attached runs in alternation with it as the control
 *   dyn_driver callsite RT CTL CPU ROUNDS CALLS REPS TARGET
 *       cost of a call-site point: the call in cs_work_loop() patched (the runtime attached),
 *       timed against its twin loop cs_ref_loop(), unpatched, inactive, with a counter, with a
 *       thread counter
 *   dyn_driver cycles RT CTL CPU MAX TARGET
 *       how many times one process can have every function patched and unpatched (at most
 *       MAX): each insertion maps new trampoline pages
 *
 * CPU: the CPU the targets are pinned to, or -1. Exit status 1 on any failure (said on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dyn/client.h"
#include "dyn/dyn.h"
#include "inject/session.h"

#define MAXKIDS 4

struct kid {
	pid_t pid;
	FILE *in, *out; /* its stdin (we write), its stdout (we read) */
	char exe[PATH_MAX];
};

static struct kid *kids[MAXKIDS];
static int nkids;
static char err[1024];

/* Killed, then reaped with __WALL: a process whose threads we trace (a failure while it was
 * stopped) is reported only once every thread is. */
static void kill_kids(void)
{
	int i;

	for (i = 0; i < nkids; i++)
		if (kids[i] && kids[i]->pid > 0) {
			kill(kids[i]->pid, SIGKILL);
			kids[i]->pid = 0;
		}
	while (waitpid(-1, NULL, __WALL) > 0)
		;
}

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dyn_driver: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	kill_kids();
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* Start exe with argument arg, pinned to cpu, with env NAME=VALUE pairs (NULL-ended) and
 * LD_PRELOAD removed unless given; wait for its "ready". */
static void spawn(struct kid *k, const char *exe, const char *arg, int cpu,
		  const char *const *env)
{
	int in[2], out[2];
	char line[64];

	if (!realpath(exe, k->exe))
		die("%s: %s", exe, strerror(errno));
	if (pipe(in) != 0 || pipe(out) != 0)
		die("pipe: %s", strerror(errno));
	k->pid = fork();
	if (k->pid < 0)
		die("fork: %s", strerror(errno));
	if (k->pid == 0) {
		cpu_set_t set;

		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		unsetenv("LD_PRELOAD");
		for (; env && env[0]; env += 2)
			setenv(env[0], env[1], 1);
		if (cpu >= 0) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		execl(k->exe, k->exe, arg, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	k->in = fdopen(in[1], "w");
	k->out = fdopen(out[0], "r");
	if (!k->in || !k->out)
		die("fdopen: %s", strerror(errno));
	kids[nkids++] = k;
	if (!fgets(line, sizeof(line), k->out) || strncmp(line, "ready", 5) != 0)
		die("%s %s did not start", exe, arg);
}

/* Send one request line, read the one-line answer. */
static void ask(struct kid *k, char *ans, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(k->in, fmt, ap);
	va_end(ap);
	fflush(k->in);
	if (!fgets(ans, (int)cap, k->out))
		die("process %d gave no answer (it ended?)", (int)k->pid);
	ans[strcspn(ans, "\n")] = 0;
}

static void finish(struct kid *k)
{
	int st;

	fputs("q\n", k->in);
	fclose(k->in);
	fclose(k->out);
	if (waitpid(k->pid, &st, 0) != k->pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("process %d ended badly (status %#x)", (int)k->pid, st);
	k->pid = 0;
}

/* ---- attaching, patching ---- */

static void attach_runtime(struct kid *k, const char *rt, const char *ctl, const char *tag)
{
	struct inject_session_opts so = { rt, ctl, NULL, 1 };
	struct inject_session s;

	if (inject_session_open(&s, k->pid, &so, err, sizeof(err)) != 0)
		die("attaching to %d: %s", (int)k->pid, err);
	if (inject_session_close(&s, err, sizeof(err)) != 0)
		die("letting %d go: %s", (int)k->pid, err);
	printf("attach tag=%s threads=%d stop_ms=%.3f inject_ms=%.3f load_ms=%.3f detach_ms=%.3f "
	       "pause_ms=%.3f total_ms=%.3f busy_waits=%d\n", tag, s.threads, s.stop_ms,
	       s.inject_ms, s.load_ms, s.detach_ms, s.pause_ms, s.total_ms, s.t.busy_waits);
}

struct times {
	uint64_t stop, collect, plan, install, detach, total, pause;
};

/* Trampolines of installed functions that save the flags (pushfq first in the save part). */
static size_t count_flags(const struct dyn_set *s)
{
	size_t i, k = 0;

	for (i = 0; i < s->n; i++)
		k += s->f[i].state == DYN_INSTALLED &&
		     s->f[i].plan.code[s->f[i].plan.save_off] == 0x9c;
	return k;
}

static void print_times(const char *what, const char *tag, const struct times *t,
			const struct dyn_set *s)
{
	printf("%s tag=%s stop_ms=%.3f collect_ms=%.3f plan_ms=%.3f write_ms=%.3f detach_ms=%.3f "
	       "total_ms=%.3f pause_ms=%.3f installed=%zu refused=%zu planned=%zu pushfq=%zu\n",
	       what, tag, ms(t->stop), ms(t->collect), ms(t->plan), ms(t->install), ms(t->detach),
	       ms(t->total), ms(t->pause), dyn_count(s, DYN_INSTALLED), dyn_count(s, DYN_REFUSED),
	       dyn_count(s, DYN_PLANNED), count_flags(s));
}

static const char *base_name(const char *p)
{
	return strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
}

/* Stop the world, collect (only: NULL-ended names, or NULL for every function), plan, write,
 * let go: what launch.c's patch_program does, each step timed. */
static void insert(struct kid *k, const char *const *only, uint64_t handler, struct dyn_set *s,
		   struct times *tm)
{
	const char *prefixes[] = { base_name(k->exe), NULL };
	struct target t;
	struct target_module m;
	uint64_t t0 = now_ns(), t1;

	memset(tm, 0, sizeof(*tm));
	if (target_attach(&t, k->pid, err, sizeof(err)) != 0)
		die("target_attach: %s", err);
	tm->stop = (t1 = now_ns()) - t0;
	if (target_find_module(&t, prefixes, &m) != 0)
		die("no module %s in process %d", prefixes[0], (int)k->pid);
	if (dyn_collect(&t, &m, only, s, err, sizeof(err)) != 0)
		die("dyn_collect: %s", err);
	tm->collect = now_ns() - t1;
	t1 = now_ns();
	if (dyn_plan(&t, s, handler, err, sizeof(err)) != 0)
		die("dyn_plan: %s", err);
	tm->plan = now_ns() - t1;
	t1 = now_ns();
	if (dyn_install(&t, s, err, sizeof(err)) != 0)
		die("dyn_install: %s", err);
	tm->install = now_ns() - t1;
	t1 = now_ns();
	if (target_detach(&t) != 0)
		die("target_detach: %s", target_error(&t));
	tm->detach = now_ns() - t1;
	tm->total = now_ns() - t0;
	tm->pause = t.paused_ns;
}

/* The same patches written again (after remove), or removed: world stopped meanwhile. */
static void rewrite(struct kid *k, struct dyn_set *s, int install, struct times *tm)
{
	struct target t;
	uint64_t t0 = now_ns(), t1;
	int r;

	memset(tm, 0, sizeof(*tm));
	if (target_attach(&t, k->pid, err, sizeof(err)) != 0)
		die("target_attach: %s", err);
	tm->stop = (t1 = now_ns()) - t0;
	r = install ? dyn_install(&t, s, err, sizeof(err)) : dyn_remove(&t, s, err, sizeof(err));
	if (r != 0)
		die("%s: %s", install ? "dyn_install" : "dyn_remove", err);
	tm->install = now_ns() - t1;
	t1 = now_ns();
	if (target_detach(&t) != 0)
		die("target_detach: %s", target_error(&t));
	tm->detach = now_ns() - t1;
	tm->total = now_ns() - t0;
	tm->pause = t.paused_ns;
}

/* Does the trampoline save the flags (pushfq first)? */
static int saves_flags(const struct dyn_set *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->f[i].state == DYN_INSTALLED)
			return s->f[i].plan.code[s->f[i].plan.save_off] == 0x9c;
	return -1;
}

/* ---- points ---- */

static uint8_t msg[SPROTO_HEADER_SIZE + 64 + SPROTO_MAX_ACTIONS * 32];

static void point_set(struct ctl_client *c, uint32_t point, int n, const struct sproto_action *a)
{
	struct sproto_point_set ps;
	size_t len;

	memset(&ps, 0, sizeof(ps));
	ps.point = point;
	ps.n = (uint16_t)n;
	memcpy(ps.act, a, (size_t)n * sizeof(*a));
	len = n ? sproto_put_point_set(msg, sizeof(msg), &ps)
		: sproto_put_point_clear(msg, sizeof(msg), point, 1);
	if (ctl_request(c, msg, len, err, sizeof(err)) != 0)
		die("setting point %u: %s", point, err);
}

static struct sproto_action act(int when, int prim, uint32_t target, int64_t value)
{
	struct sproto_action a;

	memset(&a, 0, sizeof(a));
	a.when = (uint8_t)when;
	a.prim = (uint8_t)prim;
	a.target = target;
	a.value = value;
	return a;
}

/* A counter's value, through a metric sampled every 10 ms. */
static int64_t read_counter(struct ctl_client *c, uint32_t counter)
{
	struct sproto_metric mt;
	struct sproto_msg m;
	int i;

	memset(&mt, 0, sizeof(mt));
	mt.id = 1;
	mt.n = 1;
	mt.term[0].kind = SPROTO_TERM_COUNTER;
	mt.term[0].index = counter;
	if (ctl_request(c, msg, sproto_put_sampling(msg, sizeof(msg), 10000000), err,
			sizeof(err)) != 0 ||
	    ctl_request(c, msg, sproto_put_metric_enable(msg, sizeof(msg), &mt), err,
			sizeof(err)) != 0)
		die("enabling a metric: %s", err);
	for (i = 0; i < 500; i++) {
		struct sproto_sample_entry e;

		if (ctl_recv(c, &m, 5000, err, sizeof(err)) != 0)
			die("no sample: %s", err);
		if (m.h.type != SPROTO_SAMPLE || m.u.sample.n < 1)
			continue;
		sproto_sample_entry(&m.u.sample, 0, &e);
		if (ctl_request(c, msg, sproto_put_metric_disable(msg, sizeof(msg), 1), err,
				sizeof(err)) != 0)
			die("disabling a metric: %s", err);
		return e.value;
	}
	die("no sample of counter %u", counter);
}

/* ---- prims ---- */

struct config {
	const char *name;
	int patched, n, div, profile; /* calls = CALLS / div; profile: needs the profile runtime */
	struct sproto_action a[2];
};

/* One process whose work() is patched: the runtime preloaded or attached. */
struct subject {
	const char *mode;
	struct kid k;
	struct ctl_client c;
	struct dyn_set s;
	int installed, counted, profile;
};

static void subject_start(struct subject *x, const char *mode, const char *rt, const char *dir,
			  int cpu, const char *target)
{
	static char ctl_preload[PATH_MAX], ctl_attach[PATH_MAX], out[PATH_MAX];
	int preload = strcmp(mode, "preload") == 0;
	char *ctl = preload ? ctl_preload : ctl_attach;
	const char *env[] = { "LD_PRELOAD", rt, "SONDE_DYNAMIC", "1", "SONDE_CTL_DIR", ctl_preload,
			      "SONDE_DIR", out, "SONDE_THROTTLE", "off", NULL };
	const char *only[] = { "work", NULL };
	struct times tm;

	memset(x, 0, sizeof(*x));
	x->mode = mode;
	snprintf(ctl, PATH_MAX, "%s/ctl-%s", dir, mode);
	snprintf(out, sizeof(out), "%s/out-%s", dir, mode);
	spawn(&x->k, target, "prim", cpu, preload ? env : NULL);
	if (!preload)
		attach_runtime(&x->k, rt, ctl, "prims");
	if (ctl_connect(&x->c, ctl, x->k.pid, 10000, err, sizeof(err)) != 0)
		die("connecting (%s): %s", mode, err);
	x->profile = !!(x->c.hello.flags & SPROTO_F_PROFILE);
	printf("hello mode=%s flags=%#x profile=%d\n", mode, x->c.hello.flags, x->profile);
	insert(&x->k, only, x->c.hello.entry_addr, &x->s, &tm);
	print_times("insert", mode, &tm, &x->s);
	if (dyn_count(&x->s, DYN_INSTALLED) != 1)
		die("work() was not patched: %s", x->s.n ? x->s.f[0].why : "no such function");
	printf("trampoline mode=%s saves_flags=%d len=%u displaced=%u\n", mode, saves_flags(&x->s),
	       x->s.f[0].plan.tramp_len, x->s.f[0].plan.len);
	x->installed = 1;
}

/* Set the configuration up in x, time it, print the line. */
static void subject_measure(struct subject *x, const struct config *cf, int r, long calls,
			    long reps)
{
	struct sproto_action a[2];
	struct times tm;
	char ans[256];
	long n = calls / cf->div;

	if (!cf->patched && x->installed) {
		point_set(&x->c, 0, 0, NULL);
		rewrite(&x->k, &x->s, 0, &tm);
		x->installed = 0;
	} else if (cf->patched && !x->installed) {
		rewrite(&x->k, &x->s, 1, &tm);
		x->installed = 1;
	}
	memcpy(a, cf->a, sizeof(a));
	if (cf->profile) /* the function at the point: work() */
		a[0].value = a[1].value = (int64_t)x->s.f[0].addr;
	if (cf->patched)
		point_set(&x->c, 0, cf->n, a);
	ask(&x->k, ans, sizeof(ans), "%ld %ld\n", n, reps);
	printf("prim mode=%s round=%d config=%s %s\n", x->mode, r, cf->name, ans);
	if (!strcmp(cf->name, "counter"))
		x->counted++;
	if (cf->profile)
		printf("profile_calls mode=%s calls=%ld\n", x->mode, n * reps);
}

static void subject_end(struct subject *x, long calls, long reps)
{
	point_set(&x->c, 0, 0, NULL);
	printf("check mode=%s counter1=%lld expected=%lld\n", x->mode,
	       (long long)read_counter(&x->c, 1), (long long)x->counted * calls * reps);
	printf("check mode=%s entry_counter2=%lld exit_counter3=%lld\n", x->mode,
	       (long long)read_counter(&x->c, 2), (long long)read_counter(&x->c, 3));
	ctl_close(&x->c);
	finish(&x->k);
	dyn_set_free(&x->s);
}

/*
 * Both processes, one preloaded and one attached, side by side: each round, every
 * configuration in turn (the order rotating), on each process (the order alternating).
 */
static int cmd_prims(char **av)
{
	const char *rt = av[0], *dir = av[1];
	int cpu = atoi(av[2]), rounds = atoi(av[3]), ncf = 0, r, i, j;
	long calls = atol(av[4]), reps = atol(av[5]);
	struct subject x[2];
	struct config cf[9];

	memset(cf, 0, sizeof(cf));
	cf[ncf++] = (struct config){ "unpatched", 0, 0, 1, 0, { { 0 } } };
	cf[ncf++] = (struct config){ "inactive", 1, 0, 1, 0, { { 0 } } };
	cf[ncf++] = (struct config){ "counter", 1, 1, 1, 0,
				     { act(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1) } };
	cf[ncf++] = (struct config){ "thread_counter", 1, 1, 1, 0,
				     { act(SPROTO_AT_ENTRY, SPROTO_TADD, 1, 1) } };
	cf[ncf++] = (struct config){ "entry_exit_counters", 1, 2, 1, 0,
				     { act(SPROTO_AT_ENTRY, SPROTO_ADD, 2, 1),
				       act(SPROTO_AT_EXIT, SPROTO_ADD, 3, 1) } };
	cf[ncf++] = (struct config){ "wall_timer", 1, 2, 1, 0,
				     { act(SPROTO_AT_ENTRY, SPROTO_START_WALL, 1, 0),
				       act(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 1, 0) } };
	cf[ncf++] = (struct config){ "cpu_timer", 1, 2, 10, 0,
				     { act(SPROTO_AT_ENTRY, SPROTO_START_CPU, 1, 0),
				       act(SPROTO_AT_EXIT, SPROTO_STOP_CPU, 1, 0) } };
	cf[ncf++] = (struct config){ "profile", 1, 2, 1, 1,
				     { act(SPROTO_AT_ENTRY, SPROTO_PROFILE, 0, 0),
				       act(SPROTO_AT_EXIT, SPROTO_PROFILE, 0, 0) } };
	subject_start(&x[0], "preload", rt, dir, cpu, av[6]);
	subject_start(&x[1], "attach", rt, dir, cpu, av[6]);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < ncf; i++) {
			const struct config *c = &cf[(i + r) % ncf];

			for (j = 0; j < 2; j++) {
				struct subject *y = &x[(j + r) % 2];

				if (!c->profile || y->profile)
					subject_measure(y, c, r, calls, reps);
			}
		}
		fflush(stdout);
	}
	subject_end(&x[0], calls, reps);
	subject_end(&x[1], calls, reps);
	return 0;
}

/* ---- insert ---- */

static int cmd_insert(char **av)
{
	const char *rt = av[0], *ctl = av[1];
	int cpu = atoi(av[2]), reps = atoi(av[3]), r, w;
	const char *one[] = { av[5], NULL };

	/* a fresh process each time: removed patches leave their trampoline pages mapped, and the
	 * tool looks for room near the module at a few places only */
	for (r = 0; r < reps; r++) {
		struct ctl_client c;
		struct kid k;

		nkids = 0;
		spawn(&k, av[4], "run", cpu, NULL);
		usleep(20000);
		attach_runtime(&k, rt, ctl, "insert");
		if (ctl_connect(&c, ctl, k.pid, 10000, err, sizeof(err)) != 0)
			die("connecting: %s", err);
		for (w = 0; w < 2; w++) {
			const char *tag = w ? "all" : "one";
			struct dyn_set s;
			struct times tm;

			insert(&k, w ? NULL : one, c.hello.entry_addr, &s, &tm);
			print_times("insert", tag, &tm, &s);
			if (!dyn_count(&s, DYN_INSTALLED))
				die("nothing patched (%s)", tag);
			/* the process runs patched a moment: the removal finds threads anywhere */
			usleep(20000);
			rewrite(&k, &s, 0, &tm);
			print_times("remove", tag, &tm, &s);
			dyn_set_free(&s);
		}
		ctl_close(&c);
		kill(k.pid, SIGKILL);
		waitpid(k.pid, NULL, 0);
		k.pid = 0;
		fclose(k.in);
		fclose(k.out);
	}
	return 0;
}

/* How many times one process can be instrumented (every function) and uninstrumented. */
static int cmd_cycles(char **av)
{
	const char *rt = av[0], *ctl = av[1];
	int cpu = atoi(av[2]), max = atoi(av[3]), r;
	struct ctl_client c;
	struct kid k;

	spawn(&k, av[4], "run", cpu, NULL);
	attach_runtime(&k, rt, ctl, "cycles");
	if (ctl_connect(&c, ctl, k.pid, 10000, err, sizeof(err)) != 0)
		die("connecting: %s", err);
	for (r = 0; r < max; r++) {
		const char *prefixes[] = { base_name(k.exe), NULL };
		struct target t;
		struct target_module m;
		struct dyn_set s;
		struct times tm;
		int ok;

		if (target_attach(&t, k.pid, err, sizeof(err)) != 0 ||
		    target_find_module(&t, prefixes, &m) != 0 ||
		    dyn_collect(&t, &m, NULL, &s, err, sizeof(err)) != 0)
			die("cycle %d: %s", r, err);
		ok = dyn_plan(&t, &s, c.hello.entry_addr, err, sizeof(err)) == 0 &&
		     dyn_install(&t, &s, err, sizeof(err)) == 0;
		if (target_detach(&t) != 0)
			die("target_detach: %s", target_error(&t));
		if (!ok) {
			printf("cycles done=%d failed=\"%s\"\n", r, err);
			dyn_set_free(&s);
			break;
		}
		rewrite(&k, &s, 0, &tm);
		dyn_set_free(&s);
	}
	if (r == max)
		printf("cycles done=%d failed=none\n", r);
	ctl_close(&c);
	kill(k.pid, SIGKILL);
	waitpid(k.pid, NULL, 0);
	k.pid = 0;
	return 0;
}

/* ---- detach ---- */

static void heavy_round(struct kid *subj, struct kid *ctrl, const char *phase, int r, long n)
{
	char ans[256];
	int i;

	for (i = 0; i < 2; i++) {
		int which = (r + i) % 2;
		struct kid *k = which ? ctrl : subj;

		ask(k, ans, sizeof(ans), "%ld\n", n);
		printf("heavy phase=%s round=%d proc=%s %s\n", phase, r,
		       which ? "control" : "subject", ans);
	}
	fflush(stdout);
}

static int cmd_detach(char **av)
{
	const char *rt = av[0], *ctl = av[1];
	int cpu = atoi(av[2]), rounds = atoi(av[3]), r;
	long n = atol(av[4]);
	struct kid subj, ctrl;
	struct ctl_client c;
	struct dyn_set s;
	struct times tm;
	size_t i;
	uint64_t t0;

	spawn(&subj, av[5], "heavy", cpu, NULL);
	spawn(&ctrl, av[5], "heavy", cpu, NULL);
	for (r = 0; r < rounds; r++)
		heavy_round(&subj, &ctrl, "before", r, n);
	attach_runtime(&subj, rt, ctl, "detach");
	if (ctl_connect(&c, ctl, subj.pid, 10000, err, sizeof(err)) != 0)
		die("connecting: %s", err);
	insert(&subj, NULL, c.hello.entry_addr, &s, &tm);
	print_times("insert", "heavy_all", &tm, &s);
	t0 = now_ns();
	for (i = 0; i < s.n; i++) {
		struct sproto_action a = act(SPROTO_AT_ENTRY, SPROTO_ADD, 0, 1);

		if (s.f[i].state == DYN_INSTALLED)
			point_set(&c, (uint32_t)i, 1, &a);
	}
	printf("points n=%zu set_ms=%.3f\n", dyn_count(&s, DYN_INSTALLED), ms(now_ns() - t0));
	for (r = 0; r < rounds; r++)
		heavy_round(&subj, &ctrl, "instrumented", r, n);
	printf("check counter0=%lld expected=%lld\n", (long long)read_counter(&c, 0),
	       (long long)rounds * (13 * n + 1));
	rewrite(&subj, &s, 0, &tm);
	print_times("remove", "heavy_all", &tm, &s);
	t0 = now_ns();
	if (ctl_request(&c, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_DETACH), err,
			sizeof(err)) != 0)
		die("DETACH: %s", err);
	ctl_close(&c);
	printf("detached detach_request_ms=%.3f\n", ms(now_ns() - t0));
	for (r = 0; r < rounds; r++)
		heavy_round(&subj, &ctrl, "after", r, n);
	finish(&subj);
	finish(&ctrl);
	dyn_set_free(&s);
	return 0;
}

/* ---- callsite ---- */

/* A set holding the call-site point of the first direct call in the target's function fn. */
static void callsite_set(struct kid *k, const char *fn, struct dyn_set *s)
{
	const char *prefixes[] = { base_name(k->exe), NULL }, *only[] = { fn, NULL };
	struct target t;
	struct target_module m;
	struct dyn_set all;
	struct patch_fn pf;
	uint8_t *code;
	size_t i;

	if (target_attach(&t, k->pid, err, sizeof(err)) != 0)
		die("target_attach: %s", err);
	if (target_find_module(&t, prefixes, &m) != 0 ||
	    dyn_collect(&t, &m, only, &all, err, sizeof(err)) != 0 || all.n != 1)
		die("no function %s in process %d", fn, (int)k->pid);
	code = malloc(all.f[0].size);
	if (!code || target_read(&t, all.f[0].addr, code, all.f[0].size) != 0 ||
	    patch_analyze(code, all.f[0].size, all.f[0].addr, &pf, err, sizeof(err)) != 0)
		die("reading %s: %s", fn, err);
	for (i = 0; i < pf.nr_insns && pf.insns[i].kind != PI_CALL; i++)
		;
	if (i == pf.nr_insns)
		die("%s makes no direct call", fn);
	memset(s, 0, sizeof(*s));
	if (dyn_add(s, fn, all.f[0].addr, all.f[0].size, PATCH_CALLSITE,
		    all.f[0].addr + pf.insns[i].off, dyn_add_area(s, m.text_start, m.text_end)) != 0)
		die("out of memory");
	patch_fn_free(&pf);
	free(code);
	dyn_set_free(&all);
	if (target_detach(&t) != 0)
		die("target_detach: %s", target_error(&t));
}

static void callsite_install(struct kid *k, uint64_t handler, struct dyn_set *s)
{
	struct target t;

	if (target_attach(&t, k->pid, err, sizeof(err)) != 0)
		die("target_attach: %s", err);
	if (dyn_plan(&t, s, handler, err, sizeof(err)) != 0 ||
	    dyn_install(&t, s, err, sizeof(err)) != 0)
		die("patching the call site: %s", err);
	if (target_detach(&t) != 0)
		die("target_detach: %s", target_error(&t));
	if (dyn_count(s, DYN_INSTALLED) != 1)
		die("the call site was not patched: %s", s->f[0].why);
}

static int cmd_callsite(char **av)
{
	const char *rt = av[0], *ctl = av[1];
	int cpu = atoi(av[2]), rounds = atoi(av[3]), r, i, installed = 1, counted = 0;
	long calls = atol(av[4]), reps = atol(av[5]);
	struct config cf[4];
	struct ctl_client c;
	struct dyn_set s;
	struct times tm;
	struct kid k;
	char ans[256];

	cf[0] = (struct config){ "unpatched", 0, 0, 1, 0, { { 0 } } };
	cf[1] = (struct config){ "inactive", 1, 0, 1, 0, { { 0 } } };
	cf[2] = (struct config){ "counter", 1, 1, 1, 0, { act(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1) } };
	cf[3] = (struct config){ "thread_counter", 1, 1, 1, 0,
				 { act(SPROTO_AT_ENTRY, SPROTO_TADD, 1, 1) } };
	spawn(&k, av[6], "csprim", cpu, NULL);
	attach_runtime(&k, rt, ctl, "callsite");
	if (ctl_connect(&c, ctl, k.pid, 10000, err, sizeof(err)) != 0)
		die("connecting: %s", err);
	callsite_set(&k, "cs_work_loop", &s);
	callsite_install(&k, c.hello.entry_addr, &s);
	printf("callsite_tramp len=%u displaced=%u\n", s.f[0].plan.tramp_len, s.f[0].plan.len);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 4; i++) {
			const struct config *x = &cf[(i + r) % 4];

			if (!x->patched && installed) {
				point_set(&c, 0, 0, NULL);
				rewrite(&k, &s, 0, &tm);
			} else if (x->patched && !installed) {
				rewrite(&k, &s, 1, &tm);
			}
			installed = x->patched;
			if (x->patched)
				point_set(&c, 0, x->n, x->a);
			ask(&k, ans, sizeof(ans), "%ld %ld\n", calls, reps);
			printf("callsite round=%d config=%s %s\n", r, x->name, ans);
			counted += !strcmp(x->name, "counter");
		}
	}
	point_set(&c, 0, 0, NULL);
	printf("check counter1=%lld expected=%lld\n", (long long)read_counter(&c, 1),
	       (long long)counted * calls * reps);
	ctl_close(&c);
	finish(&k);
	dyn_set_free(&s);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 9 && !strcmp(argv[1], "prims"))
		return cmd_prims(argv + 2);
	if (argc == 8 && !strcmp(argv[1], "insert"))
		return cmd_insert(argv + 2);
	if (argc == 8 && !strcmp(argv[1], "detach"))
		return cmd_detach(argv + 2);
	if (argc == 7 && !strcmp(argv[1], "cycles"))
		return cmd_cycles(argv + 2);
	if (argc == 9 && !strcmp(argv[1], "callsite"))
		return cmd_callsite(argv + 2);
	fprintf(stderr, "usage: dyn_driver prims RT DIR CPU ROUNDS CALLS REPS TARGET\n"
			"       dyn_driver insert RT CTL CPU REPS TARGET FN\n"
			"       dyn_driver detach RT CTL CPU ROUNDS N TARGET\n"
			"       dyn_driver cycles RT CTL CPU MAX TARGET\n"
			"       dyn_driver callsite RT CTL CPU ROUNDS CALLS REPS TARGET\n");
	return 2;
}
