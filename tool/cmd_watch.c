/* SPDX-License-Identifier: MIT */
/*
 * sonde watch PID --metric NAME [--focus PATH] [--for DURATION] [--bucket MS]
 * sonde watch [OPTIONS] -- PROGRAM ARGS
 *
 * Dynamic instrumentation of a running process (docs/dynamic.md): the metric at the focus is
 * planned from the metric library, the runtime injected, the procedures patched; a time
 * histogram of the values streamed back is shown (refreshed each second on a terminal, one
 * line a second otherwise); at the end (--for, Ctrl-C, the program's end) the final values,
 * the pauses and times of attaching and detaching, the predicted and observed costs; the
 * patches come out and the process goes on as before. With a program instead of a PID, sonde
 * starts it held before main (as sonde run --dynamic does) and waits for it after the watch.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "dyn/heap_objs.h"
#include "dyn/launch.h"
#include "dyn/resources.h"
#include "dyn/session.h"
#include "term.h"
#include "util.h"

struct watch_opts {
	pid_t pid;
	char **argv; /* a program to start, or NULL */
	const char *metric, *focus, *file, *dir;
	double seconds; /* 0: until Ctrl-C or the end of the process */
	uint64_t bucket_ns;
	unsigned hammer; /* hidden: remove and reinstall the patches this many times */
	int ascii, verbose;
	int resources; /* --resources: list the process's sync objects and files, watch nothing */
	double max_cost; /* fraction of a CPU; 0: the default; < 0: no limit */
};

static void watch_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde watch [OPTIONS] PID\n"
		"       sonde watch [OPTIONS] -- PROGRAM ARGS\n"
		"       sonde watch PID --resources\n"
		"  instrument a running process (or a program it starts) for one metric, show its\n"
		"  time histogram, then take the instrumentation out again (docs/dynamic.md)\n"
		"  --metric NAME      the metric ('sonde metrics' lists them), e.g. calls, wall_time\n"
		"  --focus PATH       /Code (default), /Code/MODULE, /Code/MODULE/PROCEDURE, with\n"
		"                     /Threads/TID, e.g. /Code/app.c/solve; a sync object\n"
		"                     /SyncObject/KIND/NAME (mutex, rwlock, cond, barrier, sem; a\n"
		"                     data symbol, NAME[i] or an address; no NAME: all of the\n"
		"                     kind) or a file /Files/PATH\n"
		"  --for DURATION     watch this long (500ms, 10s, 2m; default: until Ctrl-C or the\n"
		"                     process ends)\n"
		"  --bucket MS        sampling period in milliseconds (default 100)\n"
		"  --file F.mdl       metrics of your own, read after the built-in library\n"
		"  --ascii            the histogram drawn with '#' and ':'\n"
		"  --max-cost PCT     predicted cost (%% of a CPU) above which nothing is installed\n"
		"                     (default 10; 'off': no limit)\n"
		"  -v, --verbose      show what each primitive and trampoline costs in the process\n"
		"  -o, --output DIR   with a PROGRAM: the runtime's directory (default ./sonde-out)\n"
		"  --resources        list the process's sync variables and open files, then the\n"
		"                     heap sync objects it uses for a moment (--for, default 1s)\n"
		"Ctrl-C ends the watch early; the process is let go as it was.\n");
}

static int parse_for(const char *v, double *out)
{
	if (parse_time_span(v, out) != 0)
		return error("watch: --for needs a duration like 10s, 500ms or 2m, got '%s'", v);
	return 0;
}

static int parse_bucket(const char *v, uint64_t *ns)
{
	unsigned long long ms;

	if (parse_u64(v, &ms) != 0 || ms < 1 || ms > 3600000)
		return error("watch: --bucket needs milliseconds (1 to 3600000), got '%s'", v);
	*ns = ms * 1000000ull;
	return 0;
}

static int parse_pid(const char *v, pid_t *pid)
{
	unsigned long long n;

	if (parse_u64(v, &n) != 0 || n == 0 || n > INT_MAX)
		return error("watch: '%s' is not a process id (sonde watch PID, or -- PROGRAM)", v);
	*pid = (pid_t)n;
	return 0;
}

