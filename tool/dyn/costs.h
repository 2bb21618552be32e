/* SPDX-License-Identifier: MIT */
/*
 * The costs the runtime measured in the target (COSTS_REPLY, runtime/calib_dyn.c) as the cost
 * model's inputs (tool/mdl/cost.h), and shown (`sonde watch -v`).
 */
#ifndef SONDE_DYN_COSTS_H
#define SONDE_DYN_COSTS_H

#include <stdio.h>

#include "../mdl/cost.h"
#include "protocol.h"

/* ns of one item (sproto_cost_item), *sd its spread (may be NULL); -1 when not measured. */
double dyn_cost_ns(const struct sproto_costs *k, unsigned item, double *sd);
/*
 * Replace the defaults of c by what was measured: trampolines (entry; exit: the return hook;
 * call site: both), predicates, timers, and for counters the thread counters' figures
 * when thread_counters (a session counts in thread counters), else the shared ones'.
 */
void dyn_costs_apply(const struct sproto_costs *k, int thread_counters, struct cost_params *c);
/* A table of every figure, ns per execution. */
void dyn_costs_print(FILE *f, const struct sproto_costs *k);

#endif
