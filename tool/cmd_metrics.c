/* SPDX-License-Identifier: MIT */
/*
 * sonde metrics [--file F.mdl] [--plan METRIC [--focus FOCUS] [--exe PROGRAM]]: the metric
 * library (docs/mdl.md) — each metric's units, fold and aggregation, what it instruments and
 * the constraints it accepts; --file validates a user's file read after the built-in one;
 * --plan shows the instrumentation a metric needs at a focus and its predicted cost.
 */
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "dyn/resources.h"
#include "mdl/cost.h"
#include "mdl/mdl.h"
#include "symbols.h"
#include "term.h"
#include "util.h"

struct metrics_opts {
	const char *file, *plan, *focus, *exe;
};

static void metrics_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde metrics [--file F.mdl] [--plan METRIC [--focus FOCUS] [--exe PROGRAM]]\n"
		"  (no option)      list the metrics: units, fold, aggregation, what each instruments\n"
		"  --file F.mdl     read F.mdl after the built-in library: check it, list it too\n"
		"  --plan METRIC    the instrumentation METRIC needs at FOCUS, and its predicted cost\n"
		"  --focus FOCUS    /Code (the default), /Code/MODULE, /Code/MODULE/PROCEDURE, with\n"
		"                   /Threads/N or /Process/PID, e.g. /Code/app.c/solve/Threads/2\n"
		"  --exe PROGRAM    take the procedures from PROGRAM's symbols (else: wildcards)\n"
		"The language: docs/mdl.md; the built-in library: share/sonde/metrics.mdl.\n");
}

/* The constraints a metric accepts: name (kind and paths), wrapped before 96 columns. */
static void print_constraints(FILE *out, const struct mdl_metric *m)
{
	static const char *const kinds[] = { "flag", "replace", "select" };
	char frag[512];
	uint32_t i, j;
	int col = 16, n;

	fputs("    constraints:", out);
	for (i = 0; i < m->ncons; i++) {
		n = snprintf(frag, sizeof(frag), " %s (%s", m->cons[i]->name, kinds[m->cons[i]->kind]);
		for (j = 0; j < m->cons[i]->npaths && n < (int)sizeof(frag); j++)
			n += snprintf(frag + n, sizeof(frag) - (size_t)n, "%s%s", j ? ", " : " ",
				      m->cons[i]->paths[j]);
		if (col + n > 96) {
			fputs("\n                ", out);
			col = 16;
		}
		col += fprintf(out, "%s)%s", frag, i + 1 < m->ncons ? "," : "");
	}
	fputs(m->ncons ? "\n" : " none (whole program only)\n", out);
}

static void print_metric(FILE *out, const struct mdl_metric *m, const char *builtin)
{
	fprintf(out, "%-14s %s", m->name, m->title);
	if (strcmp(m->loc.file, builtin))
		fprintf(out, "  [%s:%d]", m->loc.file, m->loc.line);
	fprintf(out, "\n    units %s, histogram folded by %s, threads and processes by %s\n",
		m->units ? m->units->text : "-", mdl_fold_name(m->fold), mdl_agg_name(m->agg));
	fputs("    ", out);
	mdl_describe(out, m);
	fputc('\n', out);
	print_constraints(out, m);
}

static void list_metrics(const struct mdl_lib *lib)
{
	FILE *out = term_fitted(stdout); /* lines wrapped to a terminal */
	uint32_t i;

	for (i = 0; i < lib->nmetrics; i++)
		print_metric(out, lib->metrics[i], lib->files[0]);
	term_fitted_close(out, stdout);
}

/* ---- a program's procedures, for --exe ---- */

struct prog_build {
	struct symtab *st;
	const char *path;
	struct mdl_proc *procs;
	uint32_t n;
};