static int parse_hammer(const char *v, unsigned *n)
{
	unsigned long long k;

	if (parse_u64(v, &k) != 0 || k < 1 || k > 100000)
		return error("watch: --hammer needs a count, got '%s'", v);
	*n = (unsigned)k;
	return 0;
}

static int parse_max_cost(const char *v, double *out)
{
	char *end;
	double pct = strtod(v, &end);

	if (!strcmp(v, "off")) {
		*out = -1;
		return 0;
	}
	if (end == v || *end || !(pct > 0) || pct > 10000)
		return error("watch: --max-cost needs a percentage of a CPU or 'off', got '%s'", v);
	*out = pct / 100;
	return 0;
}

/* One option with a value at argv[*i]: 1 taken, 0 not this one, -1 error. */
static int value_opt(struct watch_opts *o, int argc, char **argv, int *i)
{
	const char *v;
	int r;

	if ((r = opt_value(argc, argv, i, "--metric", &o->metric)) ||
	    (r = opt_value(argc, argv, i, "--focus", &o->focus)) ||
	    (r = opt_value(argc, argv, i, "--file", &o->file)) ||
	    (r = opt_value(argc, argv, i, "--output", &o->dir)) ||
	    (r = opt_value(argc, argv, i, "-o", &o->dir)))
		return r < 0 ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--for", &v)))
		return r < 0 || parse_for(v, &o->seconds) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--bucket", &v)))
		return r < 0 || parse_bucket(v, &o->bucket_ns) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--hammer", &v)))
		return r < 0 || parse_hammer(v, &o->hammer) ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--max-cost", &v)))
		return r < 0 || parse_max_cost(v, &o->max_cost) ? -1 : 1;
	return 0;
}

/* 0 parsed, 1 help shown, -1 usage error. */
static int parse_args(struct watch_opts *o, int argc, char **argv)
{
	int i, r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return watch_usage(stdout), 1;
		if (!strcmp(argv[i], "--")) {
			o->argv = i + 1 < argc ? argv + i + 1 : NULL;
			if (!o->argv)
				return error("watch: which program? (sonde watch [OPTIONS] -- PROGRAM)");
			break;
		}
		if (!strcmp(argv[i], "--ascii")) {
			o->ascii = 1;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			o->verbose = 1;
		} else if (!strcmp(argv[i], "--resources")) {
			o->resources = 1;
		} else if ((r = value_opt(o, argc, argv, &i)) != 0) {
			if (r < 0)
				return -1;
		} else if (argv[i][0] == '-' || o->pid) {
			return error("watch: unexpected argument '%s' (try 'sonde watch --help')",
				     argv[i]);
		} else if (parse_pid(argv[i], &o->pid) != 0) {
			return -1;
		}
	}
	if (!o->pid == !o->argv)
		return error(o->pid ? "watch: a PID or a program, not both"
				    : "watch: which process? (sonde watch PID --metric NAME)");
	if (o->resources && o->argv)
		return error("watch: --resources lists a running process's (sonde watch PID "
			     "--resources)");
	if (!o->metric && !o->resources)
		return error("watch: which metric? (--metric NAME; 'sonde metrics' lists them)");
	return 0;
}

/* ---- values as the metric's units say ---- */

struct shown {
	const char *units; /* the metric's units, "" without */
	double divide;
	int timer;         /* values are ns */
};

static struct shown shown_of(const struct mdl_plan *p)
{
	const struct mdl_units *u = p->metric->units;
	struct shown s = { u ? u->text : "", u && u->divide > 1 ? (double)u->divide : 1, 0 };

	s.timer = p->external || (p->nvars && p->vars[0].kind != MDL_VAR_COUNTER);
	return s;
}

enum amount_kind { AMOUNT_COUNT, AMOUNT_SECS, AMOUNT_RATE };

