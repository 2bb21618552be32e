/* SPDX-License-Identifier: MIT */
/*
 * A live instrumentation session on a running process (docs/dynamic.md, `sonde watch`): a
 * (metric, focus) of the metric library is planned (tool/mdl) against the procedures of the
 * executable and of its loaded shared libraries (/proc/PID/maps, ELF symbols; not the dynamic
 * loader's nor the runtime's); the runtime is injected (tool/inject) or found waiting before
 * main (a program started held, SONDE_DYNAMIC_HOLD=1); the planned entries and call sites are
 * patched with the world stopped (dyn.h: trampolines next to each module), their points given
 * the plan's actions and the metric enabled over the control
 * protocol (client.h); samples fill a time histogram. At the end: DETACH (the runtime clears
 * every point), then the patches come out with the world stopped again; the trampolines and
 * libsonde.so stay mapped, inert.
 *
 * Runtime resources: each counter of the plan is a thread counter (per thread, summed over the
 * threads when sampled, or one thread's for /Threads/N), so a flag constraint means "active in
 * this thread"; timers are timers. Each patched function also has an execution count (its own
 * thread counter: the metric's counting itself when its only action is to add to the metric,
 * else one more action), read for the observed cost.
 */
#ifndef SONDE_DYN_SESSION_H
#define SONDE_DYN_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../inject/session.h"
#include "../mdl/cost.h"
#include "../mdl/histogram.h"
#include "../mdl/mdl.h"
#include "callees.h"
#include "client.h"
#include "costs.h"
#include "catchup.h"
#include "dyn.h"

/* A procedure of the program, beside its struct mdl_proc. */
struct dyn_sproc {
	uint32_t mod;  /* index in dyn_session.mods */
	uint64_t size; /* bytes, from its symbol */
	int ifunc;     /* an IFUNC resolver: calls never run it */
};

#define DYN_SITE_REQS 8
/* What a point (index in the dyn_set) stands for: a procedure and the plan's requests there. */
struct dyn_site {
	uint32_t proc;                 /* index in dyn_session.procs */
	uint32_t nreq;
	uint32_t req[DYN_SITE_REQS];   /* indexes in plan->req */
};

/* One patched point: point id = its index in the dyn_set. */
struct dyn_spoint {
	uint32_t func;              /* index in set.f */
	struct sproto_point_set ps; /* the actions sent */
	uint32_t count_tc;          /* thread counter counting its executions, */
	int64_t count_k;            /* by this step */
	int own;                    /* 1: that counter is the metric's value (no extra action) */
	uint32_t count_metric;      /* metric id reading it */
	const struct mdl_request *req[MDL_POINT_COUNT]; /* the plan's requests here (a call
							 * site: the first that matched) */
};

struct dyn_session_opts {
	const char *runtime;  /* absolute path of libsonde.so (attaching) */
	const char *ctl_dir;  /* NULL: ctl_default_dir() */
	int launched;         /* the runtime holds the process before main: no injection, RESUME
			       * once instrumented */
	uint64_t bucket_ns;   /* sampling bucket; 0: 100 ms */
	unsigned connect_ms;  /* launched: how long the control socket may take to appear */
	double max_cost;      /* predicted fraction of a CPU above which the plan is deferred (not
			       * installed); 0: the cost model's defer_at (0.10); < 0: no limit */
	const struct sproto_costs *costs; /* measured by the same runtime in another process of
					   * this machine (an MPI rank): used, COSTS not asked */
};

struct dyn_session {
	pid_t pid;
	char exe[4096], comm[64];
	struct dyn_session_opts o;
	char ctl_dir[4096];
	/* what to plan (a launched program is planned once it is held before main) */
	const struct mdl_lib *lib;
	const char *metric, *focus;
	/* the plan, against the procedures of the loaded modules */
	struct target_module *mods;
	int nmods;
	struct mdl_proc *procs;
	struct dyn_sproc *pinfo;
	uint32_t nprocs;
	struct callees *callees;
	struct mdl_plan *plan;
	/* the process */
	struct ctl_client c;
	int connected, ended;
	struct dyn_set set;
	struct dyn_site *site; /* beside set.f */
	struct dyn_spoint *pt;
	uint32_t npt, nrefused, nmissing; /* points; requests refused or not found */
	uint32_t nnocall;                 /* call requests that found no call of their callee */
	char refused[256];                /* the first refusal: "NAME: why" */
	char nocall[256];                 /* the first: "PROC calls no CALLEE" */
	uint32_t nvalue;                  /* metric ids 0..nvalue-1 sum to the value */
	uint32_t nmetrics;
	/* samples */
	int64_t *base, *cur; /* per metric id: value at enable, latest */
	uint8_t *seen;
	int64_t value;       /* the metric's increase since enabled */
	uint64_t t_start, t_last, lost, bucket_ns, nsamples;
	uint32_t owed; /* BUCKETs sent and not answered yet (dyn_session_bucket) */
	uint64_t asked_ns; /* the width the last BUCKET asked for (0: none, buckets periodic) */
	int last_seen;       /* the runtime's sample at the process's end came (SPROTO_S_LAST) */
	struct hist *h;
	/* costs and times */
	struct sproto_costs costs; /* what the runtime measured (flags 0: the defaults are used) */
	struct cost_params cp;
	struct cost_model *cost;
	double predicted_ns; /* ns per second, static frequencies, the execution counters too */
	int deferred;        /* the plan was over the limit: nothing was installed */
	int threads;
	double attach_pause_ms, attach_ms, detach_pause_ms, detach_ms;
	double hammer_pause_ms; /* summed over the hammer's rounds */
	uint64_t t_open;
	uint64_t t_resumed; /* a launched program without a plan let go (RESUME), 0: not */
	/* a /Files focus: its descriptors, read again every DYN_REFRESH_NS (dyn_session_refresh) */
	uint64_t t_refresh;
	struct dyn_catchup_stats catchup; /* calls already running when the points were set */
	uint32_t refocused; /* times the points' predicates were set to new descriptors */
	/* a session without a plan (metric NULL) whose requests another layer makes (live.h):
	 * it reads the samples, and removes its own patches when the session ends */
	/* requests held (dyn_session_hold): sent as one BATCH (protocol version 8), one answer */
	int holding;
	uint8_t *batch;      /* SPROTO_MAX_MESSAGE bytes: the BATCH being built */
	struct sproto_buf bb;
	uint8_t *one;        /* the last request held: sent alone when it is the only one */
	size_t one_len;
	void (*on_sample)(void *arg, const struct sproto_sample *sm);
	int (*remove)(void *arg, struct target *t, char *err, size_t n);
	void *cb_arg;
};

