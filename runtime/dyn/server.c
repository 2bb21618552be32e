/* SPDX-License-Identifier: MIT */
/*
 * The control server: a thread of the runtime (every signal blocked, never measured) serving
 * one client at a time on a Unix socket, CTL_DIR/ctl.PID, in a private directory. Requests are
 * answered in order (OK, ERROR or a reply); SAMPLE messages go out every bucket in between.
 * docs/protocol.md has the protocol.
 *
 * The directory is $XDG_RUNTIME_DIR/sonde or /tmp/sonde-UID unless the tool names one; it is
 * made 0700 and refused when it exists with another owner or mode. A client must be of the
 * same user, or root (SO_PEERCRED).
 */
#include "dyn.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SWEEP_NS 1000000000ull    /* ended threads' records are found this often */
#define SEND_TIMEOUT_S 10         /* a client that reads nothing for this long is dropped */
#define INBUF (SPROTO_MAX_MESSAGE + 65536)
/* while a BUCKET is owed, a phase marker is looked for this often (it ends the bucket) */
#define PHASE_LOOK_NS 10000000ull
#define FINAL_WAIT_NS 500000000ull /* how long an ending process waits for its last sample */

/* Which file an fd of ours is: a forked child closes the parent's fds only if still ours. */
struct fd_id {
	dev_t dev;
	ino_t ino;
};

struct server {
	int lfd, cfd;
	int efd;                   /* eventfd: an ending process wakes the thread */
	struct fd_id lfd_id, cfd_id, efd_id;
	int at_start;
	int hello;                 /* the client said HELLO */
	int short_out;             /* our HELLO_REPLY went: short frames from now (version 9) */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint8_t *in, *out;         /* INBUF, SPROTO_MAX_MESSAGE */
	size_t inlen;
	uint64_t bucket_ns, bucket_start, next_bucket, next_sweep;
	uint64_t sent_end;         /* the end of the last SAMPLE sent to this client (0: none) */
	int on_request;            /* buckets end only when a BUCKET asks (version 7) */
	int owed;                  /* a BUCKET waits for its BUCKET_REPLY: requests after it wait */
	uint64_t asked;            /* the width that BUCKET asked for */
	int64_t phases_at;         /* the phase markers run when it came (one more ends it) */
	int detach;
	pid_t pid; /* of the process that opened the socket (not a forked child) */
};

static struct server srv = { .lfd = -1, .cfd = -1, .efd = -1 };
static struct sproto_costs costs; /* measured when the server starts (calib_dyn.c) */
static _Atomic int running;
/* The process is ending (exit, a signal): 1 a last sample is asked for, 2 sent (or none due). */
static _Atomic int final_state;
/*
 * The program waits in the runtime's start-up until the tool lets it go. Sticky, and set by the
 * server only: the tool's RESUME may come before the start-up thread begins to wait (it can be
 * descheduled between starting the server and waiting), and must not be lost then.
 */
static _Atomic int released;

int dyn_server_running(void)
{
	return atomic_load(&running);
}

/* ---- the directory and the socket ---- */

static int default_dir(char *out, size_t cap)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	char *e;

	if (x && x[0] == '/') {
		e = rt_stpcpy(out, x, out + cap);
		e = rt_stpcpy(e, "/sonde", out + cap);
	} else {
		e = rt_stpcpy(out, "/tmp/sonde-", out + cap);
		e = rt_utoa(e, (uint64_t)geteuid(), out + cap);
	}
	return (size_t)(e - out) + 1 < cap ? 0 : -1;
}

/* Ours and 0700, made if missing; never followed through a symbolic link. */
int dyn_private_dir(const char *dir, const char **why)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		*why = "cannot make the control directory";
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		*why = "the control directory is not a directory";
		return -1;
	}
	close(fd);
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		*why = "the control directory exists with another owner or mode (want 0700, ours)";
		return -1;
	}
	return 0;
}

static int socket_path(const char *dir, char *out, size_t cap)
{
	char *e = rt_stpcpy(out, dir, out + cap);

	e = rt_stpcpy(e, "/ctl.", out + cap);
	e = rt_utoa(e, (uint64_t)getpid(), out + cap);
	return (size_t)(e - out) + 1 < cap ? 0 : -1;
}