/* A count exactly; a time in s, ms or us; a rate in 4 digits with k, M, G above 10000. */
static void amount(char *buf, size_t n, double v, enum amount_kind k)
{
	static const char *const unit[] = { "", "k", "M", "G", "T" };
	double a = fabs(v);
	int i = 0;

	if (k == AMOUNT_SECS && v == 0)
		snprintf(buf, n, "0 s");
	else if (k == AMOUNT_SECS)
		snprintf(buf, n, a >= 1 ? "%.3f s" : a >= 1e-3 ? "%.3f ms" : "%.3f us",
			 a >= 1 ? v : a >= 1e-3 ? v * 1e3 : v * 1e6);
	else if (k == AMOUNT_COUNT && v == floor(v) && a < 1e15)
		snprintf(buf, n, "%.0f", v);
	else {
		for (; fabs(v) >= 1e4 && i < 4; i++)
			v /= 1000;
		snprintf(buf, n, "%.4g%s", v, unit[i]);
	}
}

/* "total 1200 calls; 397.4 calls/s over 3.02 s" or "mean 0.78 s/s over 3.02 s (total 2.3 s)" */
static void value_line(FILE *out, const struct dyn_session *s, int64_t v, double secs)
{
	struct shown u = shown_of(s->plan);
	double total = (double)v / u.divide, rate = secs > 0 ? total / secs : 0;
	char t[64], r[64];

	amount(t, sizeof(t), u.timer ? (double)v / 1e9 : total,
	       u.timer ? AMOUNT_SECS : AMOUNT_COUNT);
	amount(r, sizeof(r), rate, AMOUNT_RATE);
	if (s->plan->thread >= 0)
		fprintf(out, "thread %ld: ", s->plan->thread);
	if (s->plan->fold == MDL_FOLD_SUM && !u.timer)
		fprintf(out, "total %s %s; %s %s/s over %.2f s\n", t, u.units, r, u.units, secs);
	else
		fprintf(out, "mean %s %s over %.2f s (total %s)\n", r, u.units, secs, t);
}

/* ---- live display ---- */

struct screen {
	int tty, lines; /* lines drawn last time (a terminal redraws over them) */
	uint64_t t0;
	int64_t last_value;
};

static double secs_since(uint64_t t0)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (double)t0) / 1e9;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void render(FILE *out, const struct dyn_session *s, const struct watch_opts *o)
{
	struct shown u = shown_of(s->plan);
	int width = term_columns(stdout); /* the bars fit the terminal: label, axis, bars */
	char title[600];

	snprintf(title, sizeof(title), "%s %s", s->plan->metric->name, s->plan->focus);
	if (s->h)
		hist_render(out, s->h, &(struct hist_view){ .title = title, .units = u.units,
							    .divide = u.divide,
							    .ascii = o->ascii,
							    .cols = width > 20 ? width - 10 : 0 });
	else
		fprintf(out, "%s  (no sample yet)\n", title);
}

static void draw_tty(struct screen *sc, const struct dyn_session *s, const struct watch_opts *o)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return;
	render(m, s, o);
	fprintf(m, "%.1f s watched; ", secs_since(sc->t0));
	value_line(m, s, s->value, s->t_last > s->t_start ? (double)(s->t_last - s->t_start) / 1e9
							  : 0);
	fclose(m);
	if (sc->lines)
		printf("\033[%dA\033[J", sc->lines);
	fwrite(text, 1, len, stdout);
	for (sc->lines = 0, i = 0; i < len; i++)
		sc->lines += text[i] == '\n';
	fflush(stdout);
	free(text);
}

static void draw_line(struct screen *sc, const struct dyn_session *s)
{
	struct shown u = shown_of(s->plan);
	char d[64];

	amount(d, sizeof(d), (double)(s->value - sc->last_value) / (u.timer ? 1e9 : u.divide),
	       u.timer ? AMOUNT_SECS : AMOUNT_COUNT);
	printf("[%7.2f s] +%s; ", secs_since(sc->t0), d);
	value_line(stdout, s, s->value, s->t_last > s->t_start ? (double)(s->t_last - s->t_start)
								       / 1e9 : 0);
	sc->last_value = s->value;
	fflush(stdout);
}

/* Poll until the end (--for, a signal, the process gone), drawing once a second. */
/*
 * Observed cost (executions counted × the costs measured in the process) above the cost
 * model's alarm: said once, while watching (the report at the end says it again).
 */
static int cost_alarmed(struct dyn_session *s)
{
	double el, obs = dyn_session_observed_ns(s, &el), frac;

	if (el < 5e8 || !cost_alarm(s->cost, obs, el, &frac))
		return 0;
	warning("watch: the instrumentation takes %.0f %% of a CPU (alarm above %.0f %%)",
		frac * 100, s->cp.alarm_at * 100);
	return 1;
}

