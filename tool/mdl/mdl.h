/* SPDX-License-Identifier: MIT */
/*
 * The Metric Description Language (docs/mdl.md, after seed 003 appendix B): a library of
 * metrics and constraints read from .mdl files, and the plan that turns a (metric, focus) pair
 * into the instrumentation requests of a dynamic-instrumentation session (docs/dynamic.md) and
 * says how to combine the values the runtime streams back.
 */
#ifndef SONDE_MDL_H
#define SONDE_MDL_H

#include <stdint.h>
#include <stdio.h>

/*
 * What the runtime offers (docs/dynamic.md): points, primitives, one predicate per primitive.
 * Primitives, predicate operands and operators are numbered as the control protocol numbers
 * them (format/protocol.h: sproto_prim, sproto_pred, sproto_op).
 */
enum mdl_point { MDL_ENTRY, MDL_EXIT, MDL_CALL, MDL_POINT_COUNT };
enum mdl_prim {
	MDL_SET, MDL_ADD, MDL_SUB,              /* a counter */
	MDL_START_WALL, MDL_STOP_WALL,          /* a wall timer (nesting: outermost counts) */
	MDL_START_CPU, MDL_STOP_CPU,            /* a process (thread CPU) timer */
	MDL_PRIM_COUNT
};
enum mdl_opd { MDL_OPD_NONE, MDL_OPD_COUNTER, MDL_OPD_ARG, MDL_OPD_RETVAL };
enum mdl_relop { MDL_EQ, MDL_NE, MDL_LT, MDL_LE, MDL_GT, MDL_GE };

/* Time histogram buckets hold the increase (sum) or the average rate per second (avg). */
enum mdl_fold { MDL_FOLD_SUM, MDL_FOLD_AVG };
/* Combining threads and processes: over the sources' values for one interval. */
enum mdl_agg { MDL_AGG_SUM, MDL_AGG_AVG, MDL_AGG_MIN, MDL_AGG_MAX };
enum mdl_var_kind { MDL_VAR_COUNTER, MDL_VAR_WALL_TIMER, MDL_VAR_CPU_TIMER, MDL_VAR_TIMER };

struct mdl_loc {
	const char *file; /* owned by the library */
	int line, col;
};

/* ---- the library, as parsed ---- */

struct mdl_units {
	char *name, *text;
	int64_t divide; /* shown values are divided by this (ns -> s: 1000000000); 1 by default */
	struct mdl_loc loc;
};

struct mdl_list {
	char *name;
	char **items; /* procedure names */
	uint32_t n;
	struct mdl_loc loc;
};

/* A set of procedures, where a request's point is taken. */
enum mdl_set_kind {
	MDL_SET_CONSTRAINT, /* $constraint: the constrained procedure, or a module's procedures */
	MDL_SET_PROCEDURES, /* $procedures: every procedure of the program's own modules */
	MDL_SET_NAME,       /* "malloc": the procedures of that name */
	MDL_SET_LIST,       /* a list's procedures */
	MDL_SET_LOOPVAR     /* the procedure a foreach variable holds */
};
struct mdl_set {
	enum mdl_set_kind kind;
	char *name; /* NAME: the procedure; LIST, LOOPVAR: the identifier */
};

struct mdl_cond {
	enum mdl_opd opd; /* NONE: no predicate */
	char *counter;    /* COUNTER: a constraint's name, the metric's name or "$metric" */
	int arg;          /* ARG: 0..5 */
	enum mdl_relop op;
	int64_t k;
	int object;       /* compared with $object (the focus's sync object or file), not k */
};

struct mdl_call {
	enum mdl_prim prim;
	char *var;     /* counter or timer: a constraint's name, the metric's name or "$metric" */
	int64_t value; /* SET, ADD, SUB */
	int from_return; /* ADD at an exit: addCounter(c, $return), the return value when > 0 */
	struct mdl_cond cond;
	struct mdl_loc loc;
};

enum mdl_stmt_kind { MDL_STMT_BLOCK, MDL_STMT_FOREACH, MDL_STMT_REQUEST };
struct mdl_stmt {
	enum mdl_stmt_kind kind;
	struct mdl_loc loc;
	struct mdl_stmt *body; /* BLOCK: its statements; FOREACH: one statement */
	uint32_t nbody;
	char *var;             /* FOREACH: the loop variable */
	struct mdl_set set;    /* FOREACH: what it walks; REQUEST: where the point is */
	enum mdl_point point;  /* REQUEST */
	char *callee;          /* REQUEST at MDL_CALL: only call sites to this procedure */
	int prepend;           /* REQUEST: before the point's other actions */
	int constrained;       /* REQUEST: guarded by the focus's flag constraint */
	struct mdl_call *calls;
	uint32_t ncalls;
};

