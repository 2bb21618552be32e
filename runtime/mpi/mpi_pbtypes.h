/* SPDX-License-Identifier: MIT */
/*
 * The piggyback's committed struct types, cached (mpi_pbtypes.c). Needs only <mpi.h>: the unit
 * test (tests/unit/test_mpi_pbtypes.c) builds it against fake PMPI_Type_ routines.
 */
#ifndef SONDE_MPI_PBTYPES_H
#define SONDE_MPI_PBTYPES_H

#include <mpi.h>
#include <stdint.h>

#ifndef mlikely
#define mlikely(x) __builtin_expect(!!(x), 1)
#endif

#define PB_SET_BITS 5
#define PB_SETS (1u << PB_SET_BITS)
#define PB_WAYS 4

/* Since start-up (the calibration's left out); runtime.log gets them at MPI_Finalize. */
struct mpi_pb_type_stats {
	uint64_t hits;    /* lookups that found their type */
	uint64_t built;   /* types made and committed */
	uint64_t evicted; /* entries replaced by a miss (their types freed) */
	uint64_t dropped; /* entries dropped with the program's type (MPI_Type_free) */
	uint64_t failed;  /* the library refused to make one: the message went without piggyback */
};
extern struct mpi_pb_type_stats mpi_pb_type_stats;

struct pb_ent {
	MPI_Datatype dt, type; /* type MPI_DATATYPE_NULL: empty */
	MPI_Aint disp;
	int count;
	/* the lookup clock at its last use: the least is replaced. 64 bits: a 32-bit clock wraps
	 * after 2^32 lookups, and an entry left alone for 2^31 of them would then look newer than
	 * the one just looked up, which a miss might replace (MPI_Sendrecv's send type) */
	uint64_t used;
};
extern struct pb_ent mpi_pb_table[PB_SETS][PB_WAYS];
extern uint64_t mpi_pb_clock;

/* The set of a key (the tests pick colliding keys with it). */
static inline uint32_t mpi_pb_type_set(MPI_Datatype dt, int count, MPI_Aint disp)
{
	uint64_t k = (uint64_t)(uintptr_t)dt * 31 + (uint64_t)(uint32_t)count * 131 +
		     (uint64_t)disp;

	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> (64 - PB_SET_BITS));
}

MPI_Datatype mpi_pb_type_miss(struct pb_ent *set, MPI_Datatype dt, int count, MPI_Aint disp);

/* The struct type {2 int64 at slot, count dt at buf} (cached), or MPI_DATATYPE_NULL. A hit is
 * inline, without a call: it is on every piggybacked message's path. */
static inline MPI_Datatype mpi_pb_type(const void *buf, int count, MPI_Datatype dt,
				       const void *slot)
{
	MPI_Aint disp = (MPI_Aint)((const char *)slot - (const char *)buf);
	struct pb_ent *set = mpi_pb_table[mpi_pb_type_set(dt, count, disp)], *e;
	int i;

	mpi_pb_clock++;
	for (i = 0; i < PB_WAYS; i++) {
		e = &set[i];
		if (mlikely(e->dt == dt && e->count == count && e->disp == disp &&
			    e->type != MPI_DATATYPE_NULL)) {
			e->used = mpi_pb_clock;
			mpi_pb_type_stats.hits++;
			return e->type;
		}
	}
	return mpi_pb_type_miss(set, dt, count, disp);
}

/* The program frees dt: the entries built on it go. */
void mpi_pb_type_forget(MPI_Datatype dt);
/* Empty the table (free: MPI_Type_free the types in it) and zero the counts. */
void mpi_pb_types_reset(int free);

#endif
