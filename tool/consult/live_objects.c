/* SPDX-License-Identifier: MIT */
/*
 * The live source's SyncObject and Files hierarchies (live_int.h): the calls that block and
 * release by kind of object, the I/O calls, the program's own synchronization variables
 * (tool/dyn/resources.c) and its open files, and which calls and first arguments a focus
 * narrows a request to.
 */
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dyn/heap_objs.h"
#include "live_int.h"
#include "util.h"

/* Calls that block (timed), and the releases (counted as operations too). */
static const char *const sync_waits[] = {
	"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_cond_wait",
	"pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_barrier_wait",
	"pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock",
	"pthread_rwlock_timedwrlock", "sem_wait", "sem_timedwait", "sem_clockwait",
	"pthread_join", "pthread_timedjoin_np", NULL
};
static const char *const sync_releases[] = {
	"pthread_mutex_unlock", "pthread_mutex_trylock", "pthread_cond_signal",
	"pthread_cond_broadcast", "pthread_rwlock_unlock", "sem_post", NULL
};
static const char *const io_calls[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
	"fsync", "fdatasync", "open", "open64", "openat", "close", NULL
};

/* The same by the kind of object they act on (/SyncObject/KIND), waits then releases. */
static const struct {
	const char *kind;
	const char *const waits[5], *const releases[3];
} sync_kinds[] = {
	{ "mutex", { "pthread_mutex_lock", "pthread_mutex_timedlock", NULL },
	  { "pthread_mutex_unlock", "pthread_mutex_trylock", NULL } },
	{ "rwlock", { "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
		      "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock", NULL },
	  { "pthread_rwlock_unlock", NULL } },
	{ "cond", { "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", NULL },
	  { "pthread_cond_signal", "pthread_cond_broadcast", NULL } },
	{ "barrier", { "pthread_barrier_wait", NULL }, { NULL } },
	{ "sem", { "sem_wait", "sem_timedwait", "sem_clockwait", NULL }, { "sem_post", NULL } },
};
#define NKINDS (sizeof(sync_kinds) / sizeof(sync_kinds[0]))
/* The I/O calls whose first argument is a descriptor (a /Files focus). */
static const char *const io_fd_calls[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
	"fsync", "fdatasync", "close", NULL
};

/* The calls that move data: their return value is the bytes moved (io_bytes). */
const char *const lv_io_data_calls[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", NULL
};

/* MPI's calls that wait (docs/consult.md, "MPI programs live"): a receive, a completion, a
 * probe — the calls whose time post mortem counts as point-to-point (sends are computing) —
 * and the collectives; their names in the MPI library (libmpi.so), which the program calls
 * whether it names MPI_ or PMPI_ (one address). MPI_Init and MPI_Finalize are left out. */
#define MPI_P2P "MPI_Recv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Probe", "MPI_Mprobe", \
	"MPI_Mrecv", "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome"
#define MPI_COLL "MPI_Barrier", "MPI_Bcast", "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", \
	"MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Reduce", "MPI_Allreduce", \
	"MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Reduce_scatter", \
	"MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan"
const char *const lv_mpi_p2p_calls[] = { MPI_P2P, NULL };
const char *const lv_mpi_coll_calls[] = { MPI_COLL, NULL };
const char *const lv_mpi_calls[] = { MPI_P2P, MPI_COLL, NULL };

/* Whether an MPI library is mapped: a library procedure named like MPI's collectives. */
int lv_has_mpi(const struct dyn_session *s)
{
	uint32_t i;

	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].library && !strcmp(s->procs[i].name, "MPI_Barrier"))
			return 1;
	return 0;
}

/* Marks (seen[k]) the calls of lv_mpi_calls that an ELF file imports as MPI_X or PMPI_X. */
static void mpi_imports_of(Elf *e, void *arg)
{
	uint8_t *seen = arg;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Sym sym;
		size_t i, n, k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !d || !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n && gelf_getsym(d, (int)i, &sym); i++) {
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);

			if (!name || sym.st_shndx != SHN_UNDEF)
				continue;
			name += name[0] == 'P';
			for (k = 0; lv_mpi_calls[k]; k++)
				seen[k] |= !strcmp(name, lv_mpi_calls[k]);
		}
	}
}

