/* SPDX-License-Identifier: MIT */
/* The runtime's measured costs as the cost model's inputs (costs.h). */
#include "costs.h"

double dyn_cost_ns(const struct sproto_costs *k, unsigned item, double *sd)
{
	uint32_t i;

	for (i = 0; i < k->n; i++)
		if (k->c[i].item == item) {
			if (sd)
				*sd = k->c[i].sd_ps / 1000.0;
			return k->c[i].mean_ps / 1000.0;
		}
	return -1;
}

static void take(const struct sproto_costs *k, unsigned item, double *to)
{
	double ns = dyn_cost_ns(k, item, NULL);

	if (ns >= 0)
		*to = ns;
}

void dyn_costs_apply(const struct sproto_costs *k, int thread_counters, struct cost_params *c)
{
	unsigned counter = SPROTO_COST_PRIM + (thread_counters ? SPROTO_TSET : SPROTO_SET);
	int i;

	if (!(k->flags & SPROTO_COSTS_MEASURED))
		return;
	take(k, SPROTO_COST_ENTRY, &c->tramp_ns[MDL_ENTRY]);
	take(k, SPROTO_COST_EXIT, &c->tramp_ns[MDL_EXIT]);
	/* no call site is calibrated: its relocated call returns where the return-stack predictor
	 * does not expect, as a hooked return does (docs/benchmarks.md, call-site points) */
	if (dyn_cost_ns(k, SPROTO_COST_ENTRY, NULL) >= 0 && dyn_cost_ns(k, SPROTO_COST_EXIT, NULL) >= 0)
		c->tramp_ns[MDL_CALL] = dyn_cost_ns(k, SPROTO_COST_ENTRY, NULL) +
					dyn_cost_ns(k, SPROTO_COST_EXIT, NULL);
	take(k, SPROTO_COST_PRED, &c->pred_ns);
	for (i = 0; i < 3; i++) /* set, add, sub: the same order in both */
		take(k, counter + (unsigned)i, &c->prim_ns[MDL_SET + i]);
	take(k, SPROTO_COST_PRIM + SPROTO_START_WALL, &c->prim_ns[MDL_START_WALL]);
	take(k, SPROTO_COST_PRIM + SPROTO_STOP_WALL, &c->prim_ns[MDL_STOP_WALL]);
	take(k, SPROTO_COST_PRIM + SPROTO_START_CPU, &c->prim_ns[MDL_START_CPU]);
	take(k, SPROTO_COST_PRIM + SPROTO_STOP_CPU, &c->prim_ns[MDL_STOP_CPU]);
}

static const struct {
	unsigned item;
	const char *what;
} rows[] = {
	{ SPROTO_COST_CALL, "call of an empty function (baseline, not added)" },
	{ SPROTO_COST_ENTRY, "entry trampoline, point inactive" },
	{ SPROTO_COST_EXIT, "exit: return hook (shadow stack, return trampoline)" },
	{ SPROTO_COST_PRED, "predicate test" },
	{ SPROTO_COST_PRIM + SPROTO_SET, "setCounter (shared counter)" },
	{ SPROTO_COST_PRIM + SPROTO_ADD, "addCounter (shared counter)" },
	{ SPROTO_COST_PRIM + SPROTO_SUB, "subCounter (shared counter)" },
	{ SPROTO_COST_PRIM + SPROTO_TSET, "setCounter (thread counter)" },
	{ SPROTO_COST_PRIM + SPROTO_TADD, "addCounter (thread counter)" },
	{ SPROTO_COST_PRIM + SPROTO_TSUB, "subCounter (thread counter)" },
	{ SPROTO_COST_PRIM + SPROTO_START_WALL, "startWallTimer (half the pair)" },
	{ SPROTO_COST_PRIM + SPROTO_STOP_WALL, "stopWallTimer (half the pair)" },
	{ SPROTO_COST_PRIM + SPROTO_START_CPU, "startProcessTimer (half the pair)" },
	{ SPROTO_COST_PRIM + SPROTO_STOP_CPU, "stopProcessTimer (half the pair)" },
	{ SPROTO_COST_PRIM + SPROTO_PROFILE, "PROFILE entry+exit, trampolines included (o_full)" },
};

void dyn_costs_print(FILE *f, const struct sproto_costs *k)
{
	double ns, sd;
	size_t i;

	if (!(k->flags & SPROTO_COSTS_MEASURED)) {
		fprintf(f, "costs: not measured by the runtime (the cost model's defaults are used)\n");
		return;
	}
	fprintf(f, "costs measured in the process (%.2f ms, through the patcher's trampolines), "
		"ns per execution:\n", (double)k->elapsed_ns / 1e6);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if ((ns = dyn_cost_ns(k, rows[i].item, &sd)) >= 0)
			fprintf(f, "  %-52s %8.1f ± %.1f\n", rows[i].what, ns, sd);
}