/* A socket left by a dead process of the same pid goes; anything else there is refused. */
static int clear_stale(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode))
		return -1;
	return unlink(path);
}

static int listen_on(const char *path, const char **why)
{
	struct sockaddr_un a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	rt_stpcpy(a.sun_path, path, a.sun_path + sizeof(a.sun_path));
	if (clear_stale(path) != 0) {
		*why = "something else has the control socket's name";
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    chmod(path, 0600) != 0 || listen(fd, 4) != 0) {
		if (fd >= 0)
			close(fd);
		*why = "cannot listen on the control socket";
		return -1;
	}
	return fd;
}

static struct fd_id fd_id_of(int fd)
{
	struct stat st;
	struct fd_id id = { 0, 0 };

	if (fd >= 0 && fstat(fd, &st) == 0) {
		id.dev = st.st_dev;
		id.ino = st.st_ino;
	}
	return id;
}

/* Close fd if it is still the file it was (the program may have closed it and reused the
 * number), and forget it either way. */
static void close_if_ours(int *fd, const struct fd_id *id)
{
	struct fd_id now = fd_id_of(*fd);

	if (*fd >= 0 && now.ino && now.dev == id->dev && now.ino == id->ino)
		close(*fd);
	*fd = -1;
}

/* ---- sending ---- */

/* Forget the client; its connection is returned, still open, for the caller to close. */
static int release_client(void)
{
	const char *why;
	int fd = srv.cfd;

	if (fd >= 0) {
		atomic_store(&released, 1); /* the tool went away: the program goes on */
		if (rt_mode == RT_MODE_ATTACHED) { /* a profile it left open is written as it is */
			rt_attached_profile_end(SPROF_END_DETACH, 0, &why);
			rt_attached_client(0);
		}
	}
	srv.cfd = -1;
	srv.inlen = 0;
	srv.hello = srv.short_out = 0;
	dyn_metrics_clear(); /* nobody to send them to; the points go on counting */
	return fd;
}

static void drop_client(void)
{
	int fd = release_client();

	if (fd >= 0)
		close(fd);
}

static void send_all(const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n && srv.cfd >= 0) {
		ssize_t w = send(srv.cfd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			drop_client();
			return;
		}
		b += w;
		n -= (size_t)w;
	}
}

/* srv.out's message; after the HELLO_REPLY as a short frame (version 9: 2-4 bytes of header,
 * not 12; the tool's frames keep theirs). */
static void send_msg(size_t n)
{
	size_t off = 0;

	if (n && srv.short_out)
		n = sproto_shorten(srv.out, n, &off);
	if (n)
		send_all(srv.out + off, n);
}

static void reply_ok(uint16_t type)
{
	send_msg(sproto_put_ok(srv.out, SPROTO_MAX_MESSAGE, type));
}

static void reply_error(uint16_t type, const char *text)
{
	send_msg(sproto_put_error(srv.out, SPROTO_MAX_MESSAGE, type, text));
}

/* ---- requests ---- */

static void on_hello(const struct sproto_hello *h)
{
	struct sproto_hello_reply r;

	if (h->min_version > SPROTO_VERSION || h->max_version < SPROTO_VERSION) {
		reply_error(SPROTO_HELLO, "unsupported protocol version (this runtime speaks "
			    SPROTO_VERSION_TEXT ")");
		return;
	}
	memset(&r, 0, sizeof(r));
	r.version = SPROTO_VERSION;
	r.pid = (uint32_t)getpid();
	r.flags = (srv.at_start ? SPROTO_F_AT_START : 0) | (rt_clock_tsc ? SPROTO_F_TSC : 0) |
		  (rt_mode != RT_MODE_ATTACHED && atomic_load(&rt_ready) ? SPROTO_F_PROFILE : 0);
	r.max_points = DYN_POINTS;
	r.max_actions = SPROTO_MAX_ACTIONS;
	r.max_counters = DYN_COUNTERS;
	r.max_timers = DYN_TIMERS;
	r.max_metrics = SPROTO_MAX_METRICS;
	r.max_terms = SPROTO_MAX_TERMS;
	r.shadow_depth = DYN_SHADOW;
	r.max_tcounters = DYN_TCOUNTERS;
	r.bucket_ns = srv.bucket_ns;
	r.entry_addr = (uint64_t)(uintptr_t)&sonde__dyn_entry;
	r.exit_addr = (uint64_t)(uintptr_t)&sonde__dyn_exit;
	r.ret_tramp_addr = (uint64_t)(uintptr_t)dyn_ret_tramp_local;
	rt_stpcpy(r.build, "sonde " SONDE_VERSION, r.build + sizeof(r.build));
	if (!strcmp(h->client, r.build)) /* version 10: a tool of this build knows it */
		r.build[0] = 0;
	if (!srv.hello && rt_mode == RT_MODE_ATTACHED)
		rt_attached_client(1);
	srv.hello = 1;
	srv.short_out = 1; /* version 10: the HELLO_REPLY is the first short frame */
	send_msg(sproto_put_hello_reply(srv.out, SPROTO_MAX_MESSAGE, &r));
}

