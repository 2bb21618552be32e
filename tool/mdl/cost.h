/* SPDX-License-Identifier: MIT */
/*
 * The instrumentation cost model (seed 003 chapter 7, MODELS.md §4). Predicted cost of a plan:
 * Σ over its points of (trampoline + its actions' primitives and predicates) × the point's
 * frequency, a static default per kind of procedure until the runtime's counts replace it; a
 * point's trampoline counts once however many plans share it. A plan whose predicted cost would
 * take the total perturbation above defer_at waits (deferred); observed cost (executions counted
 * at each point × the same costs) above alarm_at is reported. Costs are inputs: calibrated
 * values replace the defaults.
 */
#ifndef SONDE_COST_H
#define SONDE_COST_H

#include <stdint.h>

#include "mdl.h"

struct cost_params {
	double prim_ns[MDL_PRIM_COUNT];   /* one execution of each primitive */
	double pred_ns;                   /* testing one predicate */
	double tramp_ns[MDL_POINT_COUNT]; /* a point's trampoline: entry (jump, saves, handler
					   * call), exit (return hook, shadow stack), call site */
	double freq_user;      /* executions per second of a point of a user procedure (1000) */
	double freq_library;   /* of a library procedure (100) */
	double wildcard_procs; /* procedures a wildcard request stands for, without symbols (100) */
	double defer_at;       /* predicted perturbation above which plans wait (0.10) */
	double alarm_at;       /* observed perturbation that is reported (0.20) */
};

/* Defaults for x86-64 until `sonde calibrate` measures the dynamic primitives. */
void cost_defaults(struct cost_params *c);
/* ns of one execution of a request's actions (primitives and predicates), and with its
 * trampoline. */
double cost_actions_ns(const struct cost_params *c, const struct mdl_request *r);
double cost_point_ns(const struct cost_params *c, const struct mdl_request *r);
/* Static executions per second of a request's point (a wildcard stands for many procedures). */
double cost_static_freq(const struct cost_params *c, const struct mdl_request *r);

struct cost_model;
struct cost_model *cost_model_new(const struct cost_params *c);
void cost_model_free(struct cost_model *m);

/* Predicted cost of installing a plan now, in ns per second (1e9: one CPU fully taken). */
double cost_predict(const struct cost_model *m, const struct mdl_plan *p);
/* Predicted perturbation of all that is installed: a fraction of one CPU. */
double cost_total(const struct cost_model *m);

enum cost_decision { COST_INSTALL, COST_DEFER };
/* COST_INSTALL (and the plan counts from now on) when the total stays at or below defer_at,
 * or the plan costs nothing; else COST_DEFER. *predicted (may be NULL): its ns per second. */
enum cost_decision cost_admit(struct cost_model *m, const struct mdl_plan *p, double *predicted);
/* An admitted plan's instrumentation was removed. */
void cost_release(struct cost_model *m, const struct mdl_plan *p);

/* What the runtime counted at an installed point: executions since it was installed, over
 * elapsed_ns; the rate replaces the static frequency of that point. 0, or -1 if not installed. */
int cost_observe(struct cost_model *m, const struct mdl_request *r, uint64_t count,
		 double elapsed_ns);
/* Observed cost: Σ over installed points of executions counted × their cost, in ns. */
double cost_observed_ns(const struct cost_model *m);
/* 1 when observed_ns over elapsed_ns is above alarm_at (*fraction, may be NULL: the ratio). */
int cost_alarm(const struct cost_model *m, double observed_ns, double elapsed_ns,
	       double *fraction);

#endif