enum mdl_cons_kind {
	MDL_CONS_FLAG,    /* a counter positive while the resource is active guards the base */
	MDL_CONS_REPLACE, /* instrumentation used instead of the base (on $metric) */
	MDL_CONS_SELECT   /* no instrumentation: only the streams of the thread or process */
};
struct mdl_constraint {
	char *name;
	struct mdl_loc loc;
	char **paths; /* patterns like "/Code/x/x" with "*" for any one component */
	uint32_t npaths;
	enum mdl_cons_kind kind;
	enum mdl_var_kind var; /* REPLACE: COUNTER or TIMER; FLAG: COUNTER */
	struct mdl_stmt body;  /* a block; empty for SELECT */
};

enum mdl_base_kind { MDL_BASE_COUNTER, MDL_BASE_TIMER, MDL_BASE_EXTERNAL };
struct mdl_metric {
	char *name, *title;
	struct mdl_loc loc;
	const struct mdl_units *units;
	enum mdl_fold fold;
	enum mdl_agg agg;
	const struct mdl_constraint **cons;
	uint32_t ncons;
	enum mdl_base_kind base;
	enum mdl_var_kind var; /* the value: counter, wall or CPU timer (TIMER: external base) */
	char *external;        /* EXTERNAL: the reading's name ("cpu_time", "observed_cost") */
	struct mdl_stmt body;  /* a block; empty for EXTERNAL */
};

struct mdl_lib {
	struct mdl_units **units;
	struct mdl_list **lists;
	struct mdl_constraint **cons;
	struct mdl_metric **metrics;
	uint32_t nunits, nlists, ncons, nmetrics;
	char **files;
	uint32_t nfiles;
	char err[512]; /* the last load error: "file:line:column: message" */
};

struct mdl_lib *mdl_lib_new(void);
void mdl_lib_free(struct mdl_lib *lib);
/* Add a file's definitions: 0, or -1 with lib->err set and the library as it was before. */
int mdl_load_file(struct mdl_lib *lib, const char *path);
int mdl_load_string(struct mdl_lib *lib, const char *name, const char *text);
/* The built-in library (share/sonde/metrics.mdl): 0 and the path, or -1. */
int mdl_builtin_path(char *out, size_t cap);
/* A new library holding the built-in metrics, then the file 'user' if not NULL; NULL with
 * the error in err (file:line:column: message). */
struct mdl_lib *mdl_load_all(const char *user, char *err, size_t cap);

const struct mdl_metric *mdl_find_metric(const struct mdl_lib *lib, const char *name);
const struct mdl_constraint *mdl_find_constraint(const struct mdl_lib *lib, const char *name);
const char *mdl_fold_name(enum mdl_fold f);
const char *mdl_agg_name(enum mdl_agg a);
const char *mdl_point_name(enum mdl_point p);
const char *mdl_prim_name(enum mdl_prim p);
const char *mdl_relop_name(enum mdl_relop op);
/* One line saying what a metric instruments, e.g. "counter: add at entry of $procedures". */
void mdl_describe(FILE *out, const struct mdl_metric *m);

/* ---- plans: (metric, focus) -> instrumentation requests ---- */

/* The program's procedures, from its symbols; optional (without it, sets stay wildcards). */
struct mdl_proc {
	const char *module; /* source file of the executable's functions, or a library's soname */
	const char *name;
	uint64_t addr;
	int library; /* 1: a shared library's (lower default frequency, not in $procedures) */
};
/*
 * What a /SyncObject or /Files resource of the focus stands for in the process: a sync
 * object's address, a file's open descriptors (tool/dyn/resources.h). path: "/SyncObject/
 * mutex/hot_lock" or "/Files/tmp/x.dat". Up to cap values into vals, their number into *n
 * (0 is fine: a file not open now); 0, or -1 with a one-line reason in err.
 */
typedef int (*mdl_resolve_fn)(void *arg, const char *path, int64_t *vals, uint32_t cap,
			      uint32_t *n, char *err, size_t errcap);

