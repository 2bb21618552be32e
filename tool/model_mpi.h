/* SPDX-License-Identifier: MIT */
/*
 * The MPI part of a model (libsonde-mpi.so, docs/mpi.md): one entry per rank with its routines,
 * its point-to-point messages per peer, and its three times — measured, locally compensated and
 * parallel-compensated (MODELS §2.4) — between the end of MPI_Init and the start of MPI_Finalize.
 */
#ifndef SONDE_MODEL_MPI_H
#define SONDE_MODEL_MPI_H

#include <stdint.h>

#include "profile_mpi.h"

struct model;
struct sprof_file;
struct model_filter;

struct m_mpi_rank {
	uint32_t pid;
	struct sprof_mpi_comp comp;
	struct sprof_mpi_call calls[SPROF_MPI_ROUTINES]; /* calls == 0: not used */
	struct sprof_mpi_peer *peers;
	uint32_t npeers;
	double t_m;     /* fin - init: measured */
	double t_local; /* t_m - (o_fin - o_init) */
	double t_par;   /* t_m - (x_fin - x_init); t_local without piggybacking */
};

struct model_mpi {
	struct m_mpi_rank *ranks; /* sorted by rank once loaded (model_mpi_sort) */
	uint32_t nranks;
};

void model_mpi_merge(struct model *m, const struct sprof_file *f);
void model_mpi_sort(struct model *m);
void model_mpi_free(struct model *m);
/* The pid of rank r in the model, or 0. */
uint32_t model_mpi_pid(const struct model *m, uint32_t rank);
extern const char *const mpi_routine_names[SPROF_MPI_ROUTINES];

#endif
