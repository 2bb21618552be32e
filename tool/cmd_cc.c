/* SPDX-License-Identifier: MIT */
/*
 * sonde cc -- COMPILER ARGS...: run the compiler with sonde's instrumentation flags, like
 * `scorep gcc`. The result also runs without sonde: glibc provides empty hooks, and sonde.h
 * calls only weak references. With --patchable there are no hooks at all: every function
 * starts with a 5-byte NOP sled that `sonde run --dynamic` or `sonde watch` patch (one NOP
 * executed per call while off; docs/dynamic.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "util.h"

static const char *const cc_flags[] = {
	"-finstrument-functions",
	/* inline functions from system headers would be measured at every use */
	"-finstrument-functions-exclude-file-list=/usr/include",
	"-g",
};

static const char *const patchable_flags[] = {
	"-fpatchable-function-entry=5",
	"-g",
};

static void cc_usage(FILE *out)
{
	fprintf(out, "usage: sonde cc [--patchable] [--print-flags] -- COMPILER ARGS...\n"
		     "  adds: -finstrument-functions -g -I<sonde include>\n"
		     "  --patchable: -fpatchable-function-entry=5 -g instead of the hooks: functions\n"
		     "               that sonde run --dynamic patches on a NOP sled\n");
}

int cmd_cc(int argc, char **argv)
{
	static char inc[PATH_MAX + 2];
	const char *const *flags = cc_flags;
	size_t nflags = sizeof(cc_flags) / sizeof(cc_flags[0]), i, n = 0;
	int first = 1, print = 0;
	char **args;

	for (; first < argc && strcmp(argv[first], "--") != 0; first++) {
		if (!strcmp(argv[first], "--print-flags")) {
			print = 1;
		} else if (!strcmp(argv[first], "--patchable")) {
			flags = patchable_flags;
			nflags = sizeof(patchable_flags) / sizeof(patchable_flags[0]);
		} else if (!strcmp(argv[first], "--help")) {
			cc_usage(stdout);
			return 0;
		} else {
			error("cc: unknown option '%s'", argv[first]);
			return EXIT_USAGE;
		}
	}
	strcpy(inc, "-I");
	include_dir(inc + 2, sizeof(inc) - 2);
	if (print) {
		for (i = 0; i < nflags; i++)
			printf("%s ", flags[i]);
		printf("%s\n", inc);
		return 0;
	}
	if (first >= argc - 1) {
		cc_usage(stderr);
		return EXIT_USAGE;
	}
	args = xcalloc((size_t)argc + nflags + 2, sizeof(*args));
	args[n++] = argv[first + 1];
	for (i = 0; i < nflags; i++)
		args[n++] = (char *)(uintptr_t)flags[i];
	args[n++] = inc;
	for (i = (size_t)first + 2; i < (size_t)argc; i++)
		args[n++] = argv[i];
	execvp(args[0], args);
	error("cc: cannot run '%s': %s", args[0], strerror(errno));
	return 127;
}
