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
#include "consult/live_profile.h"
#include "consult/live_source.h"
#include "consult/trigger.h"
#include "consult/view.h"
#include "consult_live.h"
#include "dyn/launch.h"
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

/* Attached, or started and held: a session without a plan (the search makes the requests). */
static int open_session(const struct co_opts *o, struct dyn_session *s, pid_t *child)
{
	struct dyn_session_opts so = { 0 };
	static char rt[PATH_MAX]; /* the session keeps a pointer to it (so.runtime) */
	char found[PATH_MAX], path[PATH_MAX], exe[PATH_MAX], err[512];
	unsigned long long pid = 0;

	*child = 0;
	if (runtime_path(found, sizeof(found)) != 0 || !realpath(found, rt))
		return error("consult: the runtime library is missing (looked for %s)", found);
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
	v->pairs_available = (uint32_t)(li->metrics * foci *
					(li->threads > 1 ? li->threads + 1 : 1));
	/* every pair at every sample period (the search's steps are longer while it is settled) */
	v->full_samples = (uint64_t)v->pairs_available *
			  (li->period_ns ? (li->run_ns + li->period_ns - 1) / li->period_ns : e->st.steps);
	v->full_bytes = (uint64_t)llround((double)v->full_samples * v->sample_bytes);
	v->trace_events = 2 * li->full_calls; /* an ENTER and an EXIT, 8 bytes each */
	v->trace_bytes = 8 * v->trace_events;
}

static void print_volume(const struct live_volume *v, const struct live_source_info *li,
			 uint64_t steps)
{
	printf("\nData: the search used %llu samples (%llu bytes at %.1f bytes a sample, the mean "
	       "entry received; %llu bytes of SAMPLE messages received: %llu messages, %llu "
	       "entries of %llu bytes) of %u (metric, focus) pairs, in %llu steps of %.0f ms or "
	       "more (values that did not change are not sent; %.0f ms while only true nodes are "
	       "re-tested)\n",
	       (unsigned long long)v->samples, (unsigned long long)v->bytes, v->sample_bytes,
	       (unsigned long long)v->wire_bytes, (unsigned long long)li->dyn.samples,
	       (unsigned long long)li->dyn.entries, (unsigned long long)li->dyn.entry_bytes,
	       v->pairs, (unsigned long long)steps,
	       (double)li->period_ns / 1e6, (double)li->period_ns * LIVE_RETEST / 1e6);
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
	       "batches (%u at once at most), %u removals, pauses %.2f ms in all; observed cost "
	       "%.3f s (%.2g %% of the time searched)\n", li->requests, li->requests_max,
	       li->dyn.points_total, li->dyn.batches, li->dyn.points_max, li->dyn.removals,
	       li->dyn.pause_ms, li->observed_ns / 1e9,
	       li->run_ns ? 100 * li->observed_ns / (double)li->run_ns : 0.0);
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
		"\"trace_events\":%llu,\"steps\":%llu,\"cost_max\":%g,",
		(unsigned long long)v->samples, v->sample_bytes, (unsigned long long)v->bytes,
		(unsigned long long)v->wire_bytes, v->pairs, v->pairs_available,
		(unsigned long long)v->full_samples, (unsigned long long)v->full_bytes,
		(unsigned long long)v->trace_bytes, (unsigned long long)v->trace_events,
		(unsigned long long)e->st.steps, e->st.cost_max);
	fprintf(out, "\"wire\":{\"messages\":%llu,\"entries\":%llu,\"entry_bytes\":%llu,"
		"\"own_entries\":%llu,\"request_entries\":%llu,\"point_entries\":%llu,"
		"\"stale_entries\":%llu}},", (unsigned long long)d->samples,
		(unsigned long long)d->entries, (unsigned long long)d->entry_bytes,
		(unsigned long long)d->by_kind[DYN_LE_OWN], (unsigned long long)d->by_kind[DYN_LE_REQ],
		(unsigned long long)d->by_kind[DYN_LE_POINT], (unsigned long long)d->by_kind[0]);
}

