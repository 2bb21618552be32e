/* SPDX-License-Identifier: MIT */
/*
 * MPI_Init, MPI_Init_thread, MPI_Finalize: the tables, the wrappers' calibration, the link to
 * libsonde.so's writer and, for `sonde run --trace`, to its message events (mpi_trace.h).
 * Options (set by `sonde run`): SONDE_MPI_COMP=1 parallel compensation (piggybacking).
 */
#include "mpi_rt.h"

#include <dlfcn.h>
#include <stdlib.h>

struct mpi_state mpi;
MPI_Datatype mpi_last_dt = MPI_DATATYPE_NULL;
int mpi_last_size;


#define CALIB_CALLS 256
#define CALIB_ROUNDS 7

/* Time of CALIB_CALLS sends to MPI_PROC_NULL, wrapped (through our core) or not; ns per call. */
static double send_batch(int wrapped)
{
	static const int x = 0;
	uint64_t t0 = mpi_now();
	int i;

	for (i = 0; i < CALIB_CALLS; i++)
		if (wrapped)
			mpi_send_core(R_CALIB, &x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_SELF);
		else
			PMPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_SELF);
	return (double)mpi_ns(mpi_now() - t0) / CALIB_CALLS;
}

/* The least of several rounds: a wrapper's cost beyond the call it wraps. */
static double wrapper_cost(void)
{
	double best = -1, d;
	int i;

	for (i = 0; i < CALIB_ROUNDS; i++) {
		d = send_batch(1) - send_batch(0);
		if (best < 0 || d < best)
			best = d;
	}
	return best > 0 ? best : 0;
}

/*
 * In vitro, at MPI_Init: the wrapper's own cost without and with piggybacking. The calibration's
 * calls count nowhere (R_CALIB), and the piggyback counter is put back.
 */
static void calibrate(void)
{
	uint64_t calls = mpi.calls, pb = mpi.pb_calls;
	int comp = mpi.comp;

	mpi.comp = 0;
	mpi.o_call_ns = wrapper_cost();
	if (comp) {
		mpi.comp = 1;
		mpi.o_pb_ns = wrapper_cost() - mpi.o_call_ns;
		if (mpi.o_pb_ns < 0)
			mpi.o_pb_ns = 0;
	}
	mpi.calls = calls;
	mpi.pb_calls = pb;
	mpi.stat[R_CALIB] = (struct mpi_stat){ 0 };
	mpi_pb_types_reset(1); /* the program's types only, and their counts */
}

static void link_trace(void)
{
	if (!sonde_rt_mpi_tracing())
		return;
	/* all or none: the events name communicators that DEF_COMM defined */
	mpi.tr_comm = (uint32_t (*)(int, const int, const int *))dlsym(RTLD_DEFAULT,
								       "rt_mpi_trace_comm");
	mpi.tr_send = (void (*)(int, int, uint32_t, uint64_t))dlsym(RTLD_DEFAULT,
								    "rt_mpi_trace_send");
	mpi.tr_recv = (void (*)(int, int, uint32_t, uint64_t, uint64_t))dlsym(RTLD_DEFAULT,
									      "rt_mpi_trace_recv");
	mpi.tr_coll = (void (*)(int, uint32_t, int, uint64_t, uint64_t, uint64_t))dlsym(
		RTLD_DEFAULT, "rt_mpi_trace_coll");
	if (!mpi.tr_comm || !mpi.tr_send || !mpi.tr_recv || !mpi.tr_coll)
		mpi.tr_comm = NULL, mpi.tr_send = NULL, mpi.tr_recv = NULL, mpi.tr_coll = NULL;
}

/* After PMPI_Init(_thread) succeeded. */
static void start(int rid, uint64_t t0, int provided)
{
	const char *v = getenv("SONDE_MPI_COMP");

	mpi.tsc = sonde_rt_mpi_tsc();
	mpi.ticks_per_ns = sonde_rt_mpi_ticks_per_ns();
	if (!(mpi.ticks_per_ns > 0))
		mpi.ticks_per_ns = 1;
	mpi.ns_per_tick = 1 / mpi.ticks_per_ns;
	mpi.thread_level = provided;
	mpi.multiple = provided == MPI_THREAD_MULTIPLE;
	PMPI_Comm_rank(MPI_COMM_WORLD, &mpi.rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &mpi.size);
	mpi_pb_types_reset(0);
	if (!mpi.multiple)
		link_trace(); /* before the tables: MPI_COMM_WORLD's DEF_COMM comes first */
	if (mpi_tables_init() != 0 || mpi_req_init() != 0)
		return; /* out of memory: the program runs unmeasured */
	mpi.comp = v && *v == '1' && !mpi.multiple;
	mpi_clock_base();
	mpi.on = 1;
	calibrate();
	sonde_rt_mpi_attach(mpi_write);
	mpi.init_ticks = mpi_now();
	mpi_count(rid, t0, mpi.init_ticks, 0, 0);
	mpi.o_init_ns = mpi_overhead_ns();
	mpi.x_init_ns = mpi.comp ? mpi_delay() : mpi.o_init_ns;
}

