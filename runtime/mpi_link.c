/* SPDX-License-Identifier: MIT */
/* libsonde.so's side of the MPI wrappers (mpi_link.h): the clock, the overhead, the writer. */
#include "rt.h"
#include "mpi_link.h"

static void (*mpi_write)(struct writer *w);

void sonde_rt_mpi_attach(void (*write)(struct writer *w))
{
	mpi_write = write;
	atomic_store(&rt_used, 1);
}

/* Called by the writer after its own records (writer.c). */
void rt_mpi_write(struct writer *w)
{
	if (mpi_write)
		mpi_write(w);
}

struct sprof_buf *sonde_rt_mpi_record(struct writer *w, uint32_t type, uint32_t size)
{
	return rt_writer_record(w, type, size);
}

uint64_t sonde_rt_mpi_now(void)
{
	return rt_now();
}

double sonde_rt_mpi_ticks_per_ns(void)
{
	return rt_ticks_per_ns();
}

int sonde_rt_mpi_tsc(void)
{
	return rt_clock_tsc;
}

uint64_t sonde_rt_mpi_ns(uint64_t ticks)
{
	return rt_ticks_to_ns(ticks);
}

void sonde_rt_mpi_log(const char *msg)
{
	rt_log(msg);
}

uint64_t sonde_rt_mpi_start(void)
{
	return rt_start_ticks;
}

double sonde_rt_mpi_overhead_ns(void)
{
	const struct rt_thread *t = rt_self;
	double o;

	if (!t)
		return 0;
	/* --insitu: the thread's probe pairs and unmeasured calls at their in-situ prices once
	 * they are known (insitu.c) */
	o = (double)t->probes * (rt_insitu_on ? rt_insitu_price(t) : rt_calib.o_full) +
	    (double)t->skips * (rt_insitu_on ? rt_insitu_skip_price(t) : rt_calib.o_skip);
	/* called twice per piggybacked message: no division unless there is something to divide */
	return t->calib_ticks ? o + (double)t->calib_ticks / rt_ticks_per_ns() : o;
}

int sonde_rt_mpi_tracing(void)
{
	return rt_trace_on;
}