static void restart_buckets(void)
{
	srv.bucket_start = dyn_mono_ns();
	srv.next_bucket = srv.bucket_start + srv.bucket_ns;
}

static int64_t phases_run(void)
{
	return atomic_load_explicit(&dyn_counters[SPROTO_COUNTER_PHASES].v, memory_order_relaxed);
}

/* The bucket in progress ends width after its start (at once when that is past), answered by
 * its BUCKET_REPLY (sample_now); until then the requests after this one wait in the input. */
static void on_bucket(uint64_t width)
{
	if (!srv.on_request && !dyn_metrics_on())
		srv.bucket_start = dyn_mono_ns(); /* no bucket was running */
	srv.on_request = 1;
	srv.owed = 1;
	srv.asked = width; /* version 10: its BUCKET_REPLY's width is written from it */
	srv.next_bucket = srv.bucket_start + width;
	srv.phases_at = phases_run();
}

/* A request a BATCH may hold, done: NULL, or why it was refused. */
static const char *apply(const struct sproto_msg *m)
{
	const char *why = NULL;

	switch (m->h.type) {
	case SPROTO_POINT_SET:
	case SPROTO_POINT_ACTIONS:
		return dyn_point_set(&m->u.point_set, &why) != 0 ? why : NULL;
	case SPROTO_POINT_CLEAR:
		dyn_points_clear(m->u.clear.first, m->u.clear.count);
		return NULL;
	case SPROTO_METRIC_ENABLE:
		if (!dyn_metrics_on())
			restart_buckets();
		return dyn_metric_enable(&m->u.metric) != 0 ? "bad metric" : NULL;
	case SPROTO_METRIC_DISABLE:
		dyn_metric_disable(m->u.metric.id);
		return NULL;
	default:
		return "not a request a BATCH holds";
	}
}

/* BATCH (version 8): its requests in order, one answer: OK, or an ERROR naming the first
 * refused (those before it done, those after it not); a quiet one (version 10) no OK. */
static void on_batch(const struct sproto_batch *b)
{
	static struct sproto_msg m; /* the control thread's alone */
	char text[SPROTO_MAX_TEXT], *p, *end = text + sizeof(text);
	const char *why = NULL;
	size_t off = 0;
	uint32_t i;

	for (i = 0; i < b->n && !why; i++)
		why = sproto_batch_next(b, &off, &m, NULL, 0) != 0 ? "unreadable" : apply(&m);
	if (!why) {
		if (!b->quiet)
			reply_ok(SPROTO_BATCH);
		return;
	}
	p = rt_stpcpy(text, sproto_type_name(m.h.type) ? sproto_type_name(m.h.type) : "?", end);
	p = rt_stpcpy(p, " (request ", end);
	p = rt_utoa(p, i, end);
	p = rt_stpcpy(p, " of the batch): ", end);
	rt_stpcpy(p, why, end);
	reply_error(SPROTO_BATCH, text);
}

static void on_list(void)
{
	size_t n = dyn_list_reply(srv.out, SPROTO_MAX_MESSAGE);

	if (n)
		send_msg(n);
	else
		reply_error(SPROTO_LIST, "too many modules and threads for one message");
}

static void on_costs(void)
{
	send_msg(sproto_put_costs_reply(srv.out, SPROTO_MAX_MESSAGE, &costs));
}

static void on_resources(const struct sproto_resources *q)
{
	size_t n = dyn_objects_reply(srv.out, SPROTO_MAX_MESSAGE, q->kinds);

	if (n)
		send_msg(n);
	else
		reply_error(SPROTO_RESOURCES, "no memory to sort the objects");
}