static int watch_loop(struct dyn_session *s, const struct watch_opts *o, struct screen *sc)
{
	double next = 1;
	char err[512];
	int alarmed = 0;

	while (!stop_signal && !s->ended && (o->seconds <= 0 || secs_since(sc->t0) < o->seconds)) {
		if (dyn_session_poll(s, 100, err, sizeof(err)) < 0)
			return error("watch: %s", err);
		if (secs_since(sc->t0) < next)
			continue;
		next += 1;
		alarmed = alarmed || cost_alarmed(s);
		if (sc->tty)
			draw_tty(sc, s, o);
		else
			draw_line(sc, s);
	}
	return 0;
}

/* ---- the end ---- */

/* Executions of each point, when there are several (the first 8 that ran). */
static void print_counts(const struct dyn_session *s)
{
	uint32_t i, shown = 0, more = 0;
	uint64_t k;

	if (s->npt < 2)
		return;
	printf("executions:");
	for (i = 0; i < s->npt; i++) {
		if (!(k = dyn_session_count(s, i)))
			continue;
		if (shown < 8)
			printf("%s %s %llu", shown ? "," : "", s->set.f[i].name, (unsigned long long)k);
		more += shown++ >= 8;
	}
	if (more)
		printf(" and %u more", more);
	printf("%s\n", shown ? "" : " none");
}

static void print_cost(struct dyn_session *s)
{
	double el, obs = dyn_session_observed_ns(s, &el), frac = el > 0 ? obs / el : 0;
	uint32_t i, extra = 0;

	for (i = 0; i < s->npt; i++)
		extra += !s->pt[i].own && s->set.f[i].state != DYN_REFUSED;
	printf("cost: predicted %.3g ns per second (%.2g %% of a CPU, static frequencies); "
	       "observed %.3g ms in %.2f s (%.2g %% of a CPU)%s; %s\n", s->predicted_ns,
	       s->predicted_ns / 1e7, obs / 1e6, el / 1e9, frac * 100,
	       extra ? ", an execution counter at each point included" : "",
	       s->costs.flags & SPROTO_COSTS_MEASURED ? "costs measured in the process"
						      : "default costs");
	if (el > 0)
		printf("cost: predicted again with the frequencies observed: %.3g ns per second (%.2g %% "
		       "of a CPU, the plan's points)\n", cost_total(s->cost) * 1e9,
		       cost_total(s->cost) * 100);
	if (cost_alarm(s->cost, obs, el, &frac))
		warning("watch: the instrumentation took %.0f %% of a CPU (alarm above %.0f %%)",
			frac * 100, s->cp.alarm_at * 100);
}

/* "object /SyncObject/mutex/hot_lock at 0x55...", "file /Files/tmp/x: fd 3 (followed 1 change)" */
static void print_object(const struct dyn_session *s)
{
	const struct mdl_plan *p = s->plan;
	uint32_t i;

	if (p->resource == MDL_RES_SYNC && p->any_object) {
		printf("objects: every one of %s\n", p->object);
		return;
	}
	if (p->resource == MDL_RES_SYNC && p->nobjects) {
		printf("object %s at 0x%llx\n", p->object, (unsigned long long)p->objects[0]);
		return;
	}
	if (p->resource != MDL_RES_FILE)
		return;
	printf("file %s: ", p->object);
	if (!p->nobjects)
		printf("not open");
	for (i = 0; i < p->nobjects; i++)
		printf("%sfd %lld", i ? ", " : "", (long long)p->objects[i]);
	printf(" (descriptors read every %llu ms; %u change%s followed)\n",
	       (unsigned long long)(DYN_REFRESH_NS / 1000000), s->refocused,
	       s->refocused == 1 ? "" : "s");
}

