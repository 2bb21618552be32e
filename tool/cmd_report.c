/* SPDX-License-Identifier: MIT */
/* sonde report [DIR] [OPTIONS]: what a run measured, with the probes' cost removed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "html/html.h"
#include "model_io.h"
#include "model_mpi.h"
#include "report.h"
#include "util.h"

struct cmd_opts {
	const char *dir, *diff, *out;
	int json, csv, files, folded, html, no_consult, no_timeline;
	const char *hist[8]; /* --hist METRIC[@FOCUS] */
	uint32_t nhist;
	struct report_opts r;
	struct model_filter flt;
	int rank; /* --rank N: one MPI rank; -1 all */
};

static void report_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde report [DIR] [OPTIONS]       (DIR defaults to ./sonde-out)\n"
		"  --sort excl|incl|calls   order of the flat table (default excl)\n"
		"  --flat | --tree          only the flat table, or only the call paths\n"
		"  --depth N                levels of call paths to show\n"
		"  --limit N                rows of the flat table (default 40 in text)\n"
		"  --pid P, --thread N      only process P, only thread N (its index)\n"
		"  --rank N                 only MPI rank N (a run of an MPI program)\n"
		"  --mpi                    only the MPI sections: ranks, routines, peers\n"
		"  --json | --csv           machine-readable output (docs/report-json.md)\n"
		"  --sync                   only the synchronization objects and compensation\n"
		"                           (runs of 'sonde run --sync'; with --csv: the objects)\n"
		"  --files                  with --csv: the files of sonde run --io instead of functions\n"
		"  --diff OTHER             compare with another run directory\n"
		"  --folded[=MODE]          call paths as folded stacks, one 'main;f;g WEIGHT' line\n"
		"                           each, for FlameGraph or speedscope. MODE: sampled\n"
		"                           (samples; the default for a --sample run), time\n"
		"                           (measured: compensated exclusive us; the default\n"
		"                           otherwise), calls (measured calls)\n"
		"  --html -o FILE           one self-contained page: tables, call-path graphs, time\n"
		"                           histograms, trace timeline, Search History Graph\n"
		"                           (docs/report-html.md; --limit N: rows, default 200)\n"
		"  --no-consult             with --html: no post-mortem search of the traces\n"
		"  --no-timeline            with --html: no trace timeline\n"
		"  --hist METRIC[@FOCUS]    with --html: a time histogram of that metric from the\n"
		"                           traces (repeatable, 8 at most; default: cpu_time,\n"
		"                           active_threads, sync_wait_time of the whole program)\n");
}

static int parse_int(const char *name, const char *v, int min, int *out)
{
	unsigned long long n;

	if (parse_u64(v, &n) || n > 1000000000ull || (int)n < min)
		return error("report: %s wants a number >= %d, not '%s'", name, min, v);
	*out = (int)n;
	return 0;
}

static int parse_sort(const char *v, enum report_sort *s)
{
	if (!strcmp(v, "excl"))
		*s = SORT_EXCL;
	else if (!strcmp(v, "incl"))
		*s = SORT_INCL;
	else if (!strcmp(v, "calls"))
		*s = SORT_CALLS;
	else
		return error("report: --sort wants excl, incl or calls, not '%s'", v);
	return 0;
}

/* --folded: the samples when the run has them, else the measured time; or as chosen. */
enum { FOLDED_NONE, FOLDED_AUTO, FOLDED_SAMPLED, FOLDED_TIME, FOLDED_CALLS };

static int parse_folded(const char *v, int *out)
{
	if (!strcmp(v, "sampled"))
		*out = FOLDED_SAMPLED;
	else if (!strcmp(v, "time"))
		*out = FOLDED_TIME;
	else if (!strcmp(v, "calls"))
		*out = FOLDED_CALLS;
	else
		return error("report: --folded= wants sampled, time or calls, not '%s'", v);
	return 1;
}

static int folded(int mode, const struct model *m)
{
	if (mode == FOLDED_AUTO)
		mode = m->samples ? FOLDED_SAMPLED : FOLDED_TIME;
	if (mode == FOLDED_SAMPLED)
		return report_folded(stdout, m);
	return report_folded_measured(stdout, m, mode == FOLDED_CALLS);
}

