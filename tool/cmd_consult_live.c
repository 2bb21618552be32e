/* SPDX-License-Identifier: MIT */
/*
 * sonde consult PID / sonde consult -- PROGRAM ARGS: the live search (docs/consult.md). The
 * process is attached (the runtime injected) or the program started held before main under
 * the dynamic runtime (as `sonde watch -- PROGRAM`); the search's requests become
 * instrumentation inserted while it runs and taken out when their nodes are concluded
 * (consult/live_source.c); at the end (the process's end, --for, Ctrl-C) the graph, the
 * explanations, the data the search used against full sampling and full tracing; an attached
 * process is let go as it was, every patch taken out.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds.h"
#include "consult/live_mpi.h"
#include "consult/live_profile.h"
#include "consult/live_source.h"
#include "consult/trigger.h"
#include "consult/view.h"
#include "consult_live.h"
#include "consult_mpi.h"
#include "dyn/launch.h"
#include "dyn/proc_state.h"
#include "elfinfo.h"
#include "report.h"
#include "term.h"
#include "util.h"

/* ---- the process ---- */

/* The program to start: found, dynamically linked. */
static int program_path(const char *name, char *path, char *exe)
{
	struct elf_info ei;

	if (find_program(name, path, PATH_MAX) != 0 || !realpath(path, exe))
		return error("consult: no program '%s'", name);
	if (elfinfo__read(exe, &ei) != 0 || !ei.is_elf64_x86_64)
		return error("consult: '%s' is not an x86-64 ELF program", name);
	if (ei.is_static)
		return error("consult: '%s' is statically linked: the runtime cannot be loaded "
			     "into it (the live search needs a dynamically linked program)", name);
	return 0;
}

/* What is searched: one process, or the ranks of an MPI program (one session each). */
struct co_target {
	struct dyn_session *s;
	uint32_t n;
	int32_t *rank;  /* NULL: not the ranks of an MPI program */
	pid_t child;    /* the program or the MPI launcher started here, 0 */
	pid_t launcher; /* the MPI launcher, 0 */
	uint64_t held_ns; /* the program started held until let go, or attached (injected) */
	char title[160];
};

static const char *runtime_lib(void)
{
	static char rt[PATH_MAX]; /* the session keeps a pointer to it (so.runtime) */
	char found[PATH_MAX];

	if (runtime_path(found, sizeof(found)) != 0 || !realpath(found, rt))
		return error("consult: the runtime library is missing (looked for %s)", found), NULL;
	return rt;
}

/* A process id naming an MPI launcher (its ranks are searched). */
static int is_launcher_pid(const char *arg)
{
	unsigned long long pid = 0;

	return arg && parse_u64(arg, &pid) == 0 && pid && pid <= INT_MAX &&
	       consult_mpi_pid_is_launcher((pid_t)pid);
}

/* Attached, or started and held: a session without a plan (the search makes the requests). */
static int open_session(const struct co_opts *o, struct dyn_session *s, pid_t *child)
{
	struct dyn_session_opts so = { 0 };
	char path[PATH_MAX], exe[PATH_MAX], err[512];
	unsigned long long pid = 0;
	const char *rt = runtime_lib();

	*child = 0;
	if (!rt)
		return -1;
	so.runtime = rt;
	so.bucket_ns = (uint64_t)llround(o->period_ms * 1e6);
	so.launched = o->argv != NULL;
	so.max_cost = -1; /* the search keeps its own budget */
	if (o->argv) {
		if (program_path(o->argv[0], path, exe) != 0)
			return -1;
		if (dyn_session_plan(s, 0, exe, NULL, NULL, NULL, err, sizeof(err)) != 0)
			return error("consult: %s", err);
		if ((s->pid = dyn_start_held("consult", o->dir, path, o->argv, rt)) <= 0)
			return -1;
		*child = s->pid;
		snprintf(s->comm, sizeof(s->comm), "%s", strrchr(exe, '/') + 1);
	} else {
		if (parse_u64(o->path, &pid) != 0 || !pid || pid > INT_MAX)
			return error("consult: '%s' is not a process id", o->path);
		if (dyn_session_plan(s, (pid_t)pid, NULL, NULL, NULL, NULL, err, sizeof(err)) != 0)
			return error("consult: %s", err);
	}
	if (dyn_session_attach(s, &so, err, sizeof(err)) != 0) {
		if (*child)
			kill(*child, SIGKILL);
		return error("consult: %s", err);
	}
	return 0;
}