static int add_proc(const char *name, uint64_t vaddr, void *arg)
{
	struct prog_build *b = arg;
	struct sym_info si;

	symtab__resolve(b->st, b->path, vaddr, &si);
	b->procs = xrealloc(b->procs, (b->n + 1) * sizeof(*b->procs));
	b->procs[b->n++] = (struct mdl_proc){ xstrdup(si.file), xstrdup(name), vaddr, 0 };
	return 0;
}

static void free_procs(struct prog_build *b)
{
	uint32_t i;

	for (i = 0; i < b->n; i++) {
		free((char *)(uintptr_t)b->procs[i].module);
		free((char *)(uintptr_t)b->procs[i].name);
	}
	free(b->procs);
}

/* ---- --plan ---- */

static void print_cost(const struct mdl_plan *p)
{
	struct cost_params c;
	struct cost_model *m;
	double ns;

	cost_defaults(&c);
	m = cost_model_new(&c);
	ns = cost_predict(m, p);
	printf("predicted cost: %.3g ns per second of run (%.3g %% of a CPU) with static "
	       "frequencies\n(%g/s per user procedure, %g/s per library one) and default costs "
	       "(sonde watch -v: those measured\nin the process); %s\n",
	       ns, ns / 1e7, c.freq_user, c.freq_library,
	       cost_admit(m, p, NULL) == COST_INSTALL ? "installed at once"
						       : "deferred (above 10 % of a CPU)");
	cost_model_free(m);
}

static int show_plan(const struct mdl_lib *lib, const struct metrics_opts *o)
{
	struct prog_build b = { .path = o->exe };
	struct mdl_program prog;
	struct mdl_plan *p;
	char err[512];
	int rc;

	if (o->exe) {
		b.st = symtab__new();
		rc = symtab__foreach(b.st, o->exe, add_proc, &b);
		if (rc < 0) {
			symtab__delete(b.st);
			return error("metrics: cannot read the symbols of %s", o->exe), 1;
		}
		prog = (struct mdl_program){ b.procs, b.n, NULL, NULL };
		if (o->focus && strstr(o->focus, "/SyncObject/")) { /* link-time addresses */
			prog.resolve = dyn_resource_values_elf;
			prog.resolve_arg = (void *)(uintptr_t)o->exe;
		}
	}
	p = mdl_plan(lib, o->plan, o->focus, o->exe ? &prog : NULL, err, sizeof(err));
	if (p) {
		mdl_plan_print(stdout, p);
		print_cost(p);
	} else {
		error("metrics: %s", err);
	}
	mdl_plan_free(p);
	free_procs(&b);
	if (b.st)
		symtab__delete(b.st);
	return p ? 0 : 1;
}

static int parse_args(int argc, char **argv, struct metrics_opts *o)
{
	int i, r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			metrics_usage(stdout);
			exit(0);
		}
		if ((r = opt_value(argc, argv, &i, "--file", &o->file)) ||
		    (r = opt_value(argc, argv, &i, "--plan", &o->plan)) ||
		    (r = opt_value(argc, argv, &i, "--focus", &o->focus)) ||
		    (r = opt_value(argc, argv, &i, "--exe", &o->exe))) {
			if (r < 0)
				return -1;
			continue;
		}
		return error("metrics: unknown argument '%s' (sonde metrics --help)", argv[i]);
	}
	if ((o->focus || o->exe) && !o->plan)
		return error("metrics: --focus and --exe go with --plan METRIC");
	return 0;
}

int cmd_metrics(int argc, char **argv)
{
	struct metrics_opts o = { NULL, NULL, NULL, NULL };
	struct mdl_lib *lib;
	char err[600];
	int rc = 0;

	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	lib = mdl_load_all(o.file, err, sizeof(err));
	if (!lib)
		return error("%s", err), 1;
	if (o.plan)
		rc = show_plan(lib, &o);
	else
		list_metrics(lib);
	if (o.file && !o.plan)
		printf("%s: valid\n", o.file);
	mdl_lib_free(lib);
	return rc;
}
