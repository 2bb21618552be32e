/* SPDX-License-Identifier: MIT */
/*
 * The collective rule of MPI parallel compensation, alone so that unit tests can check it on
 * synthetic timelines (tests/unit/test_mpi.c). The point-to-point rule is sync_rule_wait
 * (runtime/sync_rule.h). All values in ns.
 */
#ifndef SONDE_MPI_RULE_H
#define SONDE_MPI_RULE_H

#include <stdint.h>

/*
 * A collective that completes when the last rank arrives (Barrier, Allreduce, Allgather,
 * Alltoall; Scan over the ranks up to this one): rank i arrived at a_i, left at the common end
 * E = max a + c (c: the collective's own time), so it waited w_i = E - a_i, and its delay was
 * x_i. Without measurement the last approximated arrival is max(a_i - x_i), so every rank leaves
 *     x' = E - (max(a_i - x_i) + c) = min_i(x_i + w_i) - min_i(w_i)
 * earlier. Given the two minima over the ranks (one reduction), this rank's new delay, at most
 * x_r + w_r (a rank never leaves later than it did, nor gains more than it waited).
 */
static inline int64_t mpi_rule_collective(int64_t min_xw, int64_t min_w, int64_t x_r,
					  uint64_t w_r)
{
	int64_t x_new = min_xw - min_w;

	return x_new > x_r + (int64_t)w_r ? x_r + (int64_t)w_r : x_new;
}

#endif