/* Every rank attached (cmd_consult_mpi.c); on failure the attached ones are let go. */
static int attach_ranks(const struct co_opts *o, struct co_target *t,
			const struct consult_rank *r)
{
	struct dyn_session_opts so = { 0 };
	char err[512];
	uint32_t i;

	so.runtime = runtime_lib();
	if (!so.runtime)
		return -1;
	so.bucket_ns = (uint64_t)llround(o->period_ms * 1e6);
	so.max_cost = -1;
	for (i = 0; i < t->n; i++) {
		struct dyn_session *s = &t->s[i];
		uint64_t t0 = mono_now_ns();

		t->rank[i] = r[i].rank;
		/* the ranks run the runtime's code on this machine: the first one's costs serve
		 * all (a COSTS_REPLY is 216 bytes a rank) */
		so.costs = i ? &t->s[0].costs : NULL;
		if (dyn_session_plan(s, r[i].pid, NULL, NULL, NULL, NULL, err, sizeof(err)) != 0 ||
		    dyn_session_attach(s, &so, err, sizeof(err)) != 0)
			break;
		t->held_ns += mono_now_ns() - t0;
	}
	if (i == t->n)
		return 0;
	error("consult: rank %d (process %d): %s", (int)r[i].rank, (int)r[i].pid, err);
	while (i-- > 0)
		dyn_session_finish(&t->s[i], err, sizeof(err));
	return -1;
}

/* The ranks of mpirun (started here, or the process named), each attached. */
static int open_ranks(const struct co_opts *o, struct co_target *t)
{
	struct consult_rank *r;
	unsigned long long pid = 0;
	uint32_t i;

	if (o->argv) {
		if ((t->child = consult_mpi_start(o->argv)) <= 0) {
			t->child = 0;
			return -1;
		}
		t->launcher = t->child;
	} else {
		if (parse_u64(o->path, &pid) != 0 || !pid || pid > INT_MAX)
			return error("consult: '%s' is not a process id", o->path);
		t->launcher = (pid_t)pid;
	}
	if (consult_mpi_find(t->launcher, t->child != 0, &r, &t->n) != 0)
		return -1;
	t->s = xcalloc(t->n, sizeof(*t->s));
	t->rank = xcalloc(t->n, sizeof(*t->rank));
	for (i = 0; i < t->n; i++)
		t->s[i].c.fd = -1;
	if (attach_ranks(o, t, r) != 0) {
		free(r);
		return -1;
	}
	snprintf(t->title, sizeof(t->title), "%u MPI ranks of process %d (%s)", t->n,
		 (int)t->launcher, t->s[0].comm);
	free(r);
	return 0;
}

static int open_target(const struct co_opts *o, struct co_target *t)
{
	int32_t rank;

	memset(t, 0, sizeof(*t));
	if ((o->argv && consult_mpi_launcher(o->argv[0])) ||
	    (!o->argv && is_launcher_pid(o->path)))
		return open_ranks(o, t);
	t->s = xcalloc(1, sizeof(*t->s));
	t->s->c.fd = -1;
	t->n = 1;
	t->held_ns = mono_now_ns();
	if (open_session(o, t->s, &t->child) != 0)
		return -1;
	/* launched: held until let go (the session reads the program after) */
	t->held_ns = (t->s->t_resumed ? t->s->t_resumed : mono_now_ns()) - t->held_ns;
	if (!o->argv && consult_mpi_rank(t->s->pid, &rank) == 0) {
		/* one rank alone: its MPI library's threads are not the program's (live_mpi.c) */
		t->rank = xcalloc(1, sizeof(*t->rank));
		t->rank[0] = rank;
		snprintf(t->title, sizeof(t->title), "MPI rank %d, process %d (%s)", (int)rank,
			 (int)t->s->pid, t->s->comm);
		return 0;
	}
	snprintf(t->title, sizeof(t->title), "process %d (%s)", (int)t->s->pid, t->s->comm);
	return 0;
}

