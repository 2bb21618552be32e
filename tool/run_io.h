/* SPDX-License-Identifier: MIT */
/* The options of `sonde run` for I/O, OS and hardware counters (run_io.c). */
#ifndef SONDE_RUN_IO_H
#define SONDE_RUN_IO_H

struct run_io {
	int io, os;
	const char *os_interval; /* ms */
	const char *hw;          /* event names, comma-separated */
};

#define RUN_IO_USAGE                                                                               \
	"  --io                   measure I/O calls per file: time, calls, bytes (and per phase)\n" \
	"  --os                   page faults, context switches, CPU vs wall time per thread and\n" \
	"                         per interval\n"                                                    \
	"  --os-interval MS       the interval of --os (default 100 ms; 0: per thread only);\n"    \
	"                         implies --os\n"                                                    \
	"  --hw EVENTS            count EVENTS (e.g. cycles,instructions,cache-misses; software:\n"   \
	"                         page-faults,task-clock,context-switches) with perf_event\n"

/* One option at argv[*i]: 1 consumed, 0 not one of these, -1 error (said). */
int run_io_option(struct run_io *o, int argc, char **argv, int *i);
/* Values and combinations; 0 or -1 (said). */
int run_io_check(const struct run_io *o, int trace);
/* The runtime's environment; says once when the machine cannot count the --hw events. */
void run_io_env(const struct run_io *o);

#endif