static void on_profile(const struct sproto_msg *m)
{
	const char *why = "not an attached runtime: this process is measured from its start";
	int r = -1;

	if (rt_mode == RT_MODE_ATTACHED && m->h.type == SPROTO_PROFILE_BEGIN)
		r = rt_attached_profile_begin(m->u.dir, &why);
	else if (rt_mode == RT_MODE_ATTACHED)
		r = rt_attached_profile_end(SPROF_END_DETACH, 0, &why);
	if (r == 0 && m->h.type == SPROTO_PROFILE_END)
		dyn_points_clear(0, DYN_POINTS);
	if (r != 0)
		reply_error(m->h.type, why);
	else
		reply_ok(m->h.type);
}

static void end_session(void)
{
	dyn_metrics_clear();
	dyn_points_clear(0, DYN_POINTS);
	dyn_session_next();
	atomic_store(&dyn_paused, 0);
}

static void dispatch(const struct sproto_msg *m)
{
	uint16_t type = m->h.type;

	switch (type) {
	case SPROTO_HELLO: on_hello(&m->u.hello); return;
	case SPROTO_LIST: on_list(); return;
	case SPROTO_COSTS: on_costs(); return;
	case SPROTO_POINT_SET:
	case SPROTO_POINT_ACTIONS:
	case SPROTO_POINT_CLEAR:
	case SPROTO_METRIC_ENABLE:
	case SPROTO_METRIC_DISABLE: {
		const char *why = apply(m);

		if (why)
			reply_error(type, why);
		else
			reply_ok(type);
		return;
	}
	case SPROTO_BATCH: on_batch(&m->u.batch); return;
	case SPROTO_SAMPLING:
		srv.bucket_ns = m->u.bucket_ns;
		srv.on_request = 0;
		restart_buckets();
		break;
	case SPROTO_BUCKET: on_bucket(m->u.bucket_ns); return;
	case SPROTO_PAUSE: atomic_store(&dyn_paused, 1); break;
	case SPROTO_RESUME: atomic_store(&dyn_paused, 0); atomic_store(&released, 1); break;
	case SPROTO_DETACH: end_session(); atomic_store(&released, 1); srv.detach = 1; break;
	case SPROTO_PROFILE_BEGIN:
	case SPROTO_PROFILE_END: on_profile(m); return;
	case SPROTO_RESOURCES: on_resources(&m->u.resources); return;
	default: reply_error(type, "not a request"); return;
	}
	reply_ok(type);
}

static void handle(const struct sproto_header *h, const uint8_t *payload)
{
	struct sproto_msg m;
	char err[200];

	if (!sproto_is_request(h->type)) {
		reply_error(SPROTO_HELLO, "the runtime takes requests only");
		return;
	}
	if (sproto_decode(h, payload, &m, err, sizeof(err)) != 0) {
		reply_error(h->type, err);
		return;
	}
	if (!srv.hello && h->type != SPROTO_HELLO) {
		reply_error(h->type, "HELLO first");
		return;
	}
	dispatch(&m);
}

/* Every whole message in the input; a broken frame ends the connection (no resync). */
static void take_input(void)
{
	size_t off = 0;

	while (srv.cfd >= 0 && !srv.detach && !srv.owed) {
		struct sproto_header h;
		char err[200];
		long n = sproto_frame(srv.in + off, srv.inlen - off, &h, err, sizeof(err));

		if (n == 0)
			break;
		if (n < 0) {
			reply_error(SPROTO_HELLO, err);
			drop_client();
			return;
		}
		handle(&h, srv.in + off + SPROTO_HEADER_SIZE);
		off += (size_t)n;
	}
	if (srv.cfd >= 0 && off) {
		memmove(srv.in, srv.in + off, srv.inlen - off);
		srv.inlen -= off;
	}
}

static void read_client(void)
{
	ssize_t n = recv(srv.cfd, srv.in + srv.inlen, INBUF - srv.inlen, 0);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		drop_client();
		return;
	}
	srv.inlen += (size_t)n;
	take_input();
}

/* ---- connections ---- */

static int peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return 0;
	return cr.uid == geteuid() || cr.uid == 0;
}

