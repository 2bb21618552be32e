/* SPDX-License-Identifier: MIT */
/*
 * Sync objects the process used, as the runtime saw them (docs/dynamic.md, "Heap sync
 * objects"): a live request puts the RECORD primitive (protocol version 5) at the entry of the
 * functions that take a mutex, an rwlock, a condition variable, a barrier or a semaphore as
 * their first argument (its uses) and of their initialisations (its site: the caller of
 * pthread_mutex_init...); RESOURCES then gives every address seen, with its kind and counts.
 * Objects on the heap (or any memory that is not a module's) are what the tool cannot find
 * alone (resources.h finds the variables).
 */
#ifndef SONDE_DYN_HEAP_OBJS_H
#define SONDE_DYN_HEAP_OBJS_H

#include <stddef.h>
#include <stdint.h>

#include "live.h"
#include "resources.h"
#include "session.h"

struct dyn_heap_obj {
	enum dyn_res_kind kind;
	uint64_t addr;
	uint64_t uses;   /* calls of its kind's functions seen (lock, wait, post...) */
	uint32_t inits;  /* initialisations seen */
	uint64_t site;   /* where the last initialisation seen returns to, 0: none seen */
	int in_module;   /* the address lies in a module's mapping: a variable, not heap */
};

struct dyn_heap_objs {
	struct dyn_heap_obj *v; /* by kind, then address */
	size_t n;
	uint32_t slots;         /* the runtime's table (0: nothing recorded yet) */
	uint64_t dropped[DYN_RES_SYNC_KINDS];
};

/* The functions RECORD instruments: of each kind, those taking the object first (counted as
 * uses), then its initialisation (NULL-terminated lists, "" between). */
extern const char *const dyn_heap_uses[DYN_RES_SYNC_KINDS][10];
extern const char *const dyn_heap_inits[DYN_RES_SYNC_KINDS];

/* A live request recording every kind's objects: one RECORD action at each function (its
 * value, a thread counter, stays 0). sp->pt is allocated (free it); 0, or -1 when the process
 * has none of those functions. */
int dyn_heap_record_spec(const struct dyn_session *s, struct dyn_lspec *sp);

/* RESOURCES over the session: the objects seen since it began (new_only: those not heard of
 * before, or heard of before their first use and used since; protocol version 8), each with
 * whether it lies in a module's mapping (/proc/PID/maps). 0, or -1 with err. */
int dyn_heap_objects(struct dyn_session *s, int new_only, struct dyn_heap_objs *out, char *err,
		     size_t n);
void dyn_heap_objs_free(struct dyn_heap_objs *o);

/* "function (file:line)" of the call returning to site in the process (its modules' DWARF),
 * else "MODULE+0xOFF"; 0, or -1 when site is in no module. */
int dyn_heap_site_name(const struct dyn_session *s, uint64_t site, char *out, size_t cap);

/* "/SyncObject/KIND/0xADDR" */
void dyn_heap_path(const struct dyn_heap_obj *o, char *out, size_t cap);

#endif
