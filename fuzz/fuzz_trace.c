/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer entry for the trace reader (format/trace_read.c): any bytes must be refused with a
 * reason or read without a memory error or leak (ASan, UBSan). And what reads back complete must
 * survive the writer: written again, it reads again with the same events.
 * Build and run: `make fuzz` (fuzz/fuzz.mk); a short run is part of `make check`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read every event, so that a bad array is a memory error here. */
static uint64_t touch(const struct strc_file *f)
{
	uint64_t sum = 0;
	uint32_t i;
	size_t j;

	for (i = 0; i < f->nthreads; i++)
		for (j = 0; j < f->threads[i].nev; j++)
			sum += f->threads[i].ev[j].t + f->threads[i].ev[j].id;
	for (i = 0; i < f->nfuncs; i++)
		sum += strlen(f->funcs[i].name) + (strc_func_of(f, f->funcs[i].id) != NULL);
	for (i = 0; i < f->nmodules; i++)
		sum += strlen(f->modules[i].path);
	return sum + strlen(f->exe) + strlen(f->cmdline) + strlen(f->warning);
}

/* Written and read again, a complete trace keeps its events. */
static void rewrite(const struct strc_file *f)
{
	struct strc_file *g = NULL;
	uint8_t *out = NULL;
	size_t len = 0;
	char err[256];
	uint32_t i;

	if (f->truncated || !f->nthreads)
		return;
	if (strc_write_mem(f, &out, &len, err, sizeof(err)) != 0)
		abort();
	if (strc_read_mem(out, len, &g, err, sizeof(err)) != 0 || g->nthreads != f->nthreads)
		abort();
	for (i = 0; i < f->nthreads; i++)
		if (g->threads[i].nev != f->threads[i].nev ||
		    memcmp(g->threads[i].ev, f->threads[i].ev,
			   f->threads[i].nev * sizeof(*f->threads[i].ev)) != 0)
			abort();
	strc_free(g);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strc_file *f = NULL;
	char err[256];
	volatile uint64_t sink;

	if (strc_read_mem(data, size, &f, err, sizeof(err)) != 0)
		return 0;
	sink = touch(f);
	(void)sink;
	rewrite(f);
	strc_free(f);
	return 0;
}
