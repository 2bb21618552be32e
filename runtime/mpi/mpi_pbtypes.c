/* SPDX-License-Identifier: MIT */
/*
 * The piggyback's struct types (docs/mpi.md, "Piggybacking"): {2 × MPI_INT64_T at the slot,
 * count × dt at buf}, displacements relative to buf, committed once and kept in a table of
 * PB_SETS sets of PB_WAYS entries keyed by (dt, count, slot − buf). A program that sends or
 * receives the same buffer again reuses the committed type: a hit (mpi_pb_type, inline in
 * mpi_pbtypes.h) is a hash and at most PB_WAYS compares (no malloc, no lock, no MPI call); a miss
 * (here) builds and commits the type in the MPI library and frees the entry it replaces.
 *
 * Why a hit is the right type:
 * - the key determines the type: its type map is a function of dt, count and the displacement;
 * - the program's MPI_Type_free of dt drops every entry built on dt (mpi_pb_type_forget, from
 *   the MPI_Type_free wrapper), so a handle MPI gives out again for another type never meets a
 *   stale entry (Open MPI keeps dt alive while one of our types refers to it, so its handle could
 *   not come back before; other libraries need not);
 * - freeing a replaced type does not disturb an operation that still uses it: MPI completes
 *   pending and persistent operations with a freed type normally (MPI 4.0 §5.1.3);
 * - a miss replaces the least recently used way of its set, never the entry returned by the
 *   lookup just before: MPI_Sendrecv's send type survives the lookup of its receive type, which
 *   would otherwise free it before the call that uses it;
 * - the state is process-wide without atomics: below MPI_THREAD_MULTIPLE the program serializes
 *   its MPI calls, and under it there is no piggybacking (mpi_rt.h).
 */
#include "mpi_pbtypes.h"

struct pb_ent mpi_pb_table[PB_SETS][PB_WAYS];
uint64_t mpi_pb_clock;
struct mpi_pb_type_stats mpi_pb_type_stats;

static MPI_Datatype build(MPI_Datatype dt, int count, MPI_Aint disp)
{
	int len[2] = { 2, count };
	MPI_Aint at[2] = { disp, 0 };
	MPI_Datatype kinds[2] = { MPI_INT64_T, dt }, t;

	if (PMPI_Type_create_struct(2, len, at, kinds, &t) != MPI_SUCCESS)
		return MPI_DATATYPE_NULL;
	if (PMPI_Type_commit(&t) != MPI_SUCCESS) {
		PMPI_Type_free(&t);
		return MPI_DATATYPE_NULL;
	}
	return t;
}

/* The way a miss takes: an empty one, else the least recently used. */
static struct pb_ent *victim(struct pb_ent *set)
{
	struct pb_ent *v = &set[0];
	int i;

	for (i = 0; i < PB_WAYS; i++) {
		if (set[i].type == MPI_DATATYPE_NULL)
			return &set[i];
		if (set[i].used < v->used)
			v = &set[i];
	}
	return v;
}

/*
 * A miss (mpi_pb_type in mpi_pbtypes.h looked first): the type made and put in place of the
 * least recently used way of its set. The delay goes first in the type map: a message shorter
 * than the receive (fewer elements than count) still delivers it to the slot, and never lands in
 * the program's buffer.
 */
MPI_Datatype mpi_pb_type_miss(struct pb_ent *set, MPI_Datatype dt, int count, MPI_Aint disp)
{
	MPI_Datatype t = build(dt, count, disp);
	struct pb_ent *e;

	if (t == MPI_DATATYPE_NULL) {
		mpi_pb_type_stats.failed++;
		return t;
	}
	mpi_pb_type_stats.built++;
	e = victim(set);
	if (e->type != MPI_DATATYPE_NULL) {
		PMPI_Type_free(&e->type); /* MPI keeps it while an operation uses it */
		mpi_pb_type_stats.evicted++;
	}
	*e = (struct pb_ent){ .dt = dt, .type = t, .count = count, .disp = disp,
			      .used = mpi_pb_clock };
	return t;
}

/* MPI_Type_free of the program's type: its handle may come back for another type. */
void mpi_pb_type_forget(MPI_Datatype dt)
{
	struct pb_ent *e;
	uint32_t s;
	int i;

	for (s = 0; s < PB_SETS; s++)
		for (i = 0; i < PB_WAYS; i++) {
			e = &mpi_pb_table[s][i];
			if (e->type != MPI_DATATYPE_NULL && e->dt == dt) {
				PMPI_Type_free(&e->type);
				*e = (struct pb_ent){ .dt = MPI_DATATYPE_NULL,
						      .type = MPI_DATATYPE_NULL };
				mpi_pb_type_stats.dropped++;
			}
		}
}

/* Empty, the types freed (free 0: at start-up, nothing to free), the counts zeroed. */
void mpi_pb_types_reset(int free)
{
	uint32_t s;
	int i;

	for (s = 0; s < PB_SETS; s++)
		for (i = 0; i < PB_WAYS; i++) {
			if (free && mpi_pb_table[s][i].type != MPI_DATATYPE_NULL)
				PMPI_Type_free(&mpi_pb_table[s][i].type);
			mpi_pb_table[s][i] = (struct pb_ent){ .dt = MPI_DATATYPE_NULL,
						       .type = MPI_DATATYPE_NULL };
		}
	mpi_pb_clock = 0;
	mpi_pb_type_stats = (struct mpi_pb_type_stats){ 0 };
}
