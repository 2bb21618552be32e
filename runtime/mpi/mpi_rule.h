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

/*
 * The sender's delay as the receive rule should see it. The seed's rule x_r' = min(x_r + w, x_s)
 * takes the message to arrive when the receive ends: all the seed's scenarios have the receiver
 * waiting for it. A message sent before the receive began (S < Rb: a master's queue of
 * requests) may have been waiting for it, and would then hand the receiver a smaller delay than
 * it had: without measurement the receive could not have ended before Rb - x_r anyway. The message
 * carries its approximated send time t_s = S - x_s on a clock common to the ranks, so the sender's
 * delay is raised by the time the message certainly had before the receive began:
 *     x_s' = x_s + max(0, Rb - S) = max(x_s, Rb - t_s)
 * (not by its time in flight during the wait, which the approximated run has as well; when it was
 * in flight at Rb, by at most its latency).
 */
static inline int64_t mpi_rule_sender(int64_t x_s, int64_t t_s, int64_t recv_begin)
{
	int64_t before = recv_begin - t_s;

	return before > x_s ? before : x_s;
}

/*
 * A non-blocking collective, at the Wait or Test that completed it (docs/mpi.md). Every member
 * handed on at its initiation its start s_j and approximated start s_j - x_j (CLOCK_REALTIME
 * ns); S and T are their maxima over the members this rank's completion depends on. The
 * completing call began at rb with delay x_r and waited w. Without measurement the collective
 * could not complete before T, nor the call begin before rb - x_r; what the call waited after
 * both the last start and its own begin (max(rb, S) on the measured clock) is the collective's
 * own time, kept. So the call would have ended at max(rb - x_r, T) + (end - max(rb, S)), and
 *     x' = max(rb, S) - max(rb - x_r, T),   at most x_r + w.
 * When every member waits from its start (a blocking collective: rb = s_i), x' = S - T, which
 * is mpi_rule_collective's min_i(x_i + w_i) - min_i(w_i).
 */
static inline int64_t mpi_rule_icoll(int64_t x_r, uint64_t w, int64_t rb, int64_t s_last,
				     int64_t t_last)
{
	int64_t a = rb > s_last ? rb : s_last, b = rb - x_r > t_last ? rb - x_r : t_last;
	int64_t x = a - b;

	return x > x_r + (int64_t)w ? x_r + (int64_t)w : x;
}

#endif
