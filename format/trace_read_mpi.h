/* SPDX-License-Identifier: MIT */
/* The MPI records of the trace reader and writer: internal to trace_read.c (trace_read_mpi.c). */
#ifndef SONDE_FORMAT_TRACE_READ_MPI_H
#define SONDE_FORMAT_TRACE_READ_MPI_H

#include "trace_read.h"

#define STRC_MPI_TYPES (1u << STRC_MPI_SEND | 1u << STRC_MPI_RECV | 1u << STRC_MPI_COLL)

/* Keep the payload of the MPI event e (record at q, its length checked): e->arg becomes its
 * index in f->mpi. -1 when out of memory. */
int strc_mpi_event(struct strc_file *f, struct strc_event *e, const uint8_t *q);
/* A DEF_COMM record's payload (len bytes at p). -1 with a reason in err. */
int strc_def_comm(struct strc_file *f, const uint8_t *p, size_t len, char *err, size_t errlen);
/* After the streams are read: the communicators sorted by id. */
void strc_mpi_finish(struct strc_file *f);
/* An MPI event against its communicator: 0, or -1 with why ("names communicator 3, ..."). */
int strc_mpi_check(const struct strc_file *f, const struct strc_event *e, char *why,
		   size_t whylen);
/* The payload words of an MPI event for the writer (into w[4]); their number. */
unsigned strc_mpi_words(const struct strc_file *f, const struct strc_event *e, uint64_t *w);
void strc_mpi_free(struct strc_file *f);

#endif