static void report(struct dyn_session *s, const struct watch_opts *o, struct screen *sc)
{
	double secs = s->t_last > s->t_start ? (double)(s->t_last - s->t_start) / 1e9 : 0;

	if (sc->tty && sc->lines)
		printf("\033[%dA\033[J", sc->lines);
	render(stdout, s, o);
	printf("%s at %s in process %d (%s)%s\n", s->plan->metric->name, s->plan->focus,
	       (int)s->pid, s->comm, !s->ended ? ""
	       : s->last_seen ? ", which ended: values up to its end"
	       : ", which ended without a last sample (killed?): values up to the sample before");
	value_line(stdout, s, s->value, secs);
	print_counts(s);
	print_object(s);
	if (s->lost)
		printf("lost: %llu calls whose return could not be hooked\n",
		       (unsigned long long)s->lost);
	if (s->catchup.threads)
		printf("catch-up: %u call%s already running when the points were set (%u thread%s "
		       "looked at, %u not hooked)\n", s->catchup.calls, s->catchup.calls == 1 ? "" : "s",
		       s->catchup.threads, s->catchup.threads == 1 ? "" : "s", s->catchup.refused);
	if (s->catchup.failed)
		printf("catch-up: not made (%s): calls already running count from their next call\n",
		       s->catchup.why);
	printf("attach: pause %.2f ms (every thread stopped: loading the runtime, patching), "
	       "%.1f ms in all\n", s->attach_pause_ms, s->attach_ms);
	if (!s->ended)
		printf("detach: pause %.2f ms (every thread stopped: unpatching), %.1f ms in all\n",
		       s->detach_pause_ms, s->detach_ms);
	print_cost(s);
}

/* ---- attaching, or starting the program ---- */

/* "3 entries and 8 call sites patched in watch_libs, libwatch_lib.so" */
static void say_points(const struct dyn_session *s)
{
	size_t i, e = 0, k = 0;
	uint32_t a, shown = 0;

	for (i = 0; i < s->set.n; i++)
		if (s->set.f[i].state == DYN_INSTALLED)
			*(s->set.f[i].kind == PATCH_ENTRY ? &e : &k) += 1;
	if (e)
		printf("%zu entr%s", e, e == 1 ? "y" : "ies");
	if (k)
		printf("%s%zu call site%s", e ? " and " : "", k, k == 1 ? "" : "s");
	printf(" patched in");
	for (a = 0; a < s->set.nareas; a++)
		for (i = 0; i < s->set.n; i++)
			if (s->set.f[i].area == a && s->set.f[i].state == DYN_INSTALLED) {
				const char *m = s->mods[s->pinfo[s->site[i].proc].mod].path;

				printf("%s %s", shown++ ? "," : "", strrchr(m, '/') + 1);
				break;
			}
}

static void say_watching(const struct dyn_session *s, const struct watch_opts *o)
{
	printf("watching process %d (%s): %s at %s; ", (int)s->pid, s->comm,
	       s->plan->metric->name, s->plan->focus);
	say_points(s);
	printf("; pause %.2f ms, %.1f ms to attach\n", s->attach_pause_ms, s->attach_ms);
	if (o->verbose) {
		dyn_costs_print(stdout, &s->costs);
		printf("predicted cost: %.3g ns per second (%.2g %% of a CPU; defer above %.3g %%, "
		       "alarm above %.3g %%)\n", s->predicted_ns, s->predicted_ns / 1e7,
		       s->cp.defer_at * 100, s->cp.alarm_at * 100);
	}
	fflush(stdout);
	if (s->nrefused)
		warning("watch: the patcher refused %u of %u points (%s)", s->nrefused, s->npt,
			s->refused);
	if (s->nmissing)
		warning("watch: %u requests of the plan are at procedures that cannot be patched "
			"(start-up code, no size)", s->nmissing);
	if (s->plan->missing)
		warning("watch: %u named procedures are in none of the modules of process %d",
			s->plan->missing, (int)s->pid);
}

