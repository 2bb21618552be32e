/* SPDX-License-Identifier: MIT */
/*
 * sonde calibrate: the costs of the clock and the probes on this machine, measured by the
 * runtime itself (loaded here with dlopen), and what they imply for measurement (seed 004:
 * an interval measured with a clock of period dt has a relative error below E when it is at
 * least dt/E + dt long).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "clock_error.h"
#include "cmds.h"
#include "profile.h"
#include "report.h"
#include "util.h"

#define RUNS 5

typedef int (*calibrate_fn)(struct sprof_calib *out, unsigned size, int cpu);
typedef int (*overlap_fn)(struct sprof_overlap *out, unsigned size);


/* How much of a pair a program's own work can hide here (the OVERLAP record's measurement). */
static double hidden_ns(const struct sprof_calib *c, const struct sprof_overlap *o)
{
	return o->batches && c->o_full > o->o_pair ? c->o_full - o->o_pair : 0;
}

static void print_overlap(const struct sprof_calib *c, const struct sprof_overlap *o)
{
	if (!o->batches)
		return;
	printf("overlap    next to %.1f ns of dependent work a pair adds %.1f ± %.1f ns: up to %.1f "
	       "of its %.1f ns\n           can hide in a program's own work, and compensation "
	       "may remove that much too much\n",
	       o->work_ns, o->o_pair, o->o_pair_sd, hidden_ns(c, o), c->o_full);
}

static void print_text(const struct sprof_calib *c, int n, int cpu)
{
	char a[32], b[32], d[32], f[32];
	double probe_err = c->dt_ns + c->o_in_sd;

	printf("clock      %s, %.4f ticks/ns; read %.1f ± %.1f ns; period dt %.2f ns\n",
	       c->clock_kind == SPROF_CLOCK_TSC ? "tsc (constant, non-stop)" : "CLOCK_MONOTONIC",
	       c->ticks_per_ns, c->clock_ns, c->clock_sd, c->dt_ns);
	printf("probes     o_in %.1f ± %.1f ns   o_full %.1f ± %.1f ns   unmeasured call %.1f ± "
	       "%.1f ns%s\n",
	       c->o_in, c->o_in_sd, c->o_full, c->o_full_sd, c->o_skip, c->o_skip_sd,
	       cpu ? "   (with CPU time)" : "");
	printf("           (median of %d calibrations of %u batches each, slowest 10%% of "
	       "batches dropped)\n", n, c->samples);
	printf("shortest interval with relative error <= 1 %%: %s by the clock alone, %s for a "
	       "profiled call\n",
	       fmt_time(a, sizeof(a), clock_min_interval(c->dt_ns, 0.01)),
	       fmt_time(b, sizeof(b), clock_min_interval(probe_err, 0.01)));
	printf("shortest interval with relative error <= 5 %%: %s by the clock alone, %s for a "
	       "profiled call\n",
	       fmt_time(d, sizeof(d), clock_min_interval(c->dt_ns, 0.05)),
	       fmt_time(f, sizeof(f), clock_min_interval(probe_err, 0.05)));
	printf("implies    each profiled call adds %.1f ns before compensation: a function of 100 ns "
	       "per call\n           runs %.2fx slower measured; compensation removes the mean, "
	       "the ±%.1f ns spread stays\n",
	       c->o_full, 1 + c->o_full / 100.0, c->o_full_sd);
}

static void print_json(const struct sprof_calib *c, const struct sprof_overlap *o)
{
	if (o->batches)
		printf("{\"overlap_work_ns\":%.3f,\"overlap_pair_ns\":%.3f,\"overlap_hidden_ns\":%.3f,",
		       o->work_ns, o->o_pair, hidden_ns(c, o));
	else
		printf("{\"overlap_work_ns\":null,\"overlap_pair_ns\":null,\"overlap_hidden_ns\":null,");
	printf("\"clock\":\"%s\",\"ticks_per_ns\":%.6f,\"clock_ns\":%.3f,\"clock_sd_ns\":%.3f,"
	       "\"dt_ns\":%.3f,\"o_in_ns\":%.3f,\"o_in_sd_ns\":%.3f,\"o_full_ns\":%.3f,"
	       "\"o_full_sd_ns\":%.3f,\"o_skip_ns\":%.3f,\"o_skip_sd_ns\":%.3f,"
	       "\"min_interval_1pct_ns\":%.1f,\"min_interval_5pct_ns\":%.1f}\n",
	       c->clock_kind == SPROF_CLOCK_TSC ? "tsc" : "monotonic", c->ticks_per_ns, c->clock_ns,
	       c->clock_sd, c->dt_ns, c->o_in, c->o_in_sd, c->o_full, c->o_full_sd, c->o_skip,
	       c->o_skip_sd, clock_min_interval(c->dt_ns, 0.01), clock_min_interval(c->dt_ns, 0.05));
}

static int cmp_full(const void *a, const void *b)
{
	double x = ((const struct sprof_calib *)a)->o_full, y = ((const struct sprof_calib *)b)->o_full;

	return x < y ? -1 : x > y;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: sonde calibrate [--json] [--cpu] [--precise]\n"
		"  measures, in this process, what the clock and the probes cost on this machine\n"
		"  (the in-vitro calibration every measured run repeats) and what it implies:\n"
		"  the shortest interval measurable to 1 %% and 5 %% (docs/measurement.md)\n"
		"  --json      the figures as JSON\n"
		"  --cpu       probes that read the thread's CPU time too (sonde run --cpu)\n"
		"  --precise   probes with ordered exit timestamps (sonde run --precise)\n");
}

int cmd_calibrate(int argc, char **argv)
{
	struct sprof_calib runs[RUNS];
	struct sprof_overlap ov = { 0 };
	char rt[PATH_MAX];
	calibrate_fn calibrate;
	overlap_fn overlap;
	void *h;
	int i, json = 0, cpu = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(stdout), 0;
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--cpu"))
			cpu = 1;
		else if (!strcmp(argv[i], "--precise"))
			setenv("SONDE_PRECISE", "1", 1); /* read by the runtime as it loads */
		else
			return error("calibrate: unknown option '%s' (options: --json, --cpu, --precise)",
				     argv[i]), EXIT_USAGE;
	}
	if (runtime_path(rt, sizeof(rt)) != 0)
		return error("calibrate: the runtime library is missing (looked for %s)", rt), 1;
	/* loaded only to be measured: not as a runtime injected into a process to control */
	setenv("SONDE_CALIBRATE_ONLY", "1", 1);
	/* DEEPBIND: the runtime's calibration must reach its own hooks, not libc's empty ones */
	h = dlopen(rt, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	calibrate = h ? (calibrate_fn)dlsym(h, "sonde__calibrate") : NULL;
	if (!calibrate)
		return error("calibrate: cannot load %s: %s", rt, dlerror()), 1;
	for (i = 0; i < RUNS; i++)
		if (calibrate(&runs[i], sizeof(runs[i]), cpu) != 0)
			return error("calibrate: the runtime did not start"), 1;
	qsort(runs, RUNS, sizeof(runs[0]), cmp_full);
	overlap = (overlap_fn)dlsym(h, "sonde__calibrate_overlap");
	if (!overlap || overlap(&ov, sizeof(ov)) != 0)
		ov.batches = 0;
	if (json) {
		print_json(&runs[RUNS / 2], &ov);
		return 0;
	}
	print_text(&runs[RUNS / 2], RUNS, cpu);
	print_overlap(&runs[RUNS / 2], &ov);
	return 0;
}