struct mdl_program {
	const struct mdl_proc *procs;
	uint32_t n;
	mdl_resolve_fn resolve; /* NULL: $object stays a placeholder (the plan is only shown) */
	void *resolve_arg;
};

struct mdl_pred {
	enum mdl_opd opd; /* NONE: always */
	uint32_t counter; /* COUNTER: index in plan->vars */
	int arg;
	enum mdl_relop op;
	int64_t k;
	int object; /* k is one of the focus's objects (plan->objects), or MDL_NO_OBJECT */
};
/* $object of a file that is not open, or unknown: no argument is ever this value. */
#define MDL_NO_OBJECT INT64_MIN
struct mdl_action {
	enum mdl_prim prim;
	uint32_t var; /* index in plan->vars */
	int64_t value;
	int from_return; /* MDL_ADD of the return value (when > 0) instead of value */
	struct mdl_pred pred;
};
/* One point and the actions at it, in execution order. */
struct mdl_request {
	char *module; /* NULL: any module; "*": every module (wildcard, no program given) */
	char *name;   /* "*": every procedure of the module */
	uint64_t addr; /* 0: unknown, resolve by name */
	int library;
	uint32_t proc; /* index + 1 in the program's procedures (mdl_program); 0: a wildcard */
	enum mdl_point point;
	char *callee; /* MDL_CALL: only calls to this procedure; NULL: every call site */
	struct mdl_action *act;
	uint32_t nact;
};

enum mdl_role { MDL_ROLE_VALUE, MDL_ROLE_FLAG };
struct mdl_var {
	const char *name; /* the metric's or the constraint's */
	enum mdl_var_kind kind;
	enum mdl_role role;
};

/*
 * How to read the result: the metric's value is vars[0] (a counter, or a timer in ns) of each
 * thread of each process, restricted to 'thread' (a thread id, as the runtime lists threads)
 * and 'pid' when they are not -1, or the reading named 'external' when that is set (no
 * requests then); the streams are combined with 'agg' (histogram.h: struct agg) and kept in a
 * time histogram folded with 'fold'. With the control protocol: one metric term for vars[0]
 * (counter, wall or CPU timer, tid = thread), or for "cpu_time" the process's CPU time.
 */
struct mdl_plan {
	const struct mdl_metric *metric;
	char *focus;
	struct mdl_var *vars;
	uint32_t nvars;
	struct mdl_request *req;
	uint32_t nreq;
	const char *external;
	long thread, pid;
	enum mdl_fold fold;
	enum mdl_agg agg;
	uint32_t missing; /* named procedures the program lacks: their requests were left out */
	/*
	 * A /SyncObject or /Files focus: the resource's path and the values $object took (an
	 * action testing $object is repeated for each; none: once, with MDL_NO_OBJECT). A file's
	 * descriptors change while the process runs: plan again with the new values
	 * (tool/dyn/resources.h) and set the points' actions anew.
	 */
	enum mdl_res { MDL_RES_NONE, MDL_RES_SYNC, MDL_RES_FILE } resource;
	char *object;      /* "/SyncObject/mutex/hot_lock", "/Files/tmp/x.dat"; NULL: none */
	int64_t *objects;  /* addresses or descriptors */
	uint32_t nobjects;
	int resolved;      /* the values came from the process (else placeholders) */
	int any_object;    /* /SyncObject/KIND: every object of the kind (the $object tests are
			    * left out: the kind's functions take no other) */
};
#define MDL_MAX_OBJECTS 8 /* values of one focus resource (a file open that many times) */

/*
 * Focus: resource paths, e.g. "/Code", "/Code/app.c/solve", "/Code/libm.so/Threads/2" or
 * "/Code/app.c,/Process/1234"; "" or "/" is the whole program. "/SyncObject/KIND/NAME" (KIND:
 * mutex, rwlock, cond, barrier, sem; NAME: a data symbol, "locks[3]" or an address "0x..."; no
 * NAME: every object of the kind)
 * and "/Files/PATH" (PATH absolute: the rest up to a comma) bind $object. NULL with a one-line message in
 * err when the metric is unknown, the focus malformed or the metric cannot be constrained to it.
 */
struct mdl_plan *mdl_plan(const struct mdl_lib *lib, const char *metric, const char *focus,
			  const struct mdl_program *prog, char *err, size_t cap);
void mdl_plan_free(struct mdl_plan *p);
void mdl_plan_print(FILE *out, const struct mdl_plan *p);

#endif
