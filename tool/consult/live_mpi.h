/* SPDX-License-Identifier: MIT */
/*
 * The live search of an MPI program's ranks together (docs/consult.md, "MPI programs live"):
 * one source over the live sources of the ranks' processes (live_source.h), each attached with
 * a session of its own, with the Process hierarchy (/Process/rankN) as the where axis of the
 * ranks and the cross-rank metrics of the MPI hypotheses made from the ranks' readings.
 */
#ifndef SONDE_CONSULT_LIVE_MPI_H
#define SONDE_CONSULT_LIVE_MPI_H

#include "live_source.h"

/* Over n live sources (taken: freed with it), of world ranks rank[0..n-1]. */
struct cs_source *live_mpi_new(struct cs_source **ranks, const int32_t *rank, uint32_t n);
void live_mpi_free(struct cs_source *src);
/* Whether src is such a source (live_source_info and live_source_call_rate sum its ranks'). */
int live_mpi_is(const struct cs_source *src);
void live_mpi_info(struct cs_source *src, struct live_source_info *out);
/* Rank index i's own figures (what its runtime sent: where the bytes went); -1: no such rank. */
int live_mpi_rank_info(struct cs_source *src, uint32_t i, struct live_source_info *out);
double live_mpi_call_rate(struct cs_source *src, const char *module, const char *proc);

#endif
