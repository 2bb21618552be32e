/* SPDX-License-Identifier: MIT */
/*
 * Local overhead compensation of one thread's call-path profile (docs/measurement.md §2.3, TAU's
 * local scheme), and the total-time approximation of a process (§2.2). Pure arithmetic on
 * arrays: no I/O, so it is unit-tested directly.
 */
#ifndef SONDE_COMPENSATE_H
#define SONDE_COMPENSATE_H

#include <stdint.h>

/* Probe costs in ns (from the profile's CALIB record). */
struct comp_costs {
	double o_in, o_full, o_skip;
};

/* One node of a thread's tree, parents before children (node 0 is the thread's root). */
struct comp_node {
	uint32_t parent;         /* index of the parent; ignored for node 0 */
	uint64_t calls;          /* measured calls of this path */
	uint64_t skipped;        /* unmeasured probe pairs directly inside this node */
	double incl, excl;       /* measured ns */
	/* outputs */
	uint64_t child_calls;    /* measured calls made directly from this node */
	uint64_t desc_calls;     /* measured calls anywhere below this node */
	uint64_t desc_skipped;   /* unmeasured probe pairs anywhere inside (own included) */
	double incl_c, excl_c;   /* compensated ns, never below 0 */
};

/* Fill the outputs of n nodes. */
void comp_tree(struct comp_node *nodes, uint32_t n, const struct comp_costs *c);

/* Direct perturbation of a thread: the cost of every probe pair it executed. */
double comp_thread_overhead(const struct comp_node *root, const struct comp_costs *c);

/*
 * T_a of a process (§2.2): the measured wall time minus the main thread's overhead plus, for
 * fork-join concurrency, the largest overhead among the other threads (N_max).
 */
double comp_total(double t_m, double main_overhead, const double *other_overheads,
		  uint32_t nother);

/*
 * How far off a thread's T_a may be when its measured pairs were priced in situ (`--insitu`),
 * in ns: for each measured pair, what its price could not see (`unseen`: comp_insitu_unseen)
 * plus twice the price's standard error (that of a median of `pairs` with robust spread
 * `spread`); for each unmeasured call, its own cost in situ, taken as up to o_skip.
 */
double comp_insitu_err(uint64_t probes, uint64_t unmeasured, double unseen, double o_skip,
		       double spread, uint32_t pairs);

/*
 * What a pair's in-situ price cannot see, ns, over its pairs: where the unmeasured window took
 * the skip path, the unmeasured pair's own cost in situ, which the price adds back as a guess
 * (docs/measurement.md, "What it cannot see"), up to o_skip; where it was bare (the function ran
 * without its probes), the counting stub's cost in situ, up to its cost in a loop (`stub`).
 */
double comp_insitu_unseen(uint32_t pairs, uint32_t bare_pairs, double stub, double o_skip);

/*
 * The in-situ price is measured on one function, the thread's hot leaf (`hot_calls` of its
 * `probes` measured pairs), and charged to every measured pair of the thread: the others may
 * cost anything from nothing to as much again in their own code (bench/known.c: its hot leaf's
 * pair 15.5-16 ns in situ where the run's pairs averaged 12.7). Their share of the uncertainty,
 * in ns: `price` for each of them.
 */
double comp_insitu_others_err(uint64_t probes, uint64_t hot_calls, double price);

/*
 * The same when the pairs were priced by their calibration, in ns: what work like the
 * program's may hide of each pair on this machine and so was removed too much — o_full less
 * o_overlap (a pair's cost next to latency-bound work: the OVERLAP record; below 0 when not
 * measured) for each measured pair, the same share of o_skip for each unmeasured one — and no
 * less than `least` (a set fraction of what was removed).
 */
double comp_calib_err(uint64_t probes, uint64_t unmeasured, double o_full, double o_skip,
		      double o_overlap, double least);

#endif