/* The MPI library's own modules (their calls are MPI's inside, not the program's). */
static int mpi_own(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libmpi", 6) || !strncmp(b, "libopen-", 8) || !strncmp(b, "mca_", 4) ||
	       !strncmp(b, "libpmix", 7) || !strncmp(b, "libmca", 6);
}

static void keep_seen(const char *const *all, const uint8_t *seen, size_t off, const char **out,
		      uint32_t cap)
{
	uint32_t n = 0;
	size_t k;

	for (k = 0; all[k] && n + 1 < cap; k++)
		if (seen[off + k])
			out[n++] = all[k];
	out[n] = NULL;
}

/* Only the MPI calls the program makes are instrumented: those the executable and its other
 * libraries import (a point on each of MPI's 27 waiting calls, most never called, would be
 * set again at every request's coming and going, in every rank). None imported (Fortran's
 * bindings, a call through dlsym): all of them. */
void lv_mpi_imports(struct lsrc *ls)
{
	uint8_t seen[2 * LV_MPI_MAX] = { 0 };
	size_t np = 0, k, any = 0;
	char file[4200];
	int i;

	while (lv_mpi_p2p_calls[np])
		np++;
	for (i = 0; i < ls->s->nmods; i++)
		if (!mpi_own(ls->s->mods[i].path)) {
			dyn_module_file(ls->s, (uint32_t)i, file, sizeof(file));
			lv_with_elf(file, mpi_imports_of, seen);
		}
	for (k = 0; lv_mpi_calls[k]; k++)
		any |= seen[k];
	if (!any)
		memset(seen, 1, sizeof(seen));
	keep_seen(lv_mpi_p2p_calls, seen, 0, ls->mpi_p2p, LV_MPI_MAX);
	keep_seen(lv_mpi_coll_calls, seen, np, ls->mpi_coll, LV_MPI_MAX);
	keep_seen(lv_mpi_calls, seen, 0, ls->mpi_all, 2 * LV_MPI_MAX);
}

/* ---- sync objects and files ---- */

static int kind_index(const char *kind, size_t len)
{
	size_t k;

	for (k = 0; k < NKINDS; k++)
		if (strlen(sync_kinds[k].kind) == len && !strncmp(sync_kinds[k].kind, kind, len))
			return (int)k;
	return -1;
}

/* The executable's own sync objects only: the C library's internal locks (its aio, getaddrinfo,
 * timer threads') are no refinement a program's author can act on. */
void lv_own_objects(struct lsrc *ls)
{
	size_t i, k = 0;

	for (i = 0; i < ls->objs.n; i++) {
		struct dyn_resource *r = &ls->objs.v[i];

		if (r->module && !strcmp(r->module, ls->s->exe)) {
			ls->objs.v[k++] = *r;
		} else {
			free(r->path);
			free(r->module);
		}
	}
	ls->objs.n = k;
}

/* The files open now; a new one is a new resource (generation). */
void lv_read_files(struct lsrc *ls)
{
	struct dyn_resources now = { 0 };
	char err[256];
	size_t i, j;

	ls->files_read_ns = mono_now_ns();
	if (dyn_resources_list(ls->s->pid, DYN_RES_WANT_FILES, &now, err, sizeof(err)) != 0)
		return;
	for (i = 0; i < now.n; i++) {
		for (j = 0; j < ls->files.n && strcmp(ls->files.v[j].path, now.v[i].path); j++)
			;
		if (j == ls->files.n)
			ls->generation++;
	}
	dyn_resources_free(&ls->files);
	ls->files = now;
}

/* Heap objects: a request of its own records the objects the sync calls take, from the first
 * commit to the end of the search (docs/dynamic.md, "Heap sync objects"). */