static int session_opts(struct dyn_session_opts *so, const struct watch_opts *o, char *rt)
{
	char found[PATH_MAX];

	memset(so, 0, sizeof(*so));
	if (runtime_path(found, sizeof(found)) != 0 || !realpath(found, rt))
		return error("watch: the runtime library is missing (looked for %s)", found);
	so->runtime = rt;
	so->bucket_ns = o->bucket_ns;
	so->launched = o->argv != NULL;
	so->max_cost = o->max_cost;
	return 0;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

static int hammer(struct dyn_session *s, unsigned rounds)
{
	char err[512];

	if (dyn_session_hammer(s, rounds, err, sizeof(err)) != 0)
		return error("watch: hammer: %s", err);
	printf("hammer: %u times every patch removed and put back, the process running 1 ms in "
	       "between; pause %.2f ms in all\n", rounds, s->hammer_pause_ms);
	fflush(stdout);
	return 0;
}

/* Instrumented: watch, report, detach. */
static int watch(struct dyn_session *s, const struct watch_opts *o)
{
	struct screen sc = { isatty(1), 0, mono_ns(), 0 };
	char err[512];
	int r = 0;

	say_watching(s, o);
	if (o->hammer)
		r = hammer(s, o->hammer);
	if (r == 0)
		r = watch_loop(s, o, &sc);
	if (dyn_session_finish(s, err, sizeof(err)) != 0)
		return error("watch: detaching from process %d: %s", (int)s->pid, err);
	report(s, o, &sc);
	fflush(stdout); /* a started program may run on long after */
	return r;
}

static int watch_pid(const struct watch_opts *o, const struct mdl_lib *lib)
{
	struct dyn_session s;
	struct dyn_session_opts so;
	char rt[PATH_MAX], err[512];
	int r = -1;

	if (dyn_session_plan(&s, o->pid, NULL, lib, o->metric, o->focus, err, sizeof(err)) != 0) {
		error("watch: %s", err);
	} else if (session_opts(&so, o, rt) == 0) {
		if (dyn_session_attach(&s, &so, err, sizeof(err)) != 0)
			error("watch: %s", err);
		else
			r = watch(&s, o);
	}
	dyn_session_free(&s);
	return r == 0 ? 0 : 1;
}

/* The program's status once it ends (it runs on after the watch). */
static int wait_program(pid_t pid)
{
	int status = dyn_wait_program(pid);

	return status < 0 ? 1 : exit_code(status);
}

static int watch_program(const struct watch_opts *o, const struct mdl_lib *lib)
{
	struct dyn_session s;
	struct dyn_session_opts so;
	char rt[PATH_MAX], path[PATH_MAX], exe[PATH_MAX], err[512];
	int r = -1, status;

	if (find_program(o->argv[0], path, sizeof(path)) != 0 || !realpath(path, exe))
		return error("watch: no program '%s'", o->argv[0]), EXIT_USAGE;
	if (dyn_session_plan(&s, 0, exe, lib, o->metric, o->focus, err, sizeof(err)) != 0) {
		error("watch: %s", err);
	} else if (session_opts(&so, o, rt) == 0 &&
		   (s.pid = dyn_start_held("watch", o->dir, path, o->argv, rt)) > 0) {
		snprintf(s.comm, sizeof(s.comm), "%s", strrchr(exe, '/') + 1);
		if (dyn_session_attach(&s, &so, err, sizeof(err)) != 0) {
			error("watch: %s", err);
			kill(s.pid, SIGKILL);
		} else {
			r = watch(&s, o);
		}
	}
	status = s.pid > 0 ? wait_program(s.pid) : 1;
	dyn_session_free(&s);
	return r != 0 ? 1 : status;
}

/* ---- --resources ---- */

#define HEAP_DEFAULT_S 1.0 /* how long --resources records the objects used, without --for */

static void print_heap_objects(const struct dyn_session *s, const struct dyn_heap_objs *h)
{
	char path[96], site[512];
	size_t i, shown = 0;
	uint64_t lost = 0;

	for (i = 0; i < h->n; i++) {
		const struct dyn_heap_obj *o = &h->v[i];

		if (o->in_module) /* a variable: listed above by its name */
			continue;
		dyn_heap_path(o, path, sizeof(path));
		if (dyn_heap_site_name(s, o->site, site, sizeof(site)) != 0)
			snprintf(site, sizeof(site), "-");
		printf("%-40s uses %-9" PRIu64 " inits %-3u init at %s\n", path, o->uses,
		       o->inits, site);
		shown++;
	}
	for (i = 0; i < DYN_RES_SYNC_KINDS; i++)
		lost += h->dropped[i];
	if (!shown)
		printf("no heap sync object used while recorded\n");
	if (lost)
		printf("%" PRIu64 " uses not recorded: the runtime's table of %u objects is full\n",
		       lost, h->slots);
}

/* Record the objects the process's sync calls take for a while (the RECORD primitive at their
 * entries), then list those outside the modules' data: heap objects, by address. */
static int list_heap(const struct watch_opts *o)
{
	struct dyn_session s;
	struct dyn_session_opts so;
	struct dyn_heap_objs h = { 0 };
	struct dyn_live *l = NULL;
	struct dyn_lspec sp;
	double secs = o->seconds > 0 ? o->seconds : HEAP_DEFAULT_S;
	char rt[PATH_MAX], err[512];
	uint64_t t0;
	int r = -1;

	if (dyn_session_plan(&s, o->pid, NULL, NULL, NULL, NULL, err, sizeof(err)) != 0)
		return error("watch: %s", err);
	if (dyn_heap_record_spec(&s, &sp) != 0) {
		printf("no heap sync object: process %d calls no pthread sync function\n",
		       (int)o->pid);
		dyn_session_free(&s);
		return 0;
	}
	if (session_opts(&so, o, rt) != 0 || dyn_session_attach(&s, &so, err, sizeof(err)) != 0) {
		free(sp.pt);
		dyn_session_free(&s);
		return error("watch: %s", err);
	}
	l = dyn_live_new(&s);
	if (dyn_live_add(l, &sp, err, sizeof(err)) >= 0 &&
	    dyn_live_commit(l, err, sizeof(err)) == 0) {
		printf("watching process %d's sync calls for %g s: the objects they take\n",
		       (int)o->pid, secs);
		fflush(stdout);
		t0 = mono_ns();
		r = 0;
		while (r == 0 && !stop_signal && !s.ended && secs_since(t0) < secs)
			r = dyn_session_poll(&s, 50, err, sizeof(err)) < 0 ? -1 : 0;
		if (r == 0 && !s.ended)
			r = dyn_heap_objects(&s, 0, &h, err, sizeof(err));
	}
	free(sp.pt);
	if (r != 0)
		error("watch: %s", s.ended ? "the process ended while recording" : err);
	if (dyn_session_finish(&s, err, sizeof(err)) != 0 && r == 0)
		r = error("watch: detaching from process %d: %s", (int)o->pid, err);
	if (r == 0)
		print_heap_objects(&s, &h);
	dyn_heap_objs_free(&h);
	dyn_live_free(l);
	dyn_session_free(&s);
	return r;
}

/* --resources: what a /SyncObject or /Files focus can name in the process now: its variables
 * and files, then the heap objects it uses (recorded for --for, default 1 s). */
static int list_resources(const struct watch_opts *o)
{
	struct dyn_resources r;
	pid_t pid = o->pid;
	char err[512];
	size_t i;

	if (dyn_resources_list(pid, DYN_RES_WANT_SYNC | DYN_RES_WANT_FILES, &r, err,
			       sizeof(err)) != 0)
		return error("watch: %s", err), 1;
	for (i = 0; i < r.n; i++)
		if (r.v[i].kind == DYN_RES_FILE)
			printf("%-40s fd %lld\n", r.v[i].path, (long long)r.v[i].value);
		else
			printf("%-40s 0x%llx %s\n", r.v[i].path, (unsigned long long)r.v[i].value,
			       r.v[i].module);
	if (!r.n)
		printf("no sync object among the data of process %d, no file open\n", (int)pid);
	dyn_resources_free(&r);
	fflush(stdout);
	return list_heap(o) == 0 ? 0 : 1;
}

int cmd_watch(int argc, char **argv)
{
	struct watch_opts o = { .focus = "/Code", .dir = "sonde-out" };
	struct mdl_lib *lib;
	char err[600];
	int r = parse_args(&o, argc, argv);

	if (r != 0)
		return r > 0 ? 0 : EXIT_USAGE;
	if (o.resources) {
		catch_stop_signals();
		return list_resources(&o);
	}
	lib = mdl_load_all(o.file, err, sizeof(err));
	if (!lib)
		return error("%s", err), 1;
	catch_stop_signals();
	r = o.argv ? watch_program(&o, lib) : watch_pid(&o, lib);
	mdl_lib_free(lib);
	return r;
}