static int write_json(const char *path, const struct cs_engine *e, const struct co_opts *o,
		      const struct live_volume *v, const struct live_source_info *li, pid_t pid)
{
	FILE *out = fopen(path, "w");
	uint32_t i;

	if (!out)
		return error("consult: %s: %s", path, strerror(errno));
	fprintf(out, "{\"sonde_consult\":1,\"live\":{\"pid\":%d,\"launched\":%s,\"ended\":%s,"
		"\"observed_cost_s\":%g,\"requests\":%u,\"requests_max\":%u,\"points\":%u,"
		"\"points_max\":%u,\"batches\":%u,\"removals\":%u,\"pause_ms\":%g},\"run_ns\":%llu,"
		"\"period_ns\":%llu,\"params\":{\"min_obs_s\":%g,\"sufficient_obs_s\":%g,"
		"\"min_fraction\":%g,\"hysteresis\":%g,\"budget\":%g,\"load_compensation\":%s},"
		"\"thresholds\":{", (int)pid, o->argv ? "true" : "false",
		li->ended ? "true" : "false", li->observed_ns / 1e9, li->requests, li->requests_max,
		li->dyn.points_total, li->dyn.points_max, li->dyn.batches, li->dyn.removals,
		li->dyn.pause_ms, (unsigned long long)li->run_ns, (unsigned long long)li->period_ns,
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
		  struct cs_source *trig, struct dyn_session *s)
{
	struct live_source_info li;
	struct live_volume v;
	char title[128];
	FILE *fitted;

	live_source_info(src, &li);
	if (trig)
		printf(cs_trigger_fired(trig)
			       ? "trigger %s fired at %.3f s: times count from there\n"
			       : "trigger %s never fired: nothing searched\n", o->trigger,
		       (double)cs_trigger_fired(trig) / 1e9);
	printf("searched %.3f s of process %d (%s)%s\n", (double)li.run_ns / 1e9, (int)s->pid,
	       s->comm, li.ended ? ", which ended" : "");
	fflush(stdout);
	fitted = term_fitted(stdout); /* lines fitted to a terminal */
	cs_view_tree(fitted, e);
	cs_view_explain_live(fitted, e, e->now, live_profile, src);
	term_fitted_close(fitted, stdout);
	volume_of(e, &li, src->ops->sample_bytes, &v);
	print_volume(&v, &li, e->st.steps);
	if (o->json)
		write_json(o->json, e, o, &v, &li, s->pid);
	snprintf(title, sizeof(title), "process %d (%s)", (int)s->pid, s->comm);
	if (o->dot)
		consult_write_dot(o->dot, e, title);
	if (li.error[0])
		return error("consult: the search stopped early: %s", li.error);
	return 0;
}

static int search(const struct co_opts *o, const struct hyp_lib *lib, struct dyn_session *s)
{
	struct live_source_opts lo = { o->seconds, &stop_signal };
	struct live_view lv = { .v = { .out = stdout, .quiet = o->quiet } };
	struct cs_source *src, *trig = NULL;
	struct cs_engine *e;
	char err[512];
	int r = 0;

	src = live_source_new(s, &lo, err, sizeof(err));
	if (!src)
		return error("consult: %s", err);
	if (o->trigger && !(trig = cs_trigger_new(src, o->trigger, 1, err, sizeof(err)))) {
		live_source_free(src);
		dyn_session_finish(s, err, sizeof(err)); /* the program runs on, unmeasured */
		return error("consult: %s", err);
	}
	printf("sonde consult: process %d (%s), %u procedures; samples every %.0f ms%s%s\n",
	       (int)s->pid, s->comm, s->nprocs, o->period_ms, o->trigger ? "; waiting for " : "",
	       o->trigger ? o->trigger : "");
	fflush(stdout);
	lv.src = src;
	e = cs_engine_new(lib, &o->par, trig ? trig : src);
	e->progress = progress;
	e->progress_arg = &lv;
	cs_engine_run(e);
	cs_view_progress(e, &lv.v);
	if (dyn_session_finish(s, err, sizeof(err)) != 0)
		r = error("consult: detaching from process %d: %s", (int)s->pid, err);
	r |= report(o, e, src, trig, s);
	cs_view_free(&lv.v);
	cs_engine_free(e);
	cs_trigger_free(trig);
	live_source_free(src);
	return r;
}

int consult_live(const struct co_opts *o, const struct hyp_lib *lib)
{
	struct dyn_session s;
	pid_t child;
	int r, status;

	memset(&s, 0, sizeof(s));
	s.c.fd = -1;
	catch_stop_signals();
	if (open_session(o, &s, &child) != 0) {
		if (child)
			dyn_wait_program(child);
		dyn_session_free(&s);
		return 1;
	}
	r = search(o, lib, &s);
	fflush(stdout);
	dyn_session_free(&s);
	if (child) {
		status = dyn_wait_program(child);
		if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status))
			printf("the program exited with status %d\n", WEXITSTATUS(status));
		else if (status >= 0 && WIFSIGNALED(status))
			printf("the program was killed by signal %d\n", WTERMSIG(status));
	}
	return r ? 1 : 0;
}
