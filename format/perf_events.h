/* SPDX-License-Identifier: MIT */
/*
 * The event names of `sonde run --hw` and their perf_event_open type and config; shared by the
 * tool (which checks the names and says once whether the machine can count them) and the
 * runtime (which counts them). Software events count everywhere: they stand in for hardware
 * ones in tests on machines without a performance monitoring unit.
 */
#ifndef SONDE_FORMAT_PERF_EVENTS_H
#define SONDE_FORMAT_PERF_EVENTS_H

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct perf_event_name {
	const char *name;
	uint32_t type;
	uint64_t config;
};

static const struct perf_event_name perf_event_names[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
};

#define PERF_EVENT_NAMES (sizeof(perf_event_names) / sizeof(perf_event_names[0]))
#define PERF_MAX_EVENTS 8

static inline const struct perf_event_name *perf_event_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < PERF_EVENT_NAMES; i++)
		if (strlen(perf_event_names[i].name) == len &&
		    memcmp(perf_event_names[i].name, name, len) == 0)
			return &perf_event_names[i];
	return NULL;
}

/*
 * Open a counter of the calling thread and the threads it creates later (inherit). Where the
 * kernel refuses counting its own side (perf_event_paranoid), user space only. -1 with errno.
 */
static inline int perf_event_counter(const struct perf_event_name *e)
{
	struct perf_event_attr a;
	int fd, k;

	for (k = 0; k < 2; k++) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = e->type;
		a.config = e->config;
		a.inherit = 1;
		a.exclude_kernel = (unsigned)k;
		a.exclude_hv = 1;
		a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0 || (errno != EACCES && errno != EPERM))
			return fd;
	}
	return -1;
}

/* Why a counter cannot be had, from perf_event_open's errno. */
static inline const char *perf_event_why(int err)
{
	switch (err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return "the processor's performance monitoring unit is not exposed to this "
		       "system, as in most virtual machines";
	case EACCES:
	case EPERM:
		return "not permitted (see /proc/sys/kernel/perf_event_paranoid)";
	case ENOSYS:
		return "this kernel has no perf_event_open";
	case EMFILE:
		return "no file descriptor left";
	default:
		return "perf_event_open refused it";
	}
}

#endif