static void refuse(int fd, const char *why)
{
	uint8_t msg[SPROTO_HEADER_SIZE + SPROTO_MAX_TEXT + 8];
	size_t n = sproto_put_error(msg, sizeof(msg), SPROTO_HELLO, why);

	if (send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		(void)0;
	close(fd);
}

static void accept_client(void)
{
	struct timeval tv = { SEND_TIMEOUT_S, 0 };
	int fd = accept4(srv.lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (!peer_allowed(fd)) {
		refuse(fd, "permission denied: another user");
		return;
	}
	if (srv.cfd >= 0) {
		refuse(fd, "another client is connected");
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	srv.cfd = fd;
	srv.cfd_id = fd_id_of(fd);
	srv.inlen = 0;
	srv.hello = srv.short_out = 0;
	srv.sent_end = 0; /* its first SAMPLE gives its start whole */
	dyn_sample_reset(); /* and refers to no SAMPLE before it (version 9) */
	srv.bucket_ns = SPROTO_DEFAULT_BUCKET_NS; /* a new client starts from the defaults */
	srv.on_request = srv.owed = 0;
	dyn_session_next(); /* whether the last one detached or went away */
}

/* ---- the loop ---- */

/* A bucket is due: every bucket width, or (on request) when the BUCKET asked for it ends. */
static int bucket_due(void)
{
	return srv.cfd >= 0 && (srv.on_request ? srv.owed : dyn_metrics_on() != 0);
}

static void sample_now(void)
{
	uint64_t now = dyn_mono_ns();
	int answer = srv.owed;
	size_t n;

	if (!bucket_due() || (now < srv.next_bucket && !(answer && phases_run() != srv.phases_at)))
		return; /* a bucket asked for ends early at a phase marker: one phase's data each */
	/* what the SAMPLE says (version 9), or the BUCKET_REPLY (version 10: in quanta from the
	 * ask; the values read up to 65.5 us before the end it says) */
	now = answer ? sproto_bucket_end(srv.bucket_start, now, srv.asked)
		     : sproto_sample_end(srv.bucket_start, now);
	n = dyn_sample(srv.out, SPROTO_MAX_MESSAGE, srv.sent_end, srv.bucket_start, now,
		       answer ? DYN_SAMPLE_ANSWER : 0, srv.asked);
	srv.bucket_start = now;
	srv.next_bucket += srv.bucket_ns;
	if (srv.next_bucket <= now) /* fell behind: the next bucket starts now */
		srv.next_bucket = now + srv.bucket_ns;
	if (srv.cfd >= 0 && n) {
		send_msg(n);
		srv.sent_end = now;
	}
	if (answer) { /* answered: the requests that came after the BUCKET */
		srv.owed = 0;
		take_input();
	}
}

/* The process is ending: one last sample, up to now, so the tool has every call. */
static void final_sample(void)
{
	uint64_t one, now = dyn_mono_ns();

	if (read(srv.efd, &one, sizeof(one)) < 0)
		(void)0; /* nothing to read: woken by something else */
	if (atomic_load(&final_state) != 1)
		return;
	now = srv.owed ? sproto_bucket_end(srv.bucket_start, now, srv.asked)
		       : sproto_sample_end(srv.bucket_start, now);
	if (srv.cfd >= 0 && (dyn_metrics_on() || srv.owed)) { /* owed: this is the answer */
		size_t n = dyn_sample(srv.out, SPROTO_MAX_MESSAGE, srv.sent_end, srv.bucket_start,
				      now, DYN_SAMPLE_LAST | (srv.owed ? DYN_SAMPLE_ANSWER : 0),
				      srv.asked);

		srv.owed = 0;
		srv.bucket_start = now;
		send_msg(n);
		srv.sent_end = n ? now : srv.sent_end;
	}
	atomic_store(&final_state, 2);
}

static void housekeeping(void)
{
	uint64_t now = dyn_mono_ns();

	if (now < srv.next_sweep)
		return;
	dyn_threads_sweep();
	dyn_points_reclaim(now);
	srv.next_sweep = now + SWEEP_NS;
}

/* Until the next thing due, to the ns (version 10: a bucket ends within the wake-up's delay
 * of its asked end, not up to a ms after; its BUCKET_REPLY's width is written from the ask). */
static struct timespec poll_timeout(void)
{
	uint64_t now = dyn_mono_ns(), until = srv.next_sweep, w;

	if (bucket_due() && srv.next_bucket < until)
		until = srv.next_bucket;
	if (srv.owed && now + PHASE_LOOK_NS < until) /* a phase marker ends it: looked for */
		until = now + PHASE_LOOK_NS;
	w = until <= now ? 0 : until - now;
	return (struct timespec){ (time_t)(w / 1000000000ull), (long)(w % 1000000000ull) };
}

static void serve_once(void)
{
	/* a full input while a BUCKET is owed is not read (a hang-up is still seen) */
	struct pollfd p[3] = { { srv.lfd, POLLIN, 0 }, { srv.efd, POLLIN, 0 },
			       { srv.cfd, srv.owed && srv.inlen >= INBUF ? 0 : POLLIN, 0 } };
	struct timespec t = poll_timeout();
	int n = ppoll(p, srv.cfd >= 0 ? 3 : 2, &t, NULL);

	if (n > 0 && (p[0].revents & POLLNVAL)) {
		srv.lfd = -1; /* the program closed our socket: the number may be its own now */
		srv.detach = 1;
		return;
	}
	if (n > 0 && srv.cfd >= 0 && (p[2].revents & POLLNVAL)) {
		srv.cfd = -1; /* likewise: forgotten, never closed */
		drop_client();
	}
	if (atomic_load(&final_state) == 1 || (p[1].revents & POLLIN))
		final_sample();
	if (n > 0 && srv.cfd >= 0 && p[2].revents)
		read_client();
	if (n > 0 && (p[0].revents & POLLIN))
		accept_client();
	sample_now();
	housekeeping();
}

static void *server_main(void *arg)
{
	int cfd;

	(void)arg;
	rt_busy = 1; /* neither the profile probes nor the points count this thread */
	/* a tool leaves this thread out of the program's (sonde consult's Threads) */
	atomic_store_explicit(&dyn_counters[SPROTO_COUNTER_CTL_TID].v, dyn_sys_gettid(),
			      memory_order_relaxed);
	dyn_calibrate_costs(&costs); /* a client that connects meanwhile waits in the backlog */
	while (!srv.detach)
		serve_once();
	unlink(srv.path); /* gone before the client sees the end of the stream */
	if (srv.lfd >= 0)
		close(srv.lfd);
	srv.lfd = -1;
	cfd = release_client();
	close_if_ours(&srv.efd, &srv.efd_id);
	atomic_store(&final_state, 0);
	atomic_store(&running, 0);
	/* Last: a tool that sees the end of the stream may attach again at once, and the next
	 * sonde__attach must find this server stopped (ctl_wait_end). */
	if (cfd >= 0)
		close(cfd);
	return NULL;
}

/* ---- start and stop ---- */

static int start_thread(void)
{
	typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	create_fn create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	sigset_t all, old;
	pthread_t th;
	int rc;

	if (!create)
		create = pthread_create;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = create(&th, NULL, server_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		pthread_detach(th);
	return rc == 0 ? 0 : -1;
}

static int map_buffers(void)
{
	if (!srv.in)
		srv.in = rt_map(INBUF);
	if (!srv.out)
		srv.out = rt_map(SPROTO_MAX_MESSAGE);
	return srv.in && srv.out ? 0 : -1;
}

/* Open the socket and start serving; 0, or -1 (why goes to the log in dynamic mode). */
int dyn_server_start(const char *ctl_dir, int at_start)
{
	char dir[sizeof(srv.path)];
	const char *why = "cannot start the control thread";
	int expect = 0;

	if (!atomic_compare_exchange_strong(&running, &expect, 1))
		return 0;
	if (ctl_dir && ctl_dir[0])
		rt_stpcpy(dir, ctl_dir, dir + sizeof(dir));
	if ((!ctl_dir || !ctl_dir[0]) && default_dir(dir, sizeof(dir)) != 0)
		why = "control directory name too long";
	else if (socket_path(dir, srv.path, sizeof(srv.path)) != 0)
		why = "control socket name too long";
	else if (map_buffers() != 0)
		why = "out of memory";
	else if ((srv.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		why = "cannot make an eventfd";
	else if (dyn_private_dir(dir, &why) == 0 && (srv.lfd = listen_on(srv.path, &why)) >= 0) {
		srv.lfd_id = fd_id_of(srv.lfd);
		srv.efd_id = fd_id_of(srv.efd);
		srv.at_start = at_start;
		srv.pid = getpid();
		srv.detach = 0;
		srv.bucket_ns = SPROTO_DEFAULT_BUCKET_NS;
		srv.next_sweep = 0;
		end_session();
		dyn_counters_reset();
		dyn_objects_reset();
		dyn_threads_reset();
		if (start_thread() == 0)
			return 0;
		why = "cannot start the control thread";
		close(srv.lfd);
		unlink(srv.path);
		srv.lfd = -1;
	}
	if (srv.efd >= 0)
		close(srv.efd);
	srv.efd = -1;
	if (rt_mode != RT_MODE_ATTACHED)
		rt_log(why);
	atomic_store(&running, 0);
	return -1;
}

/*
 * sonde run --dynamic holds the program before main while the tool patches it: the start-up
 * waits until RESUME, DETACH, the client going away, the server stopping, or the time is up.
 */
void dyn_server_hold(unsigned seconds)
{
	struct timespec ms = { 0, 1000000 };
	uint64_t end = dyn_mono_ns() + seconds * 1000000000ull;

	while (!atomic_load(&released) && atomic_load(&running) && dyn_mono_ns() < end)
		nanosleep(&ms, NULL);
	if (!atomic_load(&released) && atomic_load(&running))
		rt_log("dynamic instrumentation: no RESUME from the tool in time: running on");
}

/*
 * The process is ending (exit, _exit, a terminating signal; any thread but the control
 * thread): the control thread sends a last sample, up to now, and this thread waits for it
 * (half a second at most), so a tool watching sees every call made. Once per process;
 * async-signal-safe.
 */
void dyn_server_final(void)
{
	struct timespec us100 = { 0, 100000 };
	uint64_t one = 1, end;
	int expect = 0, saved = errno;

	/* no client (a hint: the control thread may be changing it) means nothing to send */
	if (!atomic_load(&running) || srv.pid != getpid() || srv.efd < 0 ||
	    __atomic_load_n(&srv.cfd, __ATOMIC_RELAXED) < 0 ||
	    !atomic_compare_exchange_strong(&final_state, &expect, 1))
		return;
	if (write(srv.efd, &one, sizeof(one)) < 0)
		(void)0; /* the thread also looks at final_state whenever it wakes */
	end = dyn_mono_ns() + FINAL_WAIT_NS;
	while (atomic_load(&final_state) == 1 && atomic_load(&running) && dyn_mono_ns() < end)
		nanosleep(&us100, NULL);
	errno = saved;
}

/*
 * In a forked child (pthread_atfork; the only thread): no control thread runs here. The
 * parent's sockets are closed (a child holding the client's connection would keep the tool
 * from seeing the parent's end), its session forgotten, its points cleared (not PROFILE ones
 * in a child that writes its own profile), so that the child runs at an inactive point's cost
 * and sonde__attach may start a server of its own later.
 */
void dyn_server_after_fork(void)
{
	close_if_ours(&srv.cfd, &srv.cfd_id);
	close_if_ours(&srv.lfd, &srv.lfd_id);
	close_if_ours(&srv.efd, &srv.efd_id);
	srv.path[0] = 0;
	srv.inlen = 0;
	srv.hello = srv.short_out = 0;
	srv.detach = 0;
	dyn_metrics_clear();
	dyn_points_after_fork(rt_mode == RT_MODE_DYNAMIC);
	dyn_threads_after_fork();
	atomic_store(&final_state, 0);
	atomic_store(&running, 0);
}

static void child_of_attached(void)
{
	dyn_server_after_fork();
	rt_attached_after_fork();
}

/* At exit: the socket's name goes with the process. */
void dyn_server_unlink(void)
{
	if (atomic_load(&running) && srv.path[0] && srv.pid == getpid())
		unlink(srv.path);
}

RT_EXPORT int sonde__attach(const char *ctl_dir)
{
	static _Atomic int atfork;

	if (rt_mode == RT_MODE_ATTACHED && !atomic_exchange(&atfork, 1))
		pthread_atfork(NULL, NULL, child_of_attached);
	return dyn_server_start(ctl_dir, 0);
}
