/* SPDX-License-Identifier: MIT */
/*
 * The profile table of a live bottleneck's focus (docs/consult.md, "Output"): what the search
 * measured of the procedures of the focus's module — the CPU time of each procedure whose
 * cpu_time it requested (inclusive: callees' time counts, the timers nest), over the seconds it
 * was measured, so the rows' percentages are comparable though each was measured at its own
 * time — and the calls per second counted where the procedure had a point. Paradyn's CPU
 * explanation printed such a table for the focus (seed 003 §4.1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_profile.h"
#include "live_source.h"

/* A row: a procedure's cpu_time pair in the module (any module when the focus has no Code
 * part: "MODULE/PROC"), of the focus's thread (CPU time is not per object or file). */
static const char *proc_of(const struct cs_req *r, const struct cs_focus *module)
{
	const char *code = r->focus.part[H_CODE], *mod = module->part[H_CODE];
	const char *ta = r->focus.part[H_THREADS], *tb = module->part[H_THREADS];
	size_t k = mod ? strlen(mod) : 5;

	if (!code || strncmp(code, mod ? mod : "/Code", k) || code[k] != '/' ||
	    !!strchr(code + k + 1, '/') != !mod)
		return NULL;
	if (r->focus.part[H_SYNC] || r->focus.part[H_FILES] || r->focus.part[H_MACHINE] ||
	    ((ta || tb) && (!ta || !tb || strcmp(ta, tb))))
		return NULL;
	return code + k + 1;
}

static int by_share(const void *a, const void *b)
{
	const struct cs_live_row *x = a, *y = b;
	double sx = x->measured_s > 0 ? x->cpu_s / x->measured_s : 0;
	double sy = y->measured_s > 0 ? y->cpu_s / y->measured_s : 0;

	return sx < sy ? 1 : sx > sy ? -1 : strcmp(x->name, y->name);
}

uint32_t live_profile(void *arg, const struct cs_engine *e, const struct cs_focus *module,
		      struct cs_live_row *rows, uint32_t max)
{
	struct cs_source *src = arg;
	struct cs_live_row *all = calloc(e->nreqs + 1, sizeof(*all));
	uint32_t n = 0, i;
	char mod[4096];

	if (!all)
		return 0;
	for (i = 0; i < e->nreqs; i++) {
		const struct cs_req *r = &e->reqs[i];
		const char *proc = proc_of(r, module), *slash;

		if (!proc || r->secs <= 0 || strcmp(e->lib->metrics[r->metric], "cpu_time"))
			continue;
		if (module->part[H_CODE]) {
			snprintf(mod, sizeof(mod), "%s", module->part[H_CODE] + 6);
			slash = proc;
		} else {
			slash = strchr(proc, '/');
			snprintf(mod, sizeof(mod), "%.*s", (int)(slash - proc), proc);
			slash++;
		}
		all[n++] = (struct cs_live_row){ proc, r->total, r->secs,
						 live_source_call_rate(src, mod, slash) };
	}
	qsort(all, n, sizeof(*all), by_share);
	if (n > max)
		n = max;
	memcpy(rows, all, n * sizeof(*rows));
	free(all);
	return n;
}
