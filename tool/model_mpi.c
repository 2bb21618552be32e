/* SPDX-License-Identifier: MIT */
/* The MPI part of a model (model_mpi.h). */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_mpi.h"
#include "profile_read.h"
#include "util.h"

const char *const mpi_routine_names[SPROF_MPI_ROUTINES] = { SPROF_MPI_NAMES };

static int cmp_peer(const void *a, const void *b)
{
	const struct sprof_mpi_peer *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	if (x->peer != y->peer)
		return x->peer < y->peer ? -1 : 1;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	return x->tag < y->tag ? -1 : x->tag > y->tag;
}

void model_mpi_merge(struct model *m, const struct sprof_file *f)
{
	struct model_mpi *mm;
	struct m_mpi_rank *r;
	const struct sprof_mpi_comp *c = f->mpi_comp;
	uint32_t i;

	if (!c)
		return;
	if (!m->mpi)
		m->mpi = xcalloc(1, sizeof(*m->mpi));
	mm = m->mpi;
	mm->ranks = xrealloc(mm->ranks, (mm->nranks + 1) * sizeof(*mm->ranks));
	r = &mm->ranks[mm->nranks++];
	memset(r, 0, sizeof(*r));
	r->pid = f->run.pid;
	r->comp = *c;
	for (i = 0; i < f->nmpi_calls; i++)
		r->calls[f->mpi_calls[i].routine] = f->mpi_calls[i];
	if (f->nmpi_peers) {
		r->peers = xmalloc(f->nmpi_peers * sizeof(*r->peers));
		memcpy(r->peers, f->mpi_peers, f->nmpi_peers * sizeof(*r->peers));
		r->npeers = f->nmpi_peers;
		qsort(r->peers, r->npeers, sizeof(*r->peers), cmp_peer);
	}
	r->t_m = (double)(c->fin_ns - c->init_ns);
	r->t_local = r->t_m - (double)(c->o_fin_ns - c->o_init_ns);
	r->t_par = c->flags & SPROF_MPI_PIGGYBACK ? r->t_m - (double)(c->x_fin_ns - c->x_init_ns)
						  : r->t_local;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct m_mpi_rank *x = a, *y = b;

	return x->comp.rank < y->comp.rank ? -1 : x->comp.rank > y->comp.rank;
}

void model_mpi_sort(struct model *m)
{
	if (m->mpi)
		qsort(m->mpi->ranks, m->mpi->nranks, sizeof(*m->mpi->ranks), cmp_rank);
}

uint32_t model_mpi_pid(const struct model *m, uint32_t rank)
{
	uint32_t i;

	for (i = 0; m->mpi && i < m->mpi->nranks; i++)
		if (m->mpi->ranks[i].comp.rank == rank)
			return m->mpi->ranks[i].pid;
	return 0;
}

void model_mpi_free(struct model *m)
{
	uint32_t i;

	if (!m->mpi)
		return;
	for (i = 0; i < m->mpi->nranks; i++)
		free(m->mpi->ranks[i].peers);
	free(m->mpi->ranks);
	free(m->mpi);
	m->mpi = NULL;
}
