/* SPDX-License-Identifier: MIT */
/*
 * `sonde run --io`, `--os`, `--os-interval MS`, `--hw EVENTS`: checked here, passed to the
 * runtime in its environment (SONDE_IO, SONDE_OS, SONDE_OS_INTERVAL, SONDE_HW). For --hw the
 * tool tries each event on itself first, so that a machine without counters is said once on
 * the terminal (the runtime, inside the program, never writes to its streams); the run goes on
 * and the profile's HW records carry the reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf_events.h"
#include "run_io.h"
#include "util.h"

int run_io_option(struct run_io *o, int argc, char **argv, int *i)
{
	int r;

	if (!strcmp(argv[*i], "--io"))
		return o->io = 1;
	if (!strcmp(argv[*i], "--os"))
		return o->os = 1;
	if ((r = opt_value(argc, argv, i, "--os-interval", &o->os_interval)))
		return r < 0 ? r : (o->os = 1);
	return opt_value(argc, argv, i, "--hw", &o->hw);
}

static void known_events(char *buf, size_t cap)
{
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < PERF_EVENT_NAMES && n + 1 < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", perf_event_names[i].name);
}

static int check_events(const char *list)
{
	const char *p = list;
	char known[512];
	int count = 0;

	while (1) {
		size_t n = strcspn(p, ",");

		if (!n || !perf_event_find(p, n)) {
			known_events(known, sizeof(known));
			if (!n)
				return error("run: --hw wants event names separated by commas, not '%s'",
					     list);
			return error("run: --hw: unknown event '%.*s' (known: %s)", (int)n, p, known);
		}
		if (++count > PERF_MAX_EVENTS)
			return error("run: --hw: at most %d events", PERF_MAX_EVENTS);
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

int run_io_check(const struct run_io *o, int trace)
{
	unsigned long long ms;

	if (o->os_interval && (parse_u64(o->os_interval, &ms) || ms > 60000))
		return error("run: --os-interval wants milliseconds from 0 to 60000, not '%s'",
			     o->os_interval);
	if (trace && (o->io || o->os || o->hw))
		return error("run: --io, --os and --hw go into the profile, not into a trace "
			     "(drop --trace)");
	return o->hw ? check_events(o->hw) : 0;
}

/* Try each event here; the first that cannot be counted is said, once. */
static void probe_events(const char *list)
{
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");
		const struct perf_event_name *e = perf_event_find(p, n);
		int fd = e ? perf_event_counter(e) : -1;

		if (e && fd < 0) {
			int err = errno;

			warning("hardware counters are not available on this machine (%s: %s; "
				"perf_event_open: %s); the run goes on without them", e->name,
				perf_event_why(err), strerror(err));
			return;
		}
		if (fd >= 0)
			close(fd);
		p += n + (p[n] == ',');
	}
}

void run_io_env(const struct run_io *o)
{
	if (o->io)
		setenv("SONDE_IO", "1", 1);
	if (o->os)
		setenv("SONDE_OS", "1", 1);
	if (o->os_interval)
		setenv("SONDE_OS_INTERVAL", o->os_interval, 1);
	if (o->hw) {
		setenv("SONDE_HW", o->hw, 1);
		probe_events(o->hw);
	}
}