static void close_target(struct co_target *t)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		dyn_session_free(&t->s[i]);
	free(t->s);
	free(t->rank);
}

/* ---- the view ---- */

struct live_view {
	struct cs_view v;
	struct cs_source *src;
	uint64_t next_ns;
};

static void progress(struct cs_engine *e, void *arg)
{
	struct live_view *lv = arg;
	struct live_source_info li;
	uint32_t count[CS_STATE_COUNT] = { 0 }, i;

	cs_view_progress(e, &lv->v);
	if (lv->v.quiet || e->now < lv->next_ns)
		return;
	lv->next_ns = e->now + 1000000000ull;
	for (i = 0; i < e->nnodes; i++)
		count[e->nodes[i].state]++;
	live_source_info(lv->src, &li);
	printf("[%7.3f s] %u nodes: %u testing, %u true, %u false, %u never concluded, %u waiting;"
	       " %u points in, predicted cost %.2g %% of a CPU\n", (double)e->now / 1e9, e->nnodes,
	       count[CS_TESTING], count[CS_TRUE], count[CS_FALSE], count[CS_NEVER],
	       count[CS_UNTESTED] + count[CS_DEFERRED], li.dyn.points_now, e->st.cost_now * 100);
	fflush(stdout);
}

/* ---- data volume (seed 003 Figs. 4.2-4.7) ---- */

struct live_volume {
	uint64_t samples, bytes, wire_bytes, full_samples, full_bytes, trace_events, trace_bytes;
	uint32_t pairs, pairs_available;
	double sample_bytes; /* a sample's size: the mean of the entries received */
};

static void volume_of(const struct cs_engine *e, const struct live_source_info *li,
		      double sample_bytes, struct live_volume *v)
{
	uint64_t foci = 1 + li->modules + li->procedures;

	memset(v, 0, sizeof(*v));
	/* entries are of variable length (protocol version 6): a sample is as large as the mean
	 * entry the runtime sent (tool-side readings counted at that size too) */
	if (li->dyn.entries)
		sample_bytes = (double)li->dyn.entry_bytes / (double)li->dyn.entries;
	v->sample_bytes = sample_bytes;
	v->samples = e->st.samples;
	v->bytes = (uint64_t)llround((double)e->st.samples * sample_bytes);
	v->wire_bytes = li->dyn.bytes;
	v->pairs = e->st.foci_used;
	/* of MPI ranks: each focus alone, at each rank, at each rank's threads */
	v->pairs_available = (uint32_t)(li->metrics * foci *
					(li->ranks ? 1 + li->ranks + li->threads
					 : li->threads > 1 ? li->threads + 1 : 1));
	/* every pair at every sample period (the search's steps are longer while it is settled) */
	v->full_samples = (uint64_t)v->pairs_available *
			  (li->period_ns ? (li->run_ns + li->period_ns - 1) / li->period_ns : e->st.steps);
	v->full_bytes = (uint64_t)llround((double)v->full_samples * v->sample_bytes);
	v->trace_events = 2 * li->full_calls; /* an ENTER and an EXIT, 8 bytes each */
	v->trace_bytes = 8 * v->trace_events;
}

/* What the search took from the program for sure: its instrumentation's executions (observed
 * cost) and the time it was stopped to be patched. */
static double perturbation_s(const struct live_source_info *li)
{
	return li->observed_ns / 1e9 + li->dyn.pause_ms / 1e3;
}