/* One option at argv[*i]; 1 consumed, -1 error. */
static int parse_one(struct cmd_opts *o, int argc, char **argv, int *i)
{
	const char *v;
	int r, pid = 0;

	if (!strcmp(argv[*i], "--json"))
		return o->json = 1;
	if (!strcmp(argv[*i], "--csv"))
		return o->csv = 1;
	if (!strcmp(argv[*i], "--files"))
		return o->files = 1;
	if (!strcmp(argv[*i], "--folded"))
		return o->folded = FOLDED_AUTO, 1;
	if (!strncmp(argv[*i], "--folded=", 9))
		return parse_folded(argv[*i] + 9, &o->folded);
	if (!strcmp(argv[*i], "--html"))
		return o->html = 1;
	if (!strcmp(argv[*i], "--no-consult"))
		return o->no_consult = 1;
	if (!strcmp(argv[*i], "--no-timeline"))
		return o->no_timeline = 1;
	if ((r = opt_value(argc, argv, i, "--hist", &v))) {
		if (r > 0 && o->nhist == sizeof(o->hist) / sizeof(o->hist[0]))
			return error("report: --hist: %zu at most", sizeof(o->hist) / sizeof(o->hist[0]));
		if (r > 0)
			o->hist[o->nhist++] = v;
		return r;
	}
	if ((r = opt_value(argc, argv, i, "-o", &o->out)) ||
	    (r = opt_value(argc, argv, i, "--output", &o->out)))
		return r;
	if (!strcmp(argv[*i], "--flat"))
		return o->r.tree = 0, 1;
	if (!strcmp(argv[*i], "--tree"))
		return o->r.flat = 0, 1;
	if (!strcmp(argv[*i], "--sync"))
		return o->r.sync_only = 1;
	if (!strcmp(argv[*i], "--mpi"))
		return o->r.mpi_only = 1;
	if ((r = opt_value(argc, argv, i, "--rank", &v)))
		return r < 0 ? r : parse_int("--rank", v, 0, &o->rank) ?: 1;
	if ((r = opt_value(argc, argv, i, "--diff", &o->diff)))
		return r;
	if ((r = opt_value(argc, argv, i, "--sort", &v)))
		return r < 0 ? r : parse_sort(v, &o->r.sort) ?: 1;
	if ((r = opt_value(argc, argv, i, "--depth", &v)))
		return r < 0 ? r : parse_int("--depth", v, 1, &o->r.depth) ?: 1;
	if ((r = opt_value(argc, argv, i, "--limit", &v)))
		return r < 0 ? r : parse_int("--limit", v, 1, &o->r.limit) ?: 1;
	if ((r = opt_value(argc, argv, i, "--thread", &v)))
		return r < 0 ? r : parse_int("--thread", v, 0, &o->flt.thread) ?: 1;
	if ((r = opt_value(argc, argv, i, "--pid", &v))) {
		if (r < 0 || parse_int("--pid", v, 1, &pid))
			return -1;
		o->flt.pid = (uint32_t)pid;
		return 1;
	}
	return error("report: unknown option '%s' (try 'sonde report --help')", argv[*i]);
}

static int parse_opts(struct cmd_opts *o, int argc, char **argv)
{
	int i;

	*o = (struct cmd_opts){ .dir = "sonde-out", .r = { SORT_EXCL, 0, 0, 1, 1 },
				.flt = { 0, -1 }, .rank = -1 };
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			report_usage(stdout);
			exit(0);
		}
		if (argv[i][0] != '-') {
			o->dir = argv[i];
			continue;
		}
		if (parse_one(o, argc, argv, &i) < 0)
			return -1;
	}
	if (o->json + o->csv + !!o->folded + o->html > 1)
		return error("report: choose one of --json, --csv, --folded and --html");
	if (o->out && !o->html)
		return error("report: -o goes with --html (the other reports go to stdout)");
	if ((o->no_consult || o->no_timeline || o->nhist) && !o->html)
		return error("report: --no-consult, --no-timeline and --hist go with --html");
	if (o->html && o->diff)
		return error("report: --html shows one run, not --diff");
	if (o->html && !o->out && isatty(STDOUT_FILENO))
		return error("report: --html writes a page: give -o FILE.html (or redirect stdout)");
	if (o->files && !o->csv)
		return error("report: --files goes with --csv (the text and JSON reports list files)");
	if (!o->json && !o->csv && !o->html && !o->r.limit)
		o->r.limit = 40;
	return 0;
}

static int diff(const struct cmd_opts *o, const struct model *a)
{
	struct model b;

	if (model_load(&b, o->diff, &o->flt))
		return 1;
	report_diff(stdout, a, &b, o->json ? DIFF_JSON : o->csv ? DIFF_CSV : DIFF_TEXT,
		    o->r.limit);
	model_free(&b);
	return 0;
}

/* --rank N: the run read again, only the process that was rank N. */
static int select_rank(struct cmd_opts *o, struct model *m)
{
	uint32_t pid = model_mpi_pid(m, (uint32_t)o->rank);

	model_free(m);
	if (!pid)
		return error("report: %s: no MPI rank %d here", o->dir, o->rank);
	o->flt.pid = pid;
	return model_load(m, o->dir, &o->flt) ? -1 : 0;
}

/* The page to -o FILE (removed again when writing fails) or stdout. */
static int html(const struct cmd_opts *o, const struct model *m)
{
	struct html_opts ho = { .limit = o->r.limit ? o->r.limit : HTML_DEFAULT_ROWS,
				.consult = !o->no_consult, .timeline = !o->no_timeline,
				.flt = o->flt, .hist = o->hist, .nhist = o->nhist };
	FILE *out;
	int r;

	if (html_hist_check(m, &ho) != 0) /* before a page is begun */
		return EXIT_USAGE;
	out = o->out ? fopen(o->out, "w") : stdout;
	if (!out)
		return error("report: %s: %s", o->out, strerror(errno)), 1;
	r = report_html(out, m, &ho);
	if (o->out && (fclose(out) != 0 || r != 0)) {
		unlink(o->out);
		return error("report: cannot write %s", o->out), 1;
	}
	return r ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	struct cmd_opts o;
	struct model m;
	int ret = 0;

	if (parse_opts(&o, argc, argv))
		return EXIT_USAGE;
	unsetenv("DEBUGINFOD_URLS"); /* symbols come from the files at hand, never the network */
	if (model_load(&m, o.dir, &o.flt))
		return 1;
	if (o.rank >= 0 && select_rank(&o, &m))
		return 1;
	if (o.folded)
		ret = folded(o.folded, &m) ? 1 : 0;
	else if (o.html)
		ret = html(&o, &m);
	else if (o.diff)
		ret = diff(&o, &m);
	else if (o.json)
		report_json(stdout, &m, &o.r);
	else if (o.csv && o.r.sync_only)
		report_sync_csv(stdout, &m);
	else if (o.csv && o.files)
		report_io_csv(stdout, &m);
	else if (o.csv)
		report_csv(stdout, &m, &o.r);
	else
		report_text(stdout, &m, &o.r);
	model_free(&m);
	if (fflush(stdout) != 0)
		return error("report: cannot write the output"), 1;
	return ret;
}
