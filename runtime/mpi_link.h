/* SPDX-License-Identifier: MIT */
/*
 * What libsonde.so offers libsonde-mpi.so (the PMPI wrappers, runtime/mpi/): both are preloaded
 * by `sonde run` into an MPI program; the wrappers use libsonde.so's clock, the calling thread's
 * measurement overhead, and its profile writer. Exported from libsonde.so (docs/mpi.md).
 */
#ifndef SONDE_RT_MPI_LINK_H
#define SONDE_RT_MPI_LINK_H

#include <stdint.h>

struct writer;
struct sprof_buf;

#define SONDE_MPI_EXPORT __attribute__((visibility("default")))

/* The MPI library is there: its records go into the profile (write is called by the writer,
 * after the other records), and the process is worth a profile even without probes. */
SONDE_MPI_EXPORT void sonde_rt_mpi_attach(void (*write)(struct writer *w));
/* A record's header and room for its payload of size bytes (at most 4096). */
SONDE_MPI_EXPORT struct sprof_buf *sonde_rt_mpi_record(struct writer *w, uint32_t type,
						       uint32_t size);
/* The timestamp clock (ticks), ticks per ns, ticks to ns with the final ratio, the measurement's
 * start (ticks). */
SONDE_MPI_EXPORT uint64_t sonde_rt_mpi_now(void);
SONDE_MPI_EXPORT double sonde_rt_mpi_ticks_per_ns(void);
SONDE_MPI_EXPORT int sonde_rt_mpi_tsc(void);
SONDE_MPI_EXPORT uint64_t sonde_rt_mpi_ns(uint64_t ticks);
SONDE_MPI_EXPORT uint64_t sonde_rt_mpi_start(void);
/* The calling thread's measurement overhead so far, ns: probe pairs and unmeasured pairs at their
 * calibrated costs, and its in-run calibrations (MODELS §2.3; 0 before its first probe). */
SONDE_MPI_EXPORT double sonde_rt_mpi_overhead_ns(void);
/* A line into RUNDIR/runtime.log (never into the program's output). */
SONDE_MPI_EXPORT void sonde_rt_mpi_log(const char *msg);
/* 1 when the run records a trace (sonde run --trace) rather than a profile. */
SONDE_MPI_EXPORT int sonde_rt_mpi_tracing(void);

#endif