static void print_volume(const struct live_volume *v, const struct live_source_info *li,
			 uint64_t steps, uint64_t held, int launched)
{
	printf("\nData: the search used %llu samples (%llu bytes at %.1f bytes a sample, the mean "
	       "entry received; %llu bytes of SAMPLE messages received: %llu messages, %llu "
	       "entries of %llu bytes) of %u (metric, focus) pairs, in %llu steps of %.0f ms or "
	       "more (values that did not change are not sent; %.0f to %.0f ms while only true "
	       "nodes are re-tested)\n",
	       (unsigned long long)v->samples, (unsigned long long)v->bytes, v->sample_bytes,
	       (unsigned long long)v->wire_bytes, (unsigned long long)li->dyn.samples,
	       (unsigned long long)li->dyn.entries, (unsigned long long)li->dyn.entry_bytes,
	       v->pairs, (unsigned long long)steps,
	       (double)li->period_ns / 1e6, (double)li->period_ns * LIVE_RETEST / 1e6,
	       (double)li->period_ns * LIVE_SETTLED_MAX / 1e6);
	printf("      full periodic sampling of all %u pairs: %llu samples, %llu bytes "
	       "(%.1fx more)\n",
	       v->pairs_available, (unsigned long long)v->full_samples,
	       (unsigned long long)v->full_bytes,
	       v->samples ? (double)v->full_samples / (double)v->samples : 0.0);
	printf("      full tracing of the calls counted: at least %llu events, %llu bytes (%.1fx "
	       "more than the search used)\n", (unsigned long long)v->trace_events,
	       (unsigned long long)v->trace_bytes,
	       v->bytes ? (double)v->trace_bytes / (double)v->bytes : 0.0);
	printf("Instrumentation: %u requests (%u at once at most), %u points patched in %u "
	       "batches (%u at once at most), %u removals, %u calls already running caught up in "
	       "%u stops, pauses %.2f ms in all; observed cost %.3f s (%.2g %% of the time "
	       "searched)\n", li->requests, li->requests_max, li->dyn.points_total,
	       li->dyn.batches, li->dyn.points_max, li->dyn.removals, li->dyn.catchup.calls,
	       li->dyn.catchup.stops, li->dyn.pause_ms, li->observed_ns / 1e9,
	       li->run_ns ? 100 * li->observed_ns / (double)li->run_ns : 0.0);
	if (li->dyn.catchup.failed)
		printf("Catch-up: not made %u time%s (%s): those calls counted from their next one\n",
		       li->dyn.catchup.failed, li->dyn.catchup.failed == 1 ? "" : "s",
		       li->dyn.catchup.why);
	printf("Perturbation: %.3f s (%.2g %% of the time searched): the observed cost and the "
	       "pauses (the program stopped while patched); besides, the runtime's control thread "
	       "took %.3f s of CPU (%.2g %%: the program's own only when the CPUs are all busy), "
	       "and the program was held %.3f s at its %s\n", perturbation_s(li),
	       li->run_ns ? 100 * perturbation_s(li) * 1e9 / (double)li->run_ns : 0.0,
	       li->control_cpu_ns / 1e9,
	       li->run_ns ? 100 * li->control_cpu_ns / (double)li->run_ns : 0.0, held / 1e9,
	       launched ? "start (runtime loaded, connected)"
			: li->ranks ? "attach (runtime injected; the ranks' times added)"
				    : "attach (runtime injected)");
}

/* "name":{"TYPE":[messages,bytes],...}: the connections' traffic by message type (frames
 * included); high: 0x80 for the runtime's messages. */
