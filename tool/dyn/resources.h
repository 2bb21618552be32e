/* SPDX-License-Identifier: MIT */
/*
 * The resources of a running process below /SyncObject and /Files (docs/dynamic.md,
 * "Sync objects and files"), found by the tool alone, without the runtime:
 *
 * - /SyncObject/KIND/NAME: mutexes, rwlocks, condition variables, barriers and semaphores that
 *   the executable and its shared libraries define as data: global and static variables whose
 *   DWARF type is pthread_mutex_t, pthread_rwlock_t, pthread_cond_t, pthread_barrier_t or sem_t
 *   (through typedefs and qualifiers), an array's elements by their index ("locks[3]"). A
 *   focus may also name an object by an ELF data symbol alone (no DWARF: the kind's size
 *   indexes arrays) or by its address ("/SyncObject/mutex/0x55d0c0de1040": heap objects).
 * - /Files/PATH: the files the process has open now (/proc/PID/fd, absolute paths only: not
 *   pipes, sockets or anonymous inodes), each with its descriptors.
 *
 * A focus on one of them becomes a predicate on the sync or I/O functions' first argument
 * (the MDL's $object, tool/mdl/mdl.h): dyn_resources_program() gives mdl_plan the values.
 */
#ifndef SONDE_DYN_RESOURCES_H
#define SONDE_DYN_RESOURCES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../mdl/mdl.h"

enum dyn_res_kind {
	DYN_RES_MUTEX, DYN_RES_RWLOCK, DYN_RES_COND, DYN_RES_BARRIER, DYN_RES_SEM,
	DYN_RES_SYNC_KINDS,
	DYN_RES_FILE = DYN_RES_SYNC_KINDS
};

struct dyn_resource {
	enum dyn_res_kind kind;
	char *path;    /* "/SyncObject/mutex/hot_lock", "/Files/tmp/x.dat" */
	char *module;  /* a sync object's: the file defining it; NULL for a file */
	int64_t value; /* a sync object's address in the process; a file's descriptor (one entry
			* per descriptor: a file open twice is listed twice) */
};

struct dyn_resources {
	struct dyn_resource *v;
	size_t n;
};

#define DYN_RES_WANT_SYNC 0x1u
#define DYN_RES_WANT_FILES 0x2u

/*
 * The resources of process pid (want: DYN_RES_WANT_*): sync objects from the data of its
 * modules (not the dynamic loader's nor libsonde's), sorted by path; then its open files by
 * descriptor. 0, or -1 with a one-line reason (no such process...).
 */
int dyn_resources_list(pid_t pid, unsigned want, struct dyn_resources *out, char *err, size_t n);
void dyn_resources_free(struct dyn_resources *r);

/*
 * The refinements of a focus, for a search (the Performance Consultant): the paths of r one level
 * below parent, each once, in r's order — "/SyncObject": the kinds that have objects
 * ("/SyncObject/mutex"...); "/SyncObject/mutex": its objects; "/Files": the open files. Up to cap
 * into out (pointers into r, or to constant strings); their number.
 */
size_t dyn_resources_below(const struct dyn_resources *r, const char *parent, const char **out,
			   size_t cap);

/* "mutex", "rwlock", "cond", "barrier", "sem", "file"; -1 / NULL when unknown. */
const char *dyn_res_kind_name(enum dyn_res_kind k);
int dyn_res_kind_of(const char *name);

/*
 * The values a resource path stands for in the process *(const pid_t *)pidp: a sync object's
 * address (exactly one, else an error: unknown object, of another kind, index out of range), a
 * file's open descriptors (none is not an error: the file may be opened later). An
 * mdl_resolve_fn.
 */
int dyn_resource_values(void *pidp, const char *path, int64_t *vals, uint32_t cap, uint32_t *n,
			char *err, size_t errcap);

/* The same in an ELF file not loaded (file: its path, a const char *): a sync object's address
 * in the file (bias 0); a file has no descriptors there. For sonde metrics --plan --exe. */
int dyn_resource_values_elf(void *file, const char *path, int64_t *vals, uint32_t cap,
			    uint32_t *n, char *err, size_t errcap);

/* A program for mdl_plan whose $object is resolved in process *pidp (which must outlive it). */
void dyn_resources_program(struct mdl_program *prog, const pid_t *pidp);

/* The descriptors of process pid open on path now (as /proc/PID/fd names it, or its realpath):
 * their number (at most cap written). */
uint32_t dyn_file_fds(pid_t pid, const char *path, int64_t *fds, uint32_t cap);

#endif