void lv_heap_start(struct lsrc *ls)
{
	struct dyn_lspec sp;
	char err[256];

	ls->heap_req = -1;
	if (dyn_heap_record_spec(ls->s, &sp) != 0)
		return; /* no sync function in the process */
	ls->heap_req = dyn_live_add(ls->l, &sp, err, sizeof(err));
	free(sp.pt);
}

/* The heap objects used since the search began join /SyncObject/KIND by address (those in a
 * module's data are its variables: the executable's are there already, the C library's are
 * left out); new ones are a new generation, which refines true nodes. The runtime sends only
 * those it has not told of (protocol version 8: RESOURCES' "new only"). */
void lv_read_heap(struct lsrc *ls)
{
	struct dyn_heap_objs h;
	char err[256], path[96];
	size_t i, j;
	int added = 0;

	ls->heap_read_ns = mono_now_ns();
	if (ls->heap_req < 0 || ls->s->ended || dyn_heap_objects(ls->s, 1, &h, err, sizeof(err)) != 0)
		return;
	for (i = 0; i < h.n; i++) {
		const struct dyn_heap_obj *o = &h.v[i];

		if (o->in_module || !o->uses)
			continue;
		dyn_heap_path(o, path, sizeof(path));
		for (j = 0; j < ls->objs.n && strcmp(ls->objs.v[j].path, path); j++)
			;
		if (j < ls->objs.n)
			continue;
		ls->objs.v = xrealloc(ls->objs.v, (ls->objs.n + 1) * sizeof(*ls->objs.v));
		ls->objs.v[ls->objs.n++] = (struct dyn_resource){ o->kind, xstrdup(path), NULL,
								  (int64_t)o->addr };
		added = 1;
	}
	dyn_heap_objs_free(&h);
	if (added)
		ls->generation++;
}

/* Which calls, and which first arguments, a focus's SyncObject or Files part means. */
int lv_narrow_of(struct lsrc *ls, enum lm m, const struct cs_focus *f, struct narrow *nw)
{
	const char *so = f->part[H_SYNC], *fi = f->part[H_FILES];
	int sync = m == LM_SYNC || m == LM_SYNC_OPS, k;
	size_t i;

	memset(nw, 0, sizeof(*nw));
	nw->timed = sync ? sync_waits : io_calls;
	nw->more = sync ? sync_releases : NULL;
	if ((so && !sync) || (fi && sync) || (so && fi))
		return -1;
	if (so) {
		const char *kind = so + 12, *slash;

		if (strncmp(so, "/SyncObject/", 12))
			return -1;
		slash = strchr(kind, '/');
		k = kind_index(kind, slash ? (size_t)(slash - kind) : strlen(kind));
		if (k < 0)
			return -1;
		nw->on = 1;
		nw->timed = sync_kinds[k].waits;
		nw->more = sync_kinds[k].releases;
		for (i = 0; slash && i < ls->objs.n; i++)
			if (!strcmp(ls->objs.v[i].path, so))
				nw->val[nw->nval++] = ls->objs.v[i].value;
		return slash && !nw->nval ? -1 : 0;
	}
	if (fi) {
		nw->on = 1;
		nw->timed = io_fd_calls;
		for (i = 0; i < ls->files.n && nw->nval < 4; i++)
			if (!strcmp(ls->files.v[i].path, fi))
				nw->val[nw->nval++] = ls->files.v[i].value;
		return nw->nval ? 0 : -1; /* closed now: nothing to measure */
	}
	return 0;
}

uint32_t lv_sync_children(struct lsrc *ls, const char *part, char ***out)
{
	char name[300];
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < ls->objs.n; i++) {
		const char *kind = ls->objs.v[i].path + 12, *slash = strchr(kind, '/');

		if (!slash || kind_index(kind, (size_t)(slash - kind)) < 0)
			continue;
		if (!part) {
			snprintf(name, sizeof(name), "/SyncObject/%.*s", (int)(slash - kind), kind);
			lv_push_name(out, &n, name);
		} else if (!strncmp(ls->objs.v[i].path, part, strlen(part)) &&
			   ls->objs.v[i].path[strlen(part)] == '/') {
			lv_push_name(out, &n, ls->objs.v[i].path);
		}
	}
	return n;
}