static void write_json_traffic(FILE *out, const char *name, const struct ctl_traffic *t,
			       uint16_t high)
{
	const char *sep = "";
	unsigned i;

	fprintf(out, "\"%s\":{", name);
	for (i = 1; i < CTL_SLOTS; i++) {
		const char *type = sproto_type_name((uint16_t)(high | i));

		if (!t->msgs[i])
			continue;
		fprintf(out, "%s\"%s\":[%llu,%llu]", sep, type ? type : "?",
			(unsigned long long)t->msgs[i], (unsigned long long)t->bytes[i]);
		sep = ",";
	}
	fprintf(out, "}");
}

/* The data volume: what the search used, what the runtime sent (protocol version 6), what
 * full sampling and full tracing would have. */
static void write_json_data(FILE *out, const struct cs_engine *e, const struct live_volume *v,
			    const struct live_source_info *li)
{
	const struct dyn_live_stats *d = &li->dyn;

	fprintf(out, "\"data\":{\"samples\":%llu,\"sample_bytes\":%g,\"bytes\":%llu,"
		"\"wire_bytes\":%llu,\"pairs\":%u,\"pairs_available\":%u,"
		"\"full_sampling_samples\":%llu,\"full_sampling_bytes\":%llu,\"trace_bytes\":%llu,"
		"\"trace_events\":%llu,\"steps\":%llu,\"cost_max\":%g,\"retest_samples\":%llu,"
		"\"settled_samples\":%llu,\"settled_steps\":%llu,\"pair_samples\":%llu,",
		(unsigned long long)v->samples, v->sample_bytes, (unsigned long long)v->bytes,
		(unsigned long long)v->wire_bytes, v->pairs, v->pairs_available,
		(unsigned long long)v->full_samples, (unsigned long long)v->full_bytes,
		(unsigned long long)v->trace_bytes, (unsigned long long)v->trace_events,
		(unsigned long long)e->st.steps, e->st.cost_max,
		(unsigned long long)e->st.retest_samples, (unsigned long long)e->st.settled_samples,
		(unsigned long long)e->st.settled_steps,
		(unsigned long long)(li->ranks ? li->pair_samples : e->st.samples));
	fprintf(out, "\"wire\":{\"messages\":%llu,\"entries\":%llu,\"entry_bytes\":%llu,"
		"\"own_entries\":%llu,\"request_entries\":%llu,\"point_entries\":%llu,"
		"\"stale_entries\":%llu,\"received_bytes\":%llu,", (unsigned long long)d->samples,
		(unsigned long long)d->entries, (unsigned long long)d->entry_bytes,
		(unsigned long long)d->by_kind[DYN_LE_OWN], (unsigned long long)d->by_kind[DYN_LE_REQ],
		(unsigned long long)d->by_kind[DYN_LE_POINT], (unsigned long long)d->by_kind[0],
		(unsigned long long)d->received);
	write_json_traffic(out, "sent", &d->sent, 0);
	fprintf(out, ",");
	write_json_traffic(out, "received", &d->got, 0x80);
	fprintf(out, "}},");
}