#define DYN_REFRESH_NS 100000000ull /* 100 ms */

/*
 * Plan metric at focus against the modules loaded in process pid (/proc/PID/maps and their
 * symbols; nothing is done to the process), or, when exe is not NULL, a program about to be
 * started (absolute, as the loader will name it; the caller sets s->pid before attaching): then
 * only the metric and the focus are checked now, and the plan is made once the program is held
 * before main with its libraries loaded. lib, metric and focus must outlive the session. 0, or
 * -1 with a one-line reason (unknown metric, bad focus, nothing the patcher can reach...).
 * metric NULL: no plan; the session only connects (the procedures are read, a held program is
 * let go) and its owner makes its requests (live.h).
 */
int dyn_session_plan(struct dyn_session *s, pid_t pid, const char *exe, const struct mdl_lib *lib,
		     const char *metric, const char *focus, char *err, size_t n);
/* Attach (or connect to a held process), patch, set the points, enable the metric. On failure
 * the process is left as it was (err says why). */
int dyn_session_attach(struct dyn_session *s, const struct dyn_session_opts *o, char *err,
		       size_t n);
/* Send a request that is answered OK (samples meanwhile go to on_sample). 0, or -1 with err.
 * While the session holds (below), a request a BATCH may hold is kept instead: 0. */
int dyn_session_send(struct dyn_session *s, const void *msg, size_t len, char *err, size_t n);
/* From now on, POINT_SET, POINT_CLEAR, METRIC_ENABLE and METRIC_DISABLE are kept and go
 * together as one BATCH (protocol version 8: one answer for all) at dyn_session_flush, or
 * before any other request. */
void dyn_session_hold(struct dyn_session *s);
/* Send the requests kept, as one BATCH (alone when there is one), and wait for the answer. 0,
 * or -1 with err (the first refused, those before it done). */
int dyn_session_flush(struct dyn_session *s, char *err, size_t n);
/* The requests held sent as a quiet BATCH (protocol version 10): no OK waited for (none
 * comes); a refusal comes as an ERROR before the answer to the next request (a BUCKET's
 * BUCKET_REPLY), where dyn_session_poll reports it. 0, or -1 with err. */
int dyn_session_flush_quiet(struct dyn_session *s, char *err, size_t n);
/* Send a request whose answer is a reply of type want (decoded into m: its views point into the
 * connection's buffer until the next receive). 0, or -1 with err (an ERROR among them). */
int dyn_session_request(struct dyn_session *s, const void *msg, size_t len, uint16_t want,
			struct sproto_msg *m, char *err, size_t n);
/* Ask that the bucket in progress end width_ns after its start (BUCKET, protocol version 7):
 * sent, not waited for; its BUCKET_REPLY comes as a sample (s->owed counts those to come). 0,
 * or -1 with err. */
int dyn_session_bucket(struct dyn_session *s, uint64_t width_ns, char *err, size_t n);
/* Receive samples for up to ms. 0; 1 when the process ended (or closed the connection); -1
 * with err, an ERROR among them (the runtime refused a BUCKET). */
int dyn_session_poll(struct dyn_session *s, unsigned ms, char *err, size_t n);
/*
 * A /Files focus: the file's descriptors in the process now (/proc/PID/fd); when they are not
 * those of the plan, plan again with them and set every point's actions anew (POINT_SET: one
 * store each in the runtime). dyn_session_poll calls it every DYN_REFRESH_NS: a descriptor
 * opened (or closed, or reused) since is followed within that time; the calls made before are
 * not seen. 0: nothing changed (or no file in the focus), 1: followed, -1 with err.
 */
int dyn_session_refresh(struct dyn_session *s, char *err, size_t n);
/* Remove and reinstall every patch, rounds times, the process running 1 ms in between. */
int dyn_session_hammer(struct dyn_session *s, unsigned rounds, char *err, size_t n);
/* A last sample, DETACH, the patches removed; nothing when the process ended. */
int dyn_session_finish(struct dyn_session *s, char *err, size_t n);
void dyn_session_free(struct dyn_session *s);

/* Executions counted at point i since enabled. */
uint64_t dyn_session_count(const struct dyn_session *s, uint32_t i);
/* Observed cost in ns (the counts × the calibrated costs, the execution counters included),
 * over the time watched in ns. */
double dyn_session_observed_ns(struct dyn_session *s, double *elapsed_ns);

#endif
