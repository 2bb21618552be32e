/* SPDX-License-Identifier: MIT */
/* sonde: the command-line tool. Dispatches to one command per file (cmds.h). */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "util.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "cc", cmd_cc, "compile with instrumentation: sonde cc -- gcc -O2 -g -o app app.c" },
	{ "run", cmd_run, "run a program with the runtime: sonde run [-o DIR] -- ./app args" },
	{ "report", cmd_report, "tables and call-path tree of a run: sonde report [DIR]" },
	{ "calibrate", cmd_calibrate, "clock and probe costs on this machine" },
	{ "trace", cmd_trace, "a trace as text: sonde trace dump [--limit N] TRACE|DIR" },
	{ "export", cmd_export, "traces for other tools: sonde export --chrome|--otf2 [DIR]" },
	{ "analyze", cmd_analyze, "perturbation analysis of a trace: sonde analyze [TRACE|DIR]" },
	{ "attach", cmd_attach, "load the runtime into a running process: sonde attach PID" },
	{ "metrics", cmd_metrics, "the metric library, or a metric's plan: sonde metrics [--plan M]" },
	{ "watch", cmd_watch, "instrument a running process for a metric: sonde watch PID --metric M" },
	{ "consult", cmd_consult, "search a trace for bottlenecks (why, where, when): sonde consult [DIR]" },
};

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "usage: sonde COMMAND [OPTIONS]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'sonde COMMAND --help' tells more; docs/ has the manual.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("sonde %s\n", SONDE_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	error("unknown command '%s' (try 'sonde --help')", argv[1]);
	return EXIT_USAGE;
}