static int write_json(const char *path, const struct cs_engine *e, const struct co_opts *o,
		      const struct live_volume *v, const struct live_source_info *li,
		      const struct co_target *t, struct cs_source *src)
{
	FILE *out = fopen(path, "w");
	pid_t pid = t->launcher ? t->launcher : t->s[0].pid;
	uint32_t i;

	if (!out)
		return error("consult: %s: %s", path, strerror(errno));
	fprintf(out, "{\"sonde_consult\":1,\"ranks\":%u,\"rank_pids\":[", t->rank ? t->n : 0);
	for (i = 0; t->rank && i < t->n; i++) {
		struct live_source_info ri = { 0 };

		if (live_mpi_is(src))
			live_mpi_rank_info(src, i, &ri);
		fprintf(out, "%s{\"rank\":%d,\"pid\":%d,\"messages\":%llu,\"entries\":%llu,"
			"\"wire_bytes\":%llu}", i ? "," : "", (int)t->rank[i], (int)t->s[i].pid,
			(unsigned long long)ri.dyn.samples, (unsigned long long)ri.dyn.entries,
			(unsigned long long)ri.dyn.bytes);
	}
	fprintf(out, "],\"live\":{\"pid\":%d,\"launched\":%s,\"ended\":%s,"
		"\"observed_cost_s\":%g,\"requests\":%u,\"requests_max\":%u,\"points\":%u,"
		"\"points_max\":%u,\"batches\":%u,\"removals\":%u,\"caught_up\":%u,"
		"\"catchup_stops\":%u,\"catchup_failed\":%u,\"pause_ms\":%g,"
		"\"perturbation_s\":%g,\"control_cpu_s\":%g,\"held_s\":%g},\"run_ns\":%llu,"
		"\"period_ns\":%llu,\"params\":{\"min_obs_s\":%g,\"sufficient_obs_s\":%g,"
		"\"min_fraction\":%g,\"hysteresis\":%g,\"budget\":%g,\"load_compensation\":%s},"
		"\"thresholds\":{", (int)pid, o->argv ? "true" : "false",
		li->ended ? "true" : "false", li->observed_ns / 1e9, li->requests, li->requests_max,
		li->dyn.points_total, li->dyn.points_max, li->dyn.batches, li->dyn.removals,
		li->dyn.catchup.calls, li->dyn.catchup.stops, li->dyn.catchup.failed,
		li->dyn.pause_ms, perturbation_s(li), li->control_cpu_ns / 1e9,
		(double)t->held_ns / 1e9, (unsigned long long)li->run_ns,
		(unsigned long long)li->period_ns,
		e->par.min_obs, e->par.suff_obs, e->par.min_fraction, e->par.hyst, e->par.budget,
		e->par.load_comp ? "true" : "false");
	for (i = 0; i < e->lib->nthresholds; i++) {
		fprintf(out, "%s", i ? "," : "");
		json_str(out, e->lib->thresholds[i].name);
		fprintf(out, ":%g", e->lib->thresholds[i].value);
	}
	fprintf(out, "},");
	write_json_data(out, e, v, li);
	cs_write_json_members(out, e);
	fprintf(out, "}\n");
	if (fclose(out) != 0)
		return error("consult: %s: %s", path, strerror(errno));
	return 0;
}

/* ---- the search ---- */

/* Graph, explanations, data; 0, or -1 when the search had to stop early (said why). */
static int report(const struct co_opts *o, struct cs_engine *e, struct cs_source *src,
		  struct cs_source *trig, const struct co_target *t)
{
	struct live_source_info li;
	struct live_volume v;
	FILE *fitted;

	live_source_info(src, &li);
	if (trig)
		printf(cs_trigger_fired(trig)
			       ? "trigger %s fired at %.3f s: times count from there\n"
			       : "trigger %s never fired: nothing searched\n", o->trigger,
		       (double)cs_trigger_fired(trig) / 1e9);
	printf("searched %.3f s of %s%s\n", (double)li.run_ns / 1e9, t->title,
	       li.ended ? ", which ended" : "");
	fflush(stdout);
	fitted = term_fitted(stdout); /* lines fitted to a terminal */
	cs_view_tree(fitted, e);
	cs_view_explain_live(fitted, e, e->now, live_profile, src);
	term_fitted_close(fitted, stdout);
	volume_of(e, &li, src->ops->sample_bytes, &v);
	print_volume(&v, &li, e->st.steps, t->held_ns, o->argv != NULL && !t->rank);
	if (o->json)
		write_json(o->json, e, o, &v, &li, t, src);
	if (o->dot)
		consult_write_dot(o->dot, e, t->title);
	if (li.error[0])
		return error("consult: the search stopped early: %s", li.error);
	return 0;
}