MPI_EXPORT int MPI_Init(int *argc, char ***argv)
{
	uint64_t t0 = sonde_rt_mpi_now();
	int ret = PMPI_Init(argc, argv), provided = MPI_THREAD_SINGLE;

	if (ret == MPI_SUCCESS) {
		PMPI_Query_thread(&provided);
		start(SPROF_MPI_INIT, t0, provided);
	}
	return ret;
}

MPI_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	uint64_t t0 = sonde_rt_mpi_now();
	int ret = PMPI_Init_thread(argc, argv, required, provided);

	if (ret == MPI_SUCCESS)
		start(SPROF_MPI_INIT_THREAD, t0, *provided);
	return ret;
}

/* s, then v in decimal (libsonde's rt_utoa is hidden in libsonde.so: this library links only
 * to its sonde_rt_mpi_ exports) */
static char *put(char *p, const char *s, uint64_t v)
{
	char d[24];
	int n = 0;

	while (*s)
		*p++ = *s++;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*p++ = d[--n];
	return p;
}

/* The piggyback types' table over the run (mpi_pbtypes.c), into runtime.log: a diagnostic
 * (and what tests/integration/t_mpi.py checks the table's behaviour by). */
static void log_types(void)
{
	const struct mpi_pb_type_stats *s = &mpi_pb_type_stats;
	char line[256], *p = line;

	p = put(p, "mpi: piggyback types: built ", s->built);
	p = put(p, ", reused ", s->hits);
	p = put(p, ", evicted ", s->evicted);
	p = put(p, ", dropped ", s->dropped);
	p = put(p, ", failed ", s->failed);
	*p = 0;
	sonde_rt_mpi_log(line);
}

/* The non-blocking collectives' rules (mpi_icoll.c), when there were any: how many came late,
 * how often a delay was read (handed on, or the start of a rule) before a late one, and the
 * slots still out of the pool at the end (a leak, in a program that completed its requests). */
static void log_icoll(void)
{
	char line[256], *p = line;

	if (!mpi.icoll_rules)
		return;
	p = put(p, "mpi: non-blocking collective rules: ", mpi.icoll_rules);
	p = put(p, ", late ", mpi.icoll_late);
	p = put(p, ", delays read before a late one ", mpi.icoll_stale);
	p = put(p, "; piggyback slots out ", mpi_slots_out());
	*p = 0;
	sonde_rt_mpi_log(line);
}

MPI_EXPORT int MPI_Finalize(void)
{
	uint64_t t0;
	int ret;

	if (mpi.on) {
		if (mpi_icoll_pending && !mpi.multiple) /* every member waits for its own: no stall */
			mpi_icoll_poll(1);
		mpi.fin_ticks = mpi_now();
		mpi.o_fin_ns = mpi_overhead_ns();
		mpi.x_fin_ns = mpi.comp ? mpi_delay() : mpi.o_fin_ns;
		mpi.finalized = 1;
		if (mpi.comp) {
			log_types();
			log_icoll();
		}
	}
	t0 = mpi_now();
	ret = PMPI_Finalize();
	if (mpi.on) {
		mpi_count(SPROF_MPI_FINALIZE, t0, mpi_now(), 0, 0);
		mpi.on = 0;
	}
	return ret;
}

/* Handles that MPI may give out again for something else: forget what we know of them. */
MPI_EXPORT int MPI_Comm_free(MPI_Comm *comm)
{
	if (mpi.on && comm && !mpi.multiple)
		mpi_comm_forget(*comm);
	return PMPI_Comm_free(comm);
}

MPI_EXPORT int MPI_Type_free(MPI_Datatype *dt)
{
	if (mpi.on && dt && !mpi.multiple) {
		mpi_pb_type_forget(*dt);
		if (*dt == mpi_last_dt)
			mpi_last_dt = MPI_DATATYPE_NULL;
	}
	return PMPI_Type_free(dt);
}
