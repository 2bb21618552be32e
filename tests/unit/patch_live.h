/*
 * In-process harness for test_patch.c: a corpus shared object loaded with dlopen, its
 * functions read from its ELF symbol table, a trampoline area mapped within ±2 GB of it, and
 * breakpoints (int3 + single step) that count how often instructions run — the reference the
 * trampolines' handler counts are checked against — or act once when an instruction is reached.
 */
#ifndef SONDE_TEST_PATCH_LIVE_H
#define SONDE_TEST_PATCH_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "patch/patch.h"

#define LIVE_WHY 200

/* long pc_NAME(long a, long b, long c = callback, long d = count) */
typedef long (*corpus_fn)(long, long, long, long);

struct live_fn {
	char name[96];
	uint64_t addr;
	size_t size;
	bool exported;			/* global and called by the test */
	bool part;			/* f.cold: not a function, never patched */
	uint8_t *pristine;		/* its bytes when loaded */
	struct patch_fn pf;
	bool analyzed;
	char why[LIVE_WHY];
};

struct live_point {
	enum patch_kind kind;
	size_t fn;			/* index in live_module.fns */
	uint64_t addr;			/* entry site or call instruction: the reference breakpoint */
	bool planned;
	char why[LIVE_WHY];
	struct patch_plan plan;
	uint64_t ref;			/* times the reference breakpoint was hit */
	long reach_fn;			/* an exported function (index) whose call reaches it, or -1 */
	int reach_input;
};

struct live_module {
	const char *path;
	void *dl;
	uint64_t lo, hi;		/* mapped range of the module */
	uint64_t text_lo, text_hi;	/* its executable part */
	struct live_fn *fns;
	size_t nr_fns;
	struct live_point *pts;
	size_t nr_pts;
	uint8_t *tramps;		/* PATCH_TRAMP_MAX bytes per point */
	size_t tramps_size;
};

/* Load the corpus, read and analyse its functions, make its code writable. 0 or -1 + why. */
int live_open(struct live_module *m, const char *path, char *why, size_t n);
void live_close(struct live_module *m);
/* Trampoline area within ±2 GB of the module: 0 or -1. */
int live_tramp_area(struct live_module *m, size_t bytes);
/* Reads our own memory (ctx: the module), failing (not crashing) where nothing is mapped. */
int live_read(void *ctx, uint64_t addr, void *buf, size_t len);

/* Breakpoints. The action runs once, in the SIGTRAP handler, with the PC at the instruction. */
typedef void (*bp_action_fn)(ucontext_t *uc, uint64_t pc, void *arg);
void bp_install_handler(void);
void bp_count(const uint64_t *addrs, size_t n);	/* arm counting breakpoints */
uint64_t bp_hits(uint64_t addr);			/* since bp_count */
void bp_set_reach(long fn, int input);		/* recorded on each address's first hit */
bool bp_reach(uint64_t addr, long *fn, int *input);
void bp_once(uint64_t addr, bp_action_fn action, void *arg);
bool bp_fired(void);
void bp_clear(void);					/* disarm all, restoring the bytes */

/* Write bytes into code (made writable by live_open / live_tramp_area). */
void code_write(uint64_t addr, const void *bytes, size_t len);

#endif