/* One live source a process; over the ranks of an MPI program, their source (live_mpi.c). */
static struct cs_source *sources(struct co_target *t, const struct live_source_opts *lo)
{
	struct cs_source **v = xcalloc(t->n, sizeof(*v)), *src = NULL;
	char err[512];
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (!(v[i] = live_source_new(&t->s[i], lo, err, sizeof(err)))) {
			if (dyn_gone_soon(t->s[i].pid)) /* a broken connection says less */
				error("consult: process %d ended before the search could begin: "
				      "nothing was measured", (int)t->s[i].pid);
			else if (t->rank)
				error("consult: rank %d (process %d): %s", (int)t->rank[i],
				      (int)t->s[i].pid, err);
			else
				error("consult: %s", err);
			break;
		}
	if (i == t->n) {
		src = t->rank ? live_mpi_new(v, t->rank, t->n) : v[0];
		/* its requests are committed when its next step begins (source.h) */
		src->late_start = 1;
	} else {
		while (i-- > 0)
			live_source_free(v[i]);
	}
	free(v);
	return src;
}

static void free_sources(struct cs_source *src)
{
	if (live_mpi_is(src))
		live_mpi_free(src);
	else
		live_source_free(src);
}

/* Every process let go (detached, its patches out). */
static int finish(struct co_target *t)
{
	char err[512];
	uint32_t i;
	int r = 0;

	for (i = 0; i < t->n; i++)
		if (dyn_session_finish(&t->s[i], err, sizeof(err)) != 0)
			r = error("consult: detaching from process %d: %s", (int)t->s[i].pid, err);
	return r;
}

static void headline(const struct co_opts *o, const struct co_target *t)
{
	uint32_t i;

	if (t->n == 1)
		printf("sonde consult: %s, %u procedures", t->title, t->s->nprocs);
	else
		printf("sonde consult: %s, each attached:", t->title);
	for (i = 0; t->n > 1 && i < t->n; i++)
		printf("%s rank %d = process %d", i ? "," : "", (int)t->rank[i], (int)t->s[i].pid);
	printf("; samples every %.0f ms%s%s\n", o->period_ms, o->trigger ? "; waiting for " : "",
	       o->trigger ? o->trigger : "");
	fflush(stdout);
}

static int search(const struct co_opts *o, const struct hyp_lib *lib, struct co_target *t)
{
	struct live_source_opts lo = { o->seconds, &stop_signal };
	struct live_view lv = { .v = { .out = stdout, .quiet = o->quiet } };
	struct cs_source *src, *trig = NULL;
	struct cs_engine *e;
	char err[512];
	int r = 0;

	src = sources(t, &lo);
	if (!src) {
		finish(t); /* the program runs on, unmeasured */
		return -1;
	}
	if (o->trigger && !(trig = cs_trigger_new(src, o->trigger, 1, err, sizeof(err)))) {
		free_sources(src);
		finish(t);
		return error("consult: %s", err);
	}
	headline(o, t);
	lv.src = src;
	e = cs_engine_new(lib, &o->par, trig ? trig : src);
	e->progress = progress;
	e->progress_arg = &lv;
	cs_engine_run(e);
	cs_view_progress(e, &lv.v);
	r = finish(t);
	r |= report(o, e, src, trig, t);
	cs_view_free(&lv.v);
	cs_engine_free(e);
	cs_trigger_free(trig);
	free_sources(src);
	return r;
}

int consult_live(const struct co_opts *o, const struct hyp_lib *lib)
{
	struct co_target t;
	int r, status;

	catch_stop_signals();
	if (open_target(o, &t) != 0) {
		if (t.child && t.launcher) /* the launcher started here: its ranks go with it */
			kill(t.child, SIGTERM);
		if (t.child)
			dyn_wait_program(t.child);
		close_target(&t);
		return 1;
	}
	r = search(o, lib, &t);
	fflush(stdout);
	close_target(&t);
	if (t.child) {
		status = dyn_wait_program(t.child);
		if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status))
			printf("the program exited with status %d\n", WEXITSTATUS(status));
		else if (status >= 0 && WIFSIGNALED(status))
			printf("the program was killed by signal %d\n", WTERMSIG(status));
	}
	return r ? 1 : 0;
}
