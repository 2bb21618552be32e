/* SPDX-License-Identifier: MIT */
/*
 * Statistical sampling inside the runtime (sonde run --sample): what sample.c (timers, the
 * signal, the stack walk), sample_table.c (the table of stacks) and sample_write.c (the SAMPLES
 * record) share. Everything here may run in a signal handler: no libc call, no lock.
 */
#ifndef SONDE_RT_SAMPLE_H
#define SONDE_RT_SAMPLE_H

#include "rt.h"

#define SMP_MAX_DEPTH 128     /* frames kept per sample, the interrupted one included */
#define SMP_MAX_THREADS 4096  /* threads sampled per process; later ones are not */
#define SMP_SLOTS (1u << 16)  /* distinct (thread, stack) pairs the table holds */

/* One sampled thread: written by the thread itself (and its handler), read by the writer. */
struct smp_thread {
	uint32_t index;       /* order in which sampling started: 0 is the main thread */
	pid_t tid;
	_Atomic uint32_t ended;
	int timer;            /* the kernel's timer id; -1 when none */
	uintptr_t stack_lo, stack_hi; /* the thread's stack: frames are looked for in it */
	uint64_t cpu_start, cpu_end; /* thread CPU time (ns) when sampling started and ended */
	uint64_t cpu_stop;    /* the thread that stopped sampling (the writer's): CPU time then */
	uint64_t samples;     /* signals taken */
	uint64_t periods;     /* timer periods they stand for (1 + the kernel's overrun count) */
	uint64_t dropped;     /* samples not stored: the table or its frame pool was full */
	uint64_t truncated;   /* stacks deeper than SMP_MAX_DEPTH (the outermost frames lost) */
};

/* sample_table.c */
int smp_table_init(void);
void smp_table_reset(void); /* a forked child starts empty */
int smp_table_add(uint32_t thread, const uint64_t *pcs, uint32_t depth, uint64_t periods);
/* Visit every stored stack; the writer's two passes. */
typedef void (*smp_visit_fn)(void *arg, uint32_t slot, uint32_t thread, uint32_t depth,
			     uint64_t samples, uint64_t periods, const uint64_t *pcs);
void smp_table_foreach(smp_visit_fn fn, void *arg);

/* sample.c */
extern uint32_t smp_hz;
extern int smp_signo;
extern struct smp_thread *smp_threads;
extern _Atomic uint32_t smp_nthreads;
uint64_t smp_thread_cpu(const struct smp_thread *t);

/* sample_signal.c */
int smp_signal_init(void);

#endif
