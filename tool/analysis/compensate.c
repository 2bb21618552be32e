/* SPDX-License-Identifier: MIT */
/* Local overhead compensation; see compensate.h and docs/measurement.md §2.2–2.3. */
#include "compensate.h"

#include <math.h>

static double clamp0(double v)
{
	return v > 0 ? v : 0;
}

/* Subtree sums, gathered bottom-up: a child's index is always above its parent's. */
static void sum_subtrees(struct comp_node *nodes, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		nodes[i].child_calls = 0;
		nodes[i].desc_calls = 0;
		nodes[i].desc_skipped = nodes[i].skipped;
	}
	for (i = n; i-- > 1;) {
		struct comp_node *p = &nodes[nodes[i].parent];

		p->child_calls += nodes[i].calls;
		p->desc_calls += nodes[i].calls + nodes[i].desc_calls;
		p->desc_skipped += nodes[i].desc_skipped;
	}
}

/*
 * incl_c = incl - calls*o_in - desc_calls*o_full - desc_skipped*o_skip
 * excl_c = excl - calls*o_in - child_calls*(o_full - o_in) - skipped*o_skip
 * A call's own o_in falls inside its interval; each measured child leaves the rest of its pair
 * (o_full - o_in) in the caller's exclusive time; an unmeasured call leaves all of o_skip there.
 */
void comp_tree(struct comp_node *nodes, uint32_t n, const struct comp_costs *c)
{
	uint32_t i;

	sum_subtrees(nodes, n);
	for (i = 0; i < n; i++) {
		struct comp_node *x = &nodes[i];

		x->incl_c = clamp0(x->incl - (double)x->calls * c->o_in -
				   (double)x->desc_calls * c->o_full -
				   (double)x->desc_skipped * c->o_skip);
		x->excl_c = clamp0(x->excl - (double)x->calls * c->o_in -
				   (double)x->child_calls * (c->o_full - c->o_in) -
				   (double)x->skipped * c->o_skip);
	}
}

double comp_thread_overhead(const struct comp_node *root, const struct comp_costs *c)
{
	return (double)root->desc_calls * c->o_full + (double)root->desc_skipped * c->o_skip;
}

double comp_total(double t_m, double main_overhead, const double *other_overheads,
		  uint32_t nother)
{
	double max = 0;
	uint32_t i;

	for (i = 0; i < nother; i++)
		if (other_overheads[i] > max)
			max = other_overheads[i];
	return clamp0(t_m - main_overhead - max);
}

double comp_insitu_err(uint64_t probes, uint64_t unmeasured, double unseen, double o_skip,
		       double spread, uint32_t pairs)
{
	double se = 1.2533 * spread / sqrt(pairs ? (double)pairs : 1.0);

	return (double)probes * (unseen + 2 * se) + (double)unmeasured * o_skip;
}

double comp_insitu_others_err(uint64_t probes, uint64_t hot_calls, double price)
{
	return probes > hot_calls ? (double)(probes - hot_calls) * price : 0;
}

double comp_insitu_unseen(uint32_t pairs, uint32_t bare_pairs, double stub, double o_skip)
{
	if (!pairs || bare_pairs > pairs)
		return o_skip;
	return ((double)bare_pairs * stub + (double)(pairs - bare_pairs) * o_skip) / pairs;
}

double comp_calib_err(uint64_t probes, uint64_t unmeasured, double o_full, double o_skip,
		      double o_overlap, double least)
{
	double hidden = o_overlap >= 0 && o_full > o_overlap ? (o_full - o_overlap) / o_full : 0;
	double err = hidden * ((double)probes * o_full + (double)unmeasured * o_skip);

	return err > least ? err : least;
}
