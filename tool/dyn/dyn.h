/* SPDX-License-Identifier: MIT */
/*
 * Instrumenting functions of a stopped process (docs/dynamic.md): which functions, their
 * trampolines next to each function's module, writing and removing the patches with every
 * thread's PC moved out of the way. A set may hold the entries and call sites of functions of
 * several modules (the executable and shared libraries). The machine code is tool/patch/'s; the process control is
 * tool/inject/'s; this file decides what to patch and in which order.
 */
#ifndef SONDE_DYN_H
#define SONDE_DYN_H

#include <stddef.h>
#include <stdint.h>

#include "../inject/target.h"
#include "../patch/patch.h"

enum dyn_state { DYN_PLANNED, DYN_REFUSED, DYN_INSTALLED };

/* One point: a function's entry, or one of its call sites. */
struct dyn_func {
	char *name;
	uint64_t addr, size; /* the function: run-time address, bytes */
	int kind;            /* PATCH_ENTRY, or PATCH_CALLSITE at call */
	uint64_t call;       /* PATCH_CALLSITE: the call instruction's address */
	uint32_t area;       /* its trampoline area (the module's): index in dyn_set.areas */
	int state;           /* enum dyn_state */
	char why[160];       /* DYN_REFUSED: the patcher's reason (set before dyn_plan: kept) */
	struct patch_plan plan;
};

/* Trampolines of the points of one module: PATCH_TRAMP_MAX bytes each, within +-2 GB of it. */
struct dyn_area {
	uint64_t lo, hi;     /* the code served (module's text span, or its functions') */
	uint64_t addr, size; /* mapped in the target by dyn_plan; 0: not yet */
};

struct dyn_set {
	char module[4096];  /* dyn_collect's module */
	uint64_t bias;
	uint32_t first_id;  /* f[i] is point first_id + i (several sets in one process) */
	struct dyn_func *f;
	size_t n, cap;
	struct dyn_area *areas;
	size_t nareas;
};

/* The module's function symbols worth patching (not the C runtime's start-up code, not
 * compiler-split .cold parts); only: NULL for all, else a NULL-ended list of names. */
int dyn_collect(struct target *t, const struct target_module *m, const char *const *only,
		struct dyn_set *s, char *err, size_t n);
/* Add a point of a function (name copied), its trampoline in area (dyn_add_area). 0 or -1. */
int dyn_add(struct dyn_set *s, const char *name, uint64_t addr, uint64_t size, int kind,
	    uint64_t call, uint32_t area);
/* An area for the code in [lo, hi) (a module's text): its index. */
uint32_t dyn_add_area(struct dyn_set *s, uint64_t lo, uint64_t hi);
/*
 * Map the trampoline areas, read, analyse and plan every point (point id = its index),
 * trampolines calling handler. A point refused beforehand (why set) stays refused; a call site
 * whose bytes overlap another planned point of its function (its entry) is refused.
 */
int dyn_plan(struct target *t, struct dyn_set *s, uint64_t handler, char *err, size_t n);
/* The world must be stopped: write the trampolines, then the sites; move threads' PCs. */
int dyn_install(struct target *t, struct dyn_set *s, char *err, size_t n);
/* The world must be stopped: the original bytes back; threads out of the trampolines (the
 * trampolines stay mapped: a thread inside the handler returns through one). */
int dyn_remove(struct target *t, struct dyn_set *s, char *err, size_t n);
/* The same for the points i with which[i] set (which NULL: every one). */
int dyn_remove_some(struct target *t, struct dyn_set *s, const uint8_t *which, char *err,
		    size_t n);
size_t dyn_count(const struct dyn_set *s, int state);
void dyn_set_free(struct dyn_set *s);

#endif
