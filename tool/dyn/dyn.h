/* SPDX-License-Identifier: MIT */
/*
 * Instrumenting the functions of one module of a stopped process (docs/dynamic.md): which
 * functions, their trampolines next to the module, writing and removing the patches with every
 * thread's PC moved out of the way. The machine code is tool/patch/'s; the process control is
 * tool/inject/'s; this file decides what to patch and in which order.
 */
#ifndef SONDE_DYN_H
#define SONDE_DYN_H

#include <stddef.h>
#include <stdint.h>

#include "../inject/target.h"
#include "../patch/patch.h"

enum dyn_state { DYN_PLANNED, DYN_REFUSED, DYN_INSTALLED };

struct dyn_func {
	char *name;
	uint64_t addr, size; /* run-time address, bytes */
	int state;           /* enum dyn_state */
	char why[160];       /* DYN_REFUSED: the patcher's reason */
	struct patch_plan plan;
};

struct dyn_set {
	char module[4096];
	uint64_t bias;
	struct dyn_func *f; /* f[i] is point i */
	size_t n, cap;
	uint64_t tramp_area, tramp_size; /* mapped in the target, within +-2 GB of the module */
};

/* The module's function symbols worth patching (not the C runtime's start-up code, not
 * compiler-split .cold parts); only: NULL for all, else a NULL-ended list of names. */
int dyn_collect(struct target *t, const struct target_module *m, const char *const *only,
		struct dyn_set *s, char *err, size_t n);
/* Read, analyse and plan every function (point = its index), trampolines calling handler. */
int dyn_plan(struct target *t, struct dyn_set *s, uint64_t handler, char *err, size_t n);
/* The world must be stopped: write the trampolines, then the sites; move threads' PCs. */
int dyn_install(struct target *t, struct dyn_set *s, char *err, size_t n);
/* The world must be stopped: the original bytes back; threads out of the trampolines (the
 * trampolines stay mapped: a thread inside the handler returns through one). */
int dyn_remove(struct target *t, struct dyn_set *s, char *err, size_t n);
size_t dyn_count(const struct dyn_set *s, int state);
void dyn_set_free(struct dyn_set *s);

#endif
