/* SPDX-License-Identifier: MIT */
/*
 * The control protocol's writer and validating reader (format/protocol.h, docs/protocol.md).
 *
 * The reader trusts nothing: every length is checked against what is left, every count against
 * the payload's size, every enumeration against its range, reserved fields must be zero and a
 * payload must be consumed exactly. No allocation, no stdio: the runtime uses this file inside
 * the measured process.
 */
#include "protocol.h"

#include <string.h>

/* ---- small helpers ---- */

static void put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* One-line reasons, copied without stdio. */
static int fail(char *err, size_t cap, const char *a, const char *b)
{
	size_t n = 0;

	if (!err || !cap)
		return -1;
	for (; a && *a && n + 1 < cap; a++)
		err[n++] = *a;
	for (; b && *b && n + 1 < cap; b++)
		err[n++] = *b;
	err[n] = 0;
	return -1;
}

const char *sproto_type_name(uint16_t type)
{
	switch (type) {
	case SPROTO_HELLO: return "HELLO";
	case SPROTO_LIST: return "LIST";
	case SPROTO_POINT_SET: return "POINT_SET";
	case SPROTO_POINT_CLEAR: return "POINT_CLEAR";
	case SPROTO_METRIC_ENABLE: return "METRIC_ENABLE";
	case SPROTO_METRIC_DISABLE: return "METRIC_DISABLE";
	case SPROTO_SAMPLING: return "SAMPLING";
	case SPROTO_PAUSE: return "PAUSE";
	case SPROTO_RESUME: return "RESUME";
	case SPROTO_DETACH: return "DETACH";
	case SPROTO_PROFILE_BEGIN: return "PROFILE_BEGIN";
	case SPROTO_PROFILE_END: return "PROFILE_END";
	case SPROTO_HELLO_REPLY: return "HELLO_REPLY";
	case SPROTO_LIST_REPLY: return "LIST_REPLY";
	case SPROTO_OK: return "OK";
	case SPROTO_ERROR: return "ERROR";
	case SPROTO_SAMPLE: return "SAMPLE";
	case SPROTO_COSTS: return "COSTS";
	case SPROTO_COSTS_REPLY: return "COSTS_REPLY";
	case SPROTO_RESOURCES: return "RESOURCES";
	case SPROTO_RESOURCES_REPLY: return "RESOURCES_REPLY";
	case SPROTO_BUCKET: return "BUCKET";
	case SPROTO_BUCKET_REPLY: return "BUCKET_REPLY";
	case SPROTO_BUCKET_SAME: return "BUCKET_SAME";
	case SPROTO_BUCKET_KEPT: return "BUCKET_KEPT";
	case SPROTO_BATCH: return "BATCH";
	case SPROTO_POINT_ACTIONS: return "POINT_ACTIONS";
	default: return NULL;
	}
}

int sproto_is_request(uint16_t type)
{
	return type >= SPROTO_HELLO && type <= SPROTO_POINT_ACTIONS;
}

int sproto_batchable(uint16_t type)
{
	return type == SPROTO_POINT_SET || type == SPROTO_POINT_CLEAR ||
	       type == SPROTO_METRIC_ENABLE || type == SPROTO_METRIC_DISABLE ||
	       type == SPROTO_POINT_ACTIONS;
}

int sproto_is_sample(uint16_t type)
{
	return type == SPROTO_SAMPLE || type == SPROTO_BUCKET_REPLY || type == SPROTO_BUCKET_SAME ||
	       type == SPROTO_BUCKET_KEPT;
}

/* HELLO, its reply and ERROR keep their payloads in every version: a peer of another version
 * can still say hello and be told no. */
static int version_free(uint16_t type)
{
	return type == SPROTO_HELLO || type == SPROTO_HELLO_REPLY || type == SPROTO_ERROR;
}

/* ---- reading ---- */

long sproto_frame(const void *buf, size_t len, struct sproto_header *h, char *err, size_t cap)
{
	const uint8_t *p = buf;

	if (len < SPROTO_HEADER_SIZE)
		return 0;
	h->magic = (uint32_t)get_le(p, 4);
	h->version = (uint16_t)get_le(p + 4, 2);
	h->type = (uint16_t)get_le(p + 6, 2);
	h->length = (uint32_t)get_le(p + 8, 4);
	if (h->magic != SPROTO_MAGIC)
		return fail(err, cap, "not a sonde control message (bad magic)", NULL);
	if (!sproto_type_name(h->type))
		return fail(err, cap, "unknown message type", NULL);
	if (h->version == 0 || (h->version != SPROTO_VERSION && !version_free(h->type)))
		return fail(err, cap, "unsupported protocol version in ", sproto_type_name(h->type));
	if (h->length > SPROTO_MAX_PAYLOAD)
		return fail(err, cap, "message too long: ", sproto_type_name(h->type));
	h->size = SPROTO_HEADER_SIZE;
	if (len < SPROTO_HEADER_SIZE + (size_t)h->length)
		return 0;
	return (long)(SPROTO_HEADER_SIZE + h->length);
}

long sproto_frame_short(const void *buf, size_t len, struct sproto_header *h, char *err,
			size_t cap)
{
	const uint8_t *p = buf;
	uint64_t n = 0;
	size_t i;

	if (len < 1)
		return 0;
	h->magic = SPROTO_MAGIC;
	h->version = SPROTO_VERSION;
	h->type = p[0];
	if (!sproto_type_name(h->type) || sproto_is_request(h->type))
		return fail(err, cap, "unknown message type", NULL);
	for (i = 1;; i++) { /* the length: a uvarint of 3 bytes at most (2^21 > 1 MiB) */
		if (i >= len)
			return 0;
		if (i > 3 || (i > 1 && !p[i]))
			return fail(err, cap, "bad length in a short frame: ", sproto_type_name(h->type));
		n |= (uint64_t)(p[i] & 0x7f) << (7 * (i - 1));
		if (!(p[i] & 0x80))
			break;
	}
	if (n > SPROTO_MAX_PAYLOAD)
		return fail(err, cap, "message too long: ", sproto_type_name(h->type));
	h->length = (uint32_t)n;
	h->size = (uint32_t)(i + 1);
	if (len < h->size + (size_t)h->length)
		return 0;
	return (long)(h->size + h->length);
}

/* A cursor over a payload: reads fail (and stay failed) past the end. */
struct rd {
	const uint8_t *p;
	size_t len, off;
	int bad;
};

static uint64_t rd_le(struct rd *r, int n)
{
	uint64_t v;

	if (r->bad || r->len - r->off < (size_t)n) {
		r->bad = 1;
		return 0;
	}
	v = get_le(r->p + r->off, n);
	r->off += (size_t)n;
	return v;
}

static uint8_t rd_u8(struct rd *r) { return (uint8_t)rd_le(r, 1); }
static uint16_t rd_u16(struct rd *r) { return (uint16_t)rd_le(r, 2); }
static uint32_t rd_u32(struct rd *r) { return (uint32_t)rd_le(r, 4); }
static uint64_t rd_u64(struct rd *r) { return rd_le(r, 8); }

static const uint8_t *rd_bytes(struct rd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || r->len - r->off < n) {
		r->bad = 1;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

/* Text: no NUL, no line breaks (one line), copied terminated into out[max + 1]. */
static int rd_text(struct rd *r, size_t n, size_t max, char *out)
{
	const uint8_t *p = n <= max ? rd_bytes(r, n) : NULL;
	size_t i;

	if (!p)
		return -1;
	for (i = 0; i < n; i++)
		if (p[i] == 0 || p[i] == '\n' || p[i] == '\r')
			return -1;
	memcpy(out, p, n);
	out[n] = 0;
	return 0;
}

static uint64_t rd_uvar(struct rd *r);
static int64_t rd_svar(struct rd *r);

static int dec_hello(struct rd *r, struct sproto_hello *h, char *err, size_t cap)
{
	uint8_t n;

	h->min_version = rd_u16(r);
	h->max_version = rd_u16(r);
	n = rd_u8(r);
	if (r->bad || rd_text(r, n, SPROTO_MAX_NAME, h->client) != 0)
		return fail(err, cap, "HELLO: bad client name", NULL);
	if (!h->min_version || h->min_version > h->max_version)
		return fail(err, cap, "HELLO: bad version range", NULL);
	return 0;
}

/* Version 10: after the version, varints and no limits (the version's own: the reader fills
 * them in) nor bucket width (a new client's is the default); the addresses of the exit
 * handler and the return trampoline from the entry's; the build (after these) empty when it
 * is the HELLO's client name. */
static void dec_hello_reply10(struct rd *r, struct sproto_hello_reply *h)
{
	uint64_t pid = rd_uvar(r), flags = rd_uvar(r);

	h->pid = pid >> 32 ? 0 : (uint32_t)pid;
	h->flags = (uint32_t)flags;
	r->bad |= flags >> 32 != 0;
	h->max_points = SPROTO_MAX_POINTS;
	h->max_actions = SPROTO_MAX_ACTIONS;
	h->max_counters = SPROTO_MAX_COUNTERS;
	h->max_timers = SPROTO_MAX_TIMERS;
	h->max_metrics = SPROTO_MAX_METRICS;
	h->max_terms = SPROTO_MAX_TERMS;
	h->shadow_depth = SPROTO_SHADOW_DEPTH;
	h->max_tcounters = SPROTO_MAX_TCOUNTERS;
	h->bucket_ns = SPROTO_DEFAULT_BUCKET_NS; /* a new client's, always */
	h->entry_addr = rd_uvar(r);
	h->exit_addr = h->entry_addr + (uint64_t)rd_svar(r);
	h->ret_tramp_addr = h->entry_addr + (uint64_t)rd_svar(r);
}

/* The version first in every version; what follows it is that version's (1 to 9: fixed
 * fields; 10: dec_hello_reply10). */
static int dec_hello_reply(struct rd *r, struct sproto_hello_reply *h, char *err, size_t cap)
{
	uint8_t n;

	h->version = rd_u16(r);
	if (h->version >= 10) {
		dec_hello_reply10(r, h);
	} else {
		if (rd_u16(r) != 0)
			return fail(err, cap, "HELLO_REPLY: reserved field not zero", NULL);
		h->pid = rd_u32(r);
		h->flags = rd_u32(r);
		h->max_points = rd_u32(r);
		h->max_actions = rd_u32(r);
		h->max_counters = rd_u32(r);
		h->max_timers = rd_u32(r);
		h->max_metrics = rd_u32(r);
		h->max_terms = rd_u32(r);
		h->shadow_depth = rd_u32(r);
		h->max_tcounters = rd_u32(r);
		h->bucket_ns = rd_u64(r);
		h->entry_addr = rd_u64(r);
		h->exit_addr = rd_u64(r);
		h->ret_tramp_addr = rd_u64(r);
	}
	n = rd_u8(r);
	if (r->bad || rd_text(r, n, SPROTO_MAX_NAME, h->build) != 0)
		return fail(err, cap, "HELLO_REPLY: bad build string", NULL);
	if (!h->version || !h->pid)
		return fail(err, cap, "HELLO_REPLY: no version or pid", NULL);
	return 0;
}

static int timer_prim(uint8_t prim)
{
	return prim >= SPROTO_START_WALL && prim <= SPROTO_STOP_CPU;
}

static const char *action_target_problem(const struct sproto_action *a)
{
	if (a->when > SPROTO_AT_EXIT)
		return "bad 'when'";
	if (a->prim >= SPROTO_PRIM_COUNT)
		return "unknown primitive";
	if (timer_prim(a->prim))
		return a->target >= SPROTO_MAX_TIMERS ? "timer index out of range"
		       : a->value != 0		      ? "a timer primitive takes no value"
						      : NULL;
	if (a->prim == SPROTO_PROFILE)
		return a->target ? "PROFILE takes no target" : !a->value ? "PROFILE of address 0" : NULL;
	if (a->prim == SPROTO_RECORD)
		return a->when != SPROTO_AT_ENTRY ? "RECORD is an entry action"
		       : a->target >= SPROTO_OBJ_KINDS ? "RECORD of an unknown kind"
		       : a->value != SPROTO_RECORD_USE && a->value != SPROTO_RECORD_INIT
			       ? "RECORD's value is 0 (a use) or 1 (an initialisation)"
			       : NULL;
	if (a->prim == SPROTO_START_WALL_IF)
		return a->target >= SPROTO_MAX_TIMERS ? "timer index out of range"
		       : (a->value & 0xffff) >= SPROTO_MAX_TCOUNTERS
			       ? "START_WALL_IF's guard: thread counter index out of range"
		       : (a->value >> 16 & 0xff) > SPROTO_GE ? "START_WALL_IF's guard: bad comparison"
							      : NULL;
	if (a->prim == SPROTO_TSET_ARG) {
		if (a->when != SPROTO_AT_ENTRY || a->value < 0 || a->value > 5)
			return "TSET_ARG is an entry action whose value is an argument (0-5)";
		return a->target >= SPROTO_MAX_TCOUNTERS ? "thread counter index out of range" : NULL;
	}
	if (a->prim == SPROTO_ADD_RET || a->prim == SPROTO_TADD_RET) {
		if (a->when != SPROTO_AT_EXIT || a->value)
			return "ADD_RET and TADD_RET are exit actions without a value";
		if (a->prim == SPROTO_ADD_RET)
			return a->target >= SPROTO_MAX_COUNTERS ? "counter index out of range" : NULL;
	}
	if (a->prim >= SPROTO_TSET)
		return a->target >= SPROTO_MAX_TCOUNTERS ? "thread counter index out of range" : NULL;
	return a->target >= SPROTO_MAX_COUNTERS ? "counter index out of range" : NULL;
}

static const char *action_pred_problem(const struct sproto_action *a)
{
	switch (a->pred) {
	case SPROTO_PRED_NONE:
		return a->op || a->pred_index || a->pred_value ? "predicate fields set without one"
							       : NULL;
	case SPROTO_PRED_COUNTER:
		return a->pred_index >= SPROTO_MAX_COUNTERS ? "predicate counter out of range" : NULL;
	case SPROTO_PRED_ARG:
		return a->pred_index > 5		? "argument number above 5"
		       : a->when != SPROTO_AT_ENTRY ? "arguments are read at entry only"
						    : NULL;
	case SPROTO_PRED_RETVAL:
		return a->pred_index			? "retval predicate with an index"
		       : a->when != SPROTO_AT_EXIT ? "the return value is read at exit only"
						   : NULL;
	case SPROTO_PRED_TCOUNTER:
		return a->pred_index >= SPROTO_MAX_TCOUNTERS ? "predicate thread counter out of range"
							     : NULL;
	default:
		return "unknown predicate";
	}
}

static const char *action_problem(const struct sproto_action *a)
{
	const char *why = action_target_problem(a);

	if (why)
		return why;
	if (a->op >= SPROTO_OP_COUNT)
		return "unknown comparison";
	return action_pred_problem(a);
}

static int dec_action(struct rd *r, struct sproto_action *a, char *err, size_t cap)
{
	const char *why;

	a->when = rd_u8(r);
	a->prim = rd_u8(r);
	a->pred = rd_u8(r);
	a->op = rd_u8(r);
	a->target = rd_u32(r);
	a->pred_index = rd_u32(r);
	if (rd_u32(r) != 0)
		return fail(err, cap, "POINT_SET: reserved field not zero", NULL);
	a->value = (int64_t)rd_u64(r);
	a->pred_value = (int64_t)rd_u64(r);
	if (r->bad)
		return fail(err, cap, "POINT_SET: actions cut short", NULL);
	why = action_problem(a);
	return why ? fail(err, cap, "POINT_SET: ", why) : 0;
}

static int dec_point_set(struct rd *r, struct sproto_point_set *p, char *err, size_t cap)
{
	uint16_t i;

	p->point = rd_u32(r);
	p->n = rd_u16(r);
	if (rd_u16(r) != 0 || r->bad)
		return fail(err, cap, "POINT_SET: bad header", NULL);
	if (p->point >= SPROTO_MAX_POINTS)
		return fail(err, cap, "POINT_SET: point id out of range", NULL);
	if (!p->n || p->n > SPROTO_MAX_ACTIONS)
		return fail(err, cap, "POINT_SET: 1 to 32 actions", NULL);
	for (i = 0; i < p->n; i++)
		if (dec_action(r, &p->act[i], err, cap) != 0)
			return -1;
	return 0;
}

static int64_t rd_svar(struct rd *r);

/* POINT_ACTIONS (version 8): a POINT_SET's fields in variable-length integers; a predicate's
 * index and constant only with a predicate. The same rules as POINT_SET's. */
static int dec_point_actions(struct rd *r, struct sproto_point_set *p, char *err, size_t cap)
{
	uint64_t point = rd_uvar(r);
	const char *why;
	uint16_t i;

	p->n = rd_u8(r);
	if (r->bad || point >= SPROTO_MAX_POINTS)
		return fail(err, cap, "POINT_ACTIONS: bad point id", NULL);
	p->point = (uint32_t)point;
	if (!p->n || p->n > SPROTO_MAX_ACTIONS)
		return fail(err, cap, "POINT_ACTIONS: 1 to 32 actions", NULL);
	for (i = 0; i < p->n; i++) {
		struct sproto_action *a = &p->act[i];
		uint8_t k = rd_u8(r), q = rd_u8(r);
		uint64_t target = rd_uvar(r), index = 0;

		a->value = rd_svar(r);
		if (!r->bad && (q & 7))
			index = rd_uvar(r);
		a->pred_value = !r->bad && (q & 7) ? rd_svar(r) : 0;
		if (r->bad)
			return fail(err, cap, "POINT_ACTIONS: actions cut short", NULL);
		if ((k >> 5) || (q >> 6) || target > UINT32_MAX || index > UINT32_MAX)
			return fail(err, cap, "POINT_ACTIONS: bad action", NULL);
		a->when = k & 1;
		a->prim = k >> 1;
		a->pred = q & 7;
		a->op = q >> 3;
		a->target = (uint32_t)target;
		a->pred_index = (uint32_t)index;
		why = action_problem(a);
		if (why)
			return fail(err, cap, "POINT_ACTIONS: ", why);
	}
	return 0;
}

static int dec_clear(struct rd *r, struct sproto_range *c, char *err, size_t cap)
{
	c->first = rd_u32(r);
	c->count = rd_u32(r);
	if (!r->bad && c->count && c->first < SPROTO_MAX_POINTS &&
	    c->count <= SPROTO_MAX_POINTS - c->first)
		return 0;
	return fail(err, cap, "POINT_CLEAR: bad range", NULL);
}

static const char *term_problem(const struct sproto_term *t)
{
	switch (t->kind) {
	case SPROTO_TERM_COUNTER:
		return t->index >= SPROTO_MAX_COUNTERS ? "counter index out of range"
		       : t->tid			       ? "counters are not per thread"
						       : NULL;
	case SPROTO_TERM_WALL:
	case SPROTO_TERM_CPU:
		return t->index >= SPROTO_MAX_TIMERS ? "timer index out of range" : NULL;
	case SPROTO_TERM_PROC_CPU:
		return t->index || t->tid ? "process CPU time takes no index" : NULL;
	case SPROTO_TERM_TCOUNTER:
		return t->index >= SPROTO_MAX_TCOUNTERS ? "thread counter index out of range" : NULL;
	default:
		return "unknown term kind";
	}
}

static int dec_metric(struct rd *r, struct sproto_metric *m, char *err, size_t cap)
{
	const char *why;
	uint16_t i;

	m->id = rd_u32(r);
	m->n = rd_u16(r);
	m->flags = rd_u8(r);
	m->every = rd_u8(r);
	if ((m->flags & ~SPROTO_M_FLAGS) || (m->flags & SPROTO_M_UNITS) == SPROTO_M_UNITS ||
	    r->bad || m->id >= SPROTO_MAX_METRICS)
		return fail(err, cap, "METRIC_ENABLE: bad header, flags or metric id", NULL);
	if (!m->n || m->n > SPROTO_MAX_TERMS)
		return fail(err, cap, "METRIC_ENABLE: 1 to 64 terms", NULL);
	for (i = 0; i < m->n; i++) {
		struct sproto_term *t = &m->term[i];

		t->kind = rd_u8(r);
		if (rd_u8(r) != 0 || rd_u16(r) != 0)
			return fail(err, cap, "METRIC_ENABLE: reserved field not zero", NULL);
		t->index = rd_u32(r);
		t->tid = rd_u32(r);
		if (r->bad)
			return fail(err, cap, "METRIC_ENABLE: terms cut short", NULL);
		why = term_problem(t);
		if (why)
			return fail(err, cap, "METRIC_ENABLE: ", why);
	}
	return 0;
}

static int dec_metric_disable(struct rd *r, struct sproto_metric *m, char *err, size_t cap)
{
	m->id = rd_u32(r);
	m->n = 0;
	m->flags = 0;
	m->every = 0;
	if (r->bad || m->id >= SPROTO_MAX_METRICS)
		return fail(err, cap, "METRIC_DISABLE: bad metric id", NULL);
	return 0;
}

/* SAMPLING and BUCKET: a bucket's width */
static int dec_sampling(struct rd *r, uint16_t type, uint64_t *ns, char *err, size_t cap)
{
	*ns = rd_u64(r);
	if (r->bad || *ns < SPROTO_MIN_BUCKET_NS || *ns > SPROTO_MAX_BUCKET_NS)
		return fail(err, cap, sproto_type_name(type),
			    ": bucket width must be 1 ms to 1 hour");
	return 0;
}

static int dec_profile_begin(struct rd *r, char *dir, char *err, size_t cap)
{
	uint16_t n = rd_u16(r);

	if (r->bad || !n || rd_text(r, n, SPROTO_MAX_PATH, dir) != 0 || dir[0] != '/')
		return fail(err, cap, "PROFILE_BEGIN: bad directory (absolute, one line)", NULL);
	return 0;
}

static int dec_status(struct rd *r, uint16_t type, struct sproto_status *s, char *err,
		      size_t cap)
{
	uint16_t n;

	s->text[0] = 0;
	if (type == SPROTO_OK) { /* version 10: no payload (answers come in order) */
		s->type = 0;
		return 0;
	}
	s->type = rd_u16(r);
	n = rd_u16(r);
	if (r->bad || !sproto_is_request(s->type))
		return fail(err, cap, sproto_type_name(type), ": bad request type");
	if (!n || rd_text(r, n, SPROTO_MAX_TEXT, s->text) != 0)
		return fail(err, cap, "ERROR: bad text", NULL);
	return 0;
}

/* One module of a LIST_REPLY; out may be NULL (validation only). */
static int dec_module(struct rd *r, struct sproto_module *out)
{
	struct sproto_module m;
	uint16_t n;
	const uint8_t *id;

	m.bias = rd_u64(r);
	m.lo = rd_u64(r);
	m.hi = rd_u64(r);
	m.build_id_len = rd_u8(r);
	if (r->bad || m.build_id_len > SPROTO_MAX_BUILD_ID || m.lo > m.hi)
		return -1;
	id = rd_bytes(r, m.build_id_len);
	n = rd_u16(r);
	if (!id || r->bad || !n || rd_text(r, n, SPROTO_MAX_PATH, m.path) != 0)
		return -1;
	memset(m.build_id, 0, sizeof(m.build_id));
	memcpy(m.build_id, id, m.build_id_len);
	if (out)
		*out = m;
	return 0;
}

static int dec_list(struct rd *r, struct sproto_list *l, char *err, size_t cap)
{
	uint32_t i;

	l->nmodules = rd_u32(r);
	l->nthreads = rd_u32(r);
	if (r->bad || l->nmodules > r->len / 28 || l->nthreads > r->len / 4)
		return fail(err, cap, "LIST_REPLY: bad counts", NULL);
	l->modules = r->p + r->off;
	for (i = 0; i < l->nmodules; i++)
		if (dec_module(r, NULL) != 0)
			return fail(err, cap, "LIST_REPLY: bad module", NULL);
	l->tids = rd_bytes(r, (size_t)l->nthreads * 4);
	if (!l->tids)
		return fail(err, cap, "LIST_REPLY: thread ids cut short", NULL);
	for (i = 0; i < l->nthreads; i++)
		if (!get_le(l->tids + 4 * i, 4))
			return fail(err, cap, "LIST_REPLY: thread id 0", NULL);
	return 0;
}

/* Variable-length integers (SAMPLE, version 6): 7 bits a byte, the low ones first, the high
 * bit set on every byte but the last; at most 10 bytes, none wasted (a last byte of 0 after
 * others is refused: one number, one encoding). Signed ones zigzag-mapped (0, -1, 1, -2 ...). */
static uint64_t rd_uvar(struct rd *r)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 10 && !r->bad; i++) {
		uint8_t c = rd_u8(r);

		if (r->bad || (i == 9 && c > 1) || (i && !c)) {
			r->bad = 1;
			return 0;
		}
		v |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int64_t rd_svar(struct rd *r)
{
	return unzigzag(rd_uvar(r));
}

/* Keyed entries (version 6): `gap << 3 | flags`, d, the value with SPROTO_S_VALUE; ids strictly
 * increasing from *next, below SPROTO_MAX_METRICS. max: how many at most (the rest of the
 * payload when it is UINT32_MAX). */
static int dec_keyed(struct rd *r, struct sproto_sample *s, uint32_t max, char *err, size_t cap)
{
	uint64_t next = 0, key;
	uint32_t k;

	for (k = 0; k < max && (max != UINT32_MAX || r->off < r->len); k++) {
		s->off[s->n] = (uint16_t)(r->p + r->off - s->entries);
		key = rd_uvar(r);
		if (r->bad && max != UINT32_MAX)
			return fail(err, cap, "SAMPLE: entries cut short", NULL);
		if (r->bad || (key >> 3) >= SPROTO_MAX_METRICS - next ||
		    (s->last && (key & SPROTO_S_LAST)))
			return fail(err, cap, "SAMPLE: bad entry", NULL);
		next += (key >> 3) + 1;
		s->n++;
		rd_svar(r);
		if (key & SPROTO_S_VALUE)
			rd_svar(r);
		if (r->bad)
			return fail(err, cap, "SAMPLE: entries cut short", NULL);
	}
	return 0;
}

/* The code of kept delta j (version 11): 0 (an svarint follows), 1, 2 or 3 (0, +1, -1). */
static unsigned delta_code(uint64_t codes, uint32_t j)
{
	return j < SPROTO_CODED ? (unsigned)(codes >> 2 * j & 3) : 0;
}

static int64_t code_delta(unsigned code)
{
	return code == 1 ? 0 : code == 2 ? 1 : -1;
}

/* Version 11: the previous SAMPLE's metrics (modes same and kept), a delta each, no key: a
 * uvarint of SPROTO_CODED 2-bit codes, then an svarint for each delta whose code is 0 (those
 * past SPROTO_CODED included), to the payload's end. As many deltas as codes not 0 and
 * svarints: the codes past the last one not 0 are 0. An svarint of 0, 1 or -1 where a code
 * could say it is refused (one delta, one encoding). */
static int dec_unkeyed(struct rd *r, struct sproto_sample *s, char *err, size_t cap)
{
	uint32_t j, top;

	s->codes = rd_uvar(r);
	if (r->bad)
		return fail(err, cap, "SAMPLE: entries cut short", NULL);
	for (top = 0; top < SPROTO_CODED && s->codes >> 2 * top; top++)
		; /* the codes past `top` are 0 */
	for (j = 0;; j++) {
		int64_t d;

		if (!delta_code(s->codes, j) && j >= top && r->off == r->len)
			return 0;
		if (s->n >= SPROTO_MAX_METRICS)
			return fail(err, cap, "SAMPLE: bad entry", NULL);
		s->off[s->n++] = (uint16_t)(r->p + r->off - s->entries);
		if (delta_code(s->codes, j))
			continue;
		d = rd_svar(r);
		if (r->bad)
			return fail(err, cap, "SAMPLE: entries cut short", NULL);
		if (j < SPROTO_CODED && d >= -1 && d <= 1)
			return fail(err, cap, "SAMPLE: a delta a code says written whole", NULL);
	}
}

/* Kept delta i of s (i >= s->keyed), as written: from its code, or its svarint. */
static int64_t unkeyed_d(const struct sproto_sample *s, uint32_t i)
{
	struct rd r = { s->entries, s->entries_size, s->off[i], 0 };
	unsigned code = delta_code(s->codes, i - s->keyed);

	return code ? code_delta(code) : rd_svar(&r);
}

/*
 * Version 10: a head `lost << 4 | last << 3 | mode << 1 | start given` (none in a BUCKET_SAME:
 * `same` alone), the start (when given: as version 9's, else the previous end), the width in
 * units of 1024 ns (a BUCKET_REPLY's: svarint, from its BUCKET's), then by mode: 0 keyed
 * entries to the payload's end; 1 (`same`) a delta each for the previous SAMPLE's metrics, at
 * least one; 2 (`kept`) uvarint dropped, uvarint keyed, that many keyed entries, then a delta
 * each for the previous SAMPLE's metrics not dropped, to the end. last: every entry is the
 * last (its key without the flag).
 */
static int dec_sample(struct rd *r, uint16_t type, struct sproto_sample *s, char *err,
		      size_t cap)
{
	uint64_t head, start = 0, width = 0, keyed = 0, mode;

	head = type == SPROTO_BUCKET_SAME ? 1 << 1 : type == SPROTO_BUCKET_KEPT ? 2 << 1 : rd_uvar(r);
	mode = head >> 1 & 3;
	if (head & 1)
		start = rd_uvar(r); /* the low bit: 1 the start whole, 0 a gap after the previous end */
	s->rel = type != SPROTO_SAMPLE;
	if (s->rel)
		s->wdiff = rd_svar(r);
	else
		width = rd_uvar(r);
	s->lost = head >> 4;
	s->last = (int)(head >> 3 & 1);
	s->same = mode == 1;
	s->kept = mode == 2;
	s->dropped = 0;
	if (s->kept) {
		s->dropped = rd_uvar(r);
		keyed = rd_uvar(r);
	}
	s->keyed = 0;
	s->resolved = NULL;
	s->follows = !(start & 1);
	s->start_ns = start >> 1;
	s->units = width;
	s->end_ns = s->start_ns + (width << SPROTO_WIDTH_SHIFT);
	if (r->bad || mode == 3 || width >> (64 - SPROTO_WIDTH_SHIFT) || s->end_ns < s->start_ns ||
	    keyed > SPROTO_MAX_METRICS)
		return fail(err, cap, "SAMPLE: bad header", NULL);
	s->n = 0;
	s->size = (uint32_t)r->len;
	s->entries = r->p + r->off;
	s->entries_size = (uint32_t)(r->len - r->off);
	if (dec_keyed(r, s, s->same ? 0 : s->kept ? (uint32_t)keyed : UINT32_MAX, err, cap) != 0)
		return -1;
	s->keyed = s->n;
	s->codes = 0;
	if ((s->same || s->kept) && dec_unkeyed(r, s, err, cap) != 0)
		return -1;
	if (s->same && !s->n)
		return fail(err, cap, "SAMPLE: bad header", NULL);
	return 0;
}

/* Figures in any order, each item at most once; items this reader does not know are kept. */
static int dec_costs(struct rd *r, struct sproto_costs *c, char *err, size_t cap)
{
	uint8_t seen[65536 / 8];
	uint64_t flags = rd_uvar(r), n = rd_uvar(r);
	uint32_t i;

	c->flags = (uint32_t)flags;
	c->n = (uint32_t)n;
	c->when_ns = rd_uvar(r);
	c->elapsed_ns = rd_uvar(r);
	if (r->bad || (flags & ~(uint64_t)(SPROTO_COSTS_MEASURED | SPROTO_COSTS_PROFILE)) ||
	    n > SPROTO_MAX_COSTS || (!(c->flags & SPROTO_COSTS_MEASURED) && n))
		return fail(err, cap, "COSTS_REPLY: bad header", NULL);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < c->n; i++) { /* version 10: uvarint item, mean, sd */
		struct sproto_cost *f = &c->c[i];
		uint64_t item = rd_uvar(r), mean = rd_uvar(r), sd = rd_uvar(r);

		if (r->bad)
			return fail(err, cap, "COSTS_REPLY: figures cut short", NULL);
		if (item > 0xffff || mean >> 32 || sd >> 32)
			return fail(err, cap, "COSTS_REPLY: a figure out of range", NULL);
		f->item = (uint16_t)item;
		f->mean_ps = (uint32_t)mean;
		f->sd_ps = (uint32_t)sd;
		if (seen[f->item / 8] & (1u << (f->item % 8)))
			return fail(err, cap, "COSTS_REPLY: a figure given twice", NULL);
		seen[f->item / 8] |= (uint8_t)(1u << (f->item % 8));
	}
	return 0;
}

static int dec_resources(struct rd *r, struct sproto_resources *q, char *err, size_t cap)
{
	q->kinds = rd_u32(r);
	if (r->bad || !(q->kinds & ((1u << SPROTO_OBJ_KINDS) - 1)) ||
	    (q->kinds & ~((1u << SPROTO_OBJ_KINDS) - 1) & ~SPROTO_RES_NEW))
		return fail(err, cap, "RESOURCES: bad kinds", NULL);
	return 0;
}

/* One entry of a RESOURCES_REPLY (version 8) after prev (kind, addr): the kind's step, the
 * address (from the previous one's of the same kind, else whole), uses, initialisations, the
 * site. 0, or -1 when it breaks a rule (the reader's and the writer's). */
static int get_object(struct rd *r, const struct sproto_object_cursor *prev,
		      struct sproto_object *e)
{
	uint64_t step = rd_uvar(r), addr = rd_uvar(r), inits;

	e->uses = rd_uvar(r);
	inits = rd_uvar(r);
	e->site = rd_uvar(r);
	if (r->bad || step >= SPROTO_OBJ_KINDS - (uint64_t)prev->kind || inits > UINT32_MAX ||
	    !addr || (!e->uses && !inits))
		return -1;
	e->kind = (uint8_t)(prev->kind + step);
	e->inits = (uint32_t)inits;
	if (prev->i && !step) { /* the same kind: a step up from the previous address */
		if (addr >= SPROTO_OBJ_ADDR_LIMIT - prev->addr)
			return -1;
		addr += prev->addr;
	}
	e->addr = addr;
	return addr < SPROTO_OBJ_ADDR_LIMIT ? 0 : -1;
}

/* Entries in increasing (kind, address) order, so each object comes once. */
static int dec_objects(struct rd *r, struct sproto_objects *o, char *err, size_t cap)
{
	struct sproto_object_cursor c = { 0 };
	struct sproto_object e;
	uint32_t k;

	uint64_t n = rd_uvar(r), slots = rd_uvar(r), mask = rd_uvar(r); /* version 10 */

	o->n = n > SPROTO_MAX_OBJECTS ? SPROTO_MAX_OBJECTS + 1 : (uint32_t)n;
	o->slots = slots > SPROTO_MAX_OBJECTS ? SPROTO_MAX_OBJECTS + 1 : (uint32_t)slots;
	for (k = 0; k < SPROTO_OBJ_KINDS; k++) { /* the kinds in the mask: a count not 0 */
		o->dropped[k] = mask >> k & 1 ? rd_uvar(r) : 0;
		if (mask >> k & 1 && !o->dropped[k])
			r->bad = 1;
	}
	if (r->bad || mask >> SPROTO_OBJ_KINDS || o->n > SPROTO_MAX_OBJECTS ||
	    o->slots > SPROTO_MAX_OBJECTS || o->n > o->slots)
		return fail(err, cap, "RESOURCES_REPLY: bad header", NULL);
	o->entries = r->p + r->off;
	o->size = (uint32_t)(r->len - r->off);
	for (c.i = 0; c.i < o->n; c.i++) {
		if (get_object(r, &c, &e) != 0)
			return fail(err, cap, r->bad ? "RESOURCES_REPLY: entries cut short"
						     : "RESOURCES_REPLY: bad entry", NULL);
		c.kind = e.kind;
		c.addr = e.addr;
	}
	return 0;
}

/* Requests in one; each validated as if it came alone (a BATCH with a bad one is refused
 * whole: nothing of it is done). */
static int dec_batch(struct rd *r, struct sproto_batch *b, char *err, size_t cap)
{
	struct sproto_msg m; /* each request decoded in turn, then dropped */
	size_t off = 0;
	uint32_t i;

	b->n = rd_u16(r);
	b->quiet = (b->n & SPROTO_BATCH_QUIET) != 0;
	b->n &= ~SPROTO_BATCH_QUIET;
	if (r->bad || !b->n || b->n > SPROTO_MAX_BATCH)
		return fail(err, cap, "BATCH: 1 to 4096 requests", NULL);
	b->items = r->p + r->off;
	b->size = (uint32_t)(r->len - r->off);
	r->off = r->len;
	for (i = 0; i < b->n; i++)
		if (sproto_batch_next(b, &off, &m, err, cap) != 0)
			return err && cap && err[0] ? -1 : fail(err, cap, "BATCH: cut short", NULL);
	if (off != b->size)
		return fail(err, cap, "BATCH: bytes left over", NULL);
	return 0;
}

static int dec_body(struct rd *r, uint16_t type, struct sproto_msg *m, char *err, size_t cap)
{
	switch (type) {
	case SPROTO_HELLO: return dec_hello(r, &m->u.hello, err, cap);
	case SPROTO_HELLO_REPLY: return dec_hello_reply(r, &m->u.hello_reply, err, cap);
	case SPROTO_POINT_SET: return dec_point_set(r, &m->u.point_set, err, cap);
	case SPROTO_POINT_ACTIONS: return dec_point_actions(r, &m->u.point_set, err, cap);
	case SPROTO_POINT_CLEAR: return dec_clear(r, &m->u.clear, err, cap);
	case SPROTO_METRIC_ENABLE: return dec_metric(r, &m->u.metric, err, cap);
	case SPROTO_METRIC_DISABLE: return dec_metric_disable(r, &m->u.metric, err, cap);
	case SPROTO_SAMPLING:
	case SPROTO_BUCKET: return dec_sampling(r, type, &m->u.bucket_ns, err, cap);
	case SPROTO_PROFILE_BEGIN: return dec_profile_begin(r, m->u.dir, err, cap);
	case SPROTO_OK:
	case SPROTO_ERROR: return dec_status(r, type, &m->u.status, err, cap);
	case SPROTO_LIST_REPLY: return dec_list(r, &m->u.list, err, cap);
	case SPROTO_SAMPLE:
	case SPROTO_BUCKET_REPLY:
	case SPROTO_BUCKET_SAME:
	case SPROTO_BUCKET_KEPT: return dec_sample(r, type, &m->u.sample, err, cap);
	case SPROTO_COSTS_REPLY: return dec_costs(r, &m->u.costs, err, cap);
	case SPROTO_RESOURCES: return dec_resources(r, &m->u.resources, err, cap);
	case SPROTO_RESOURCES_REPLY: return dec_objects(r, &m->u.objects, err, cap);
	case SPROTO_BATCH: return dec_batch(r, &m->u.batch, err, cap);
	case SPROTO_COSTS:
	case SPROTO_LIST:
	case SPROTO_PAUSE:
	case SPROTO_RESUME:
	case SPROTO_DETACH:
	case SPROTO_PROFILE_END: return 0;
	default: return fail(err, cap, "unknown message type", NULL);
	}
}

int sproto_decode(const struct sproto_header *h, const void *payload, struct sproto_msg *m,
		  char *err, size_t cap)
{
	struct rd r = { payload, h->length, 0, 0 };

	m->h = *h;
	if (h->magic != SPROTO_MAGIC || !sproto_type_name(h->type) ||
	    h->length > SPROTO_MAX_PAYLOAD || (h->length && !payload))
		return fail(err, cap, "invalid header", NULL);
	if (dec_body(&r, h->type, m, err, cap) != 0)
		return -1;
	if (r.bad)
		return fail(err, cap, sproto_type_name(h->type), ": payload cut short");
	if (r.off != r.len)
		return fail(err, cap, sproto_type_name(h->type), ": bytes left over");
	return 0;
}

int sproto_list_module(const struct sproto_list *l, size_t *off, struct sproto_module *m)
{
	struct rd r = { l->modules, (size_t)(l->tids - l->modules), *off, 0 };

	if (r.off >= r.len || dec_module(&r, m) != 0)
		return -1;
	*off = r.off;
	return 0;
}

uint32_t sproto_list_tid(const struct sproto_list *l, uint32_t i)
{
	return i < l->nthreads ? (uint32_t)get_le(l->tids + 4 * (size_t)i, 4) : 0;
}

void sproto_sample_entry(const struct sproto_sample *s, uint32_t i, struct sproto_sample_entry *e)
{
	struct rd r = { s->entries, s->entries_size, 0, 0 };
	uint64_t metric = 0, key = 0;
	uint32_t k;

	memset(e, 0, sizeof(*e));
	if (i >= s->n)
		return;
	if (s->resolved) {
		*e = s->resolved[i];
		return;
	}
	if (i >= s->keyed) { /* unresolved: the delta as written, no metric */
		e->metric = SPROTO_MAX_METRICS;
		e->flags = s->last ? SPROTO_S_LAST : 0;
		e->delta = unkeyed_d(s, i);
		return;
	}
	for (k = 0; k <= i; k++) { /* the ids are gaps: walk from the start */
		r.off = s->off[k];
		key = rd_uvar(&r);
		metric += (key >> 3) + (k > 0);
	}
	e->metric = (uint32_t)metric;
	e->flags = (uint32_t)(key & SPROTO_S_FLAGS) | (s->last ? SPROTO_S_LAST : 0);
	e->delta = rd_svar(&r);
	if (key & SPROTO_S_VALUE)
		e->value = rd_svar(&r);
}

/* The delta predicted for a metric's entry in a SAMPLE of width w (units): its last delta,
 * scaled by the widths while that stays exact in 64 bits (version 9; writer and reader). */
static int64_t predict(const struct sproto_sctx *c, uint32_t id, uint64_t w)
{
	int64_t d = c->delta[id];
	uint64_t pw = c->width[id];

	if (!pw || pw == w || w >> 31 || pw >> 62 || d >= (1ll << 31) || d <= -(1ll << 31))
		return d;
	return d * (int64_t)w / (int64_t)pw;
}

/* |v| for |v| < 2^62, else 2^62 (no two such are "near"). */
static uint64_t mag(int64_t v)
{
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	return u >> 62 ? 1ull << 62 : u;
}

/* Whether the metrics o's and id's last deltas are near: the same width, id's not 0, the two
 * within 1/32 of id's. */
static int moved_with(const struct sproto_sctx *c, uint16_t o, uint32_t id)
{
	uint64_t a = mag(c->delta[id]), b = mag(c->delta[o]);

	if (c->width[o] != c->width[id] || !a || a >> 62 || b >> 62)
		return 0;
	return (c->delta[id] < 0) == (c->delta[o] < 0) && (a > b ? a - b : b - a) <= a >> 5;
}

/* Version 10: entry k's prediction, its metric id: the delta of the nearest of the (up to)
 * SPROTO_LOOK_BACK entries before it in the SAMPLE whose metric's last delta was near this
 * metric's (moved_with) — metrics that moved together last time are predicted to again (the
 * timers of one procedure that several requests read) —, else its own last delta scaled
 * (predict). The entries before it: c->next, c->pend (their ids and deltas, in order). */
static int64_t predict_at(const struct sproto_sctx *c, uint32_t k, uint32_t id, uint64_t w)
{
	uint32_t j;

	for (j = k; j > 0 && j + SPROTO_LOOK_BACK > k; j--)
		if (moved_with(c, c->next[j - 1], id))
			return c->pend[j - 1];
	return predict(c, id, w);
}

/* A SAMPLE's entries now the context's: each metric's delta and width, the ids in order. */
static void sctx_commit(struct sproto_sctx *c, uint64_t units)
{
	uint32_t i;

	for (i = 0; i < c->nnext; i++) {
		c->delta[c->next[i]] = c->pend[i];
		c->width[c->next[i]] = units;
		c->prev[i] = c->next[i];
	}
	c->nprev = c->nnext;
}

/* The previous SAMPLE's metrics a SAMPLE keeps (version 10: all but those dropped; bit i of
 * dropped, i < 64: the entry i), marked in c->mark; how many, or -1 when dropped names entries
 * it has not. */
static int64_t mark_kept(struct sproto_sctx *c, uint64_t dropped)
{
	uint32_t i;
	int64_t k = 0;

	if (c->nprev < 64 && dropped >> c->nprev)
		return -1;
	for (i = 0; i < c->nprev; i++)
		if (i >= 64 || !(dropped >> i & 1)) {
			c->mark[c->prev[i]] = 1;
			k++;
		}
	return k;
}

static void unmark(struct sproto_sctx *c)
{
	uint32_t i;

	for (i = 0; i < c->nprev; i++)
		c->mark[c->prev[i]] = 0;
}

/* Version 10: the keyed entries first, then the previous SAMPLE's kept metrics in its order;
 * a keyed metric that is also kept is refused. */
static int resolve_kept(struct sproto_sample *s, struct sproto_sctx *c, char *err, size_t cap)
{
	struct sproto_sample plain = *s;
	int64_t kept = mark_kept(c, s->kept ? s->dropped : 0);
	uint32_t i, j;
	int bad = kept < 0 || (uint64_t)kept != s->n - s->keyed;

	plain.resolved = NULL;
	for (i = 0; i < s->keyed && !bad; i++) {
		sproto_sample_entry(&plain, i, &c->e[i]);
		bad = c->mark[c->e[i].metric] != 0;
	}
	for (j = 0; j < c->nprev && i < s->n && !bad; j++) {
		if (!c->mark[c->prev[j]])
			continue;
		memset(&c->e[i], 0, sizeof(c->e[i]));
		c->e[i].metric = c->prev[j];
		c->e[i].flags = s->last ? SPROTO_S_LAST : 0;
		c->e[i].delta = unkeyed_d(s, i);
		i++;
	}
	unmark(c);
	if (bad)
		return fail(err, cap, "SAMPLE: its entries are not the previous one's metrics", NULL);
	return 0;
}

int sproto_sample_resolve(struct sproto_sample *s, struct sproto_sctx *c, char *err, size_t cap)
{
	struct sproto_sample_entry *e = c->e;
	uint32_t i;

	if (s->rel)
		return fail(err, cap, "SAMPLE: its width is not known (sproto_sample_asked)", NULL);
	if (s->same && s->n != c->nprev)
		return fail(err, cap, "SAMPLE: not as many entries as the previous one's metrics",
			    NULL);
	if ((s->same || s->kept) && resolve_kept(s, c, err, cap) != 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		if (!s->same && !s->kept) {
			struct sproto_sample plain = *s;

			plain.resolved = NULL;
			sproto_sample_entry(&plain, i, &e[i]);
		}
		if (!(e[i].flags & SPROTO_S_FIRST)) /* wraps as the writer's does */
			e[i].delta = (int64_t)((uint64_t)e[i].delta +
					       (uint64_t)predict_at(c, i, e[i].metric, s->units));
		c->next[i] = (uint16_t)e[i].metric;
		c->pend[i] = e[i].delta;
	}
	c->nnext = s->n;
	sctx_commit(c, s->units);
	s->resolved = e;
	return 0;
}

/* The units a BUCKET of asked_ns waits for at least: its end rounded up (sproto_sample_end). */
static uint64_t asked_units(uint64_t asked_ns)
{
	return asked_ns / 1024 + (asked_ns % 1024 != 0);
}

/* Version 10: the width is a + SPROTO_BUCKET_QUANTUM x wdiff units (wdiff below 2^48 either
 * way: past it the width is past 2^64 ns anyway). */
int sproto_sample_asked(struct sproto_sample *s, uint64_t asked_ns)
{
	uint64_t a = asked_units(asked_ns), units, d;

	if (!s->rel)
		return 0;
	if (s->wdiff >= (1ll << 48) || s->wdiff <= -(1ll << 48))
		return -1;
	d = (uint64_t)(s->wdiff < 0 ? -s->wdiff : s->wdiff) * SPROTO_BUCKET_QUANTUM;
	if (s->wdiff < 0 && d > a)
		return -1; /* below 0 */
	units = s->wdiff < 0 ? a - d : a + d;
	if (units >> (64 - SPROTO_WIDTH_SHIFT) ||
	    s->start_ns + (units << SPROTO_WIDTH_SHIFT) < s->start_ns)
		return -1;
	s->units = units;
	s->end_ns = s->start_ns + (units << SPROTO_WIDTH_SHIFT);
	s->rel = 0;
	return 0;
}

int sproto_sample_follow(struct sproto_sample *s, uint64_t prev_end_ns)
{
	if (!s->follows)
		return 0;
	if (!prev_end_ns || s->end_ns > UINT64_MAX - prev_end_ns)
		return -1;
	s->start_ns += prev_end_ns;
	s->end_ns += prev_end_ns;
	s->follows = 0;
	return 0;
}

int sproto_object_next(const struct sproto_objects *o, struct sproto_object_cursor *c,
		       struct sproto_object *e)
{
	struct rd r = { o->entries, o->size, c->off, 0 };

	if (c->i >= o->n || get_object(&r, c, e) != 0) {
		memset(e, 0, sizeof(*e));
		return -1;
	}
	c->off = (uint32_t)r.off;
	c->i++;
	c->kind = e->kind;
	c->addr = e->addr;
	return 0;
}

void sproto_object(const struct sproto_objects *o, uint32_t i, struct sproto_object *e)
{
	struct sproto_object_cursor c = { 0 };

	do {
		if (sproto_object_next(o, &c, e) != 0)
			return;
	} while (c.i <= i);
}

int sproto_batch_next(const struct sproto_batch *b, size_t *off, struct sproto_msg *m,
		      char *err, size_t cap)
{
	struct rd r = { b->items, b->size, *off, 0 };
	struct sproto_header h = { SPROTO_MAGIC, SPROTO_VERSION, 0, 0, 0 };
	const uint8_t *payload;

	if (err && cap)
		err[0] = 0;
	h.type = rd_u8(&r);
	h.length = rd_u16(&r);
	payload = rd_bytes(&r, h.length);
	if (r.bad)
		return -1;
	if (!sproto_batchable(h.type))
		return fail(err, cap, "BATCH: a request that cannot be in one", NULL);
	if (sproto_decode(&h, payload, m, err, cap) != 0)
		return -1;
	*off = r.off;
	return 0;
}

/* ---- writing ---- */

void sproto_begin(struct sproto_buf *b, void *mem, size_t cap, uint16_t type)
{
	b->p = mem;
	b->cap = cap;
	b->len = 0;
	b->overflow = 0;
	b->count_at = 0;
	b->n1 = b->n2 = 0;
	b->last = 0;
	b->last_kind = 0;
	b->ctx = NULL;
	b->units = 0;
	b->all_last = 0;
	b->head_at = b->entries_at = 0;
	sproto_u32(b, SPROTO_MAGIC);
	sproto_u16(b, SPROTO_VERSION);
	sproto_u16(b, type);
	sproto_u32(b, 0);
}

static void put(struct sproto_buf *b, uint64_t v, int n)
{
	if (b->overflow || b->cap - b->len < (size_t)n) {
		b->overflow = 1;
		return;
	}
	put_le(b->p + b->len, v, n);
	b->len += (size_t)n;
}

void sproto_u8(struct sproto_buf *b, uint8_t v) { put(b, v, 1); }
void sproto_u16(struct sproto_buf *b, uint16_t v) { put(b, v, 2); }
void sproto_u32(struct sproto_buf *b, uint32_t v) { put(b, v, 4); }
void sproto_u64(struct sproto_buf *b, uint64_t v) { put(b, v, 8); }

void sproto_bytes(struct sproto_buf *b, const void *p, size_t n)
{
	if (b->overflow || b->cap - b->len < n) {
		b->overflow = 1;
		return;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void emit_entries(struct sproto_buf *b);

/* RESOURCES_REPLY (version 10): its count, a uvarint, into the byte kept for it at count_at,
 * the bytes after it moved on when it takes more. 0, or -1 when that does not fit. */
static int put_count(struct sproto_buf *b)
{
	uint8_t v[10];
	size_t k = 0;
	uint64_t n = b->n1;

	do {
		v[k++] = (uint8_t)((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
		n >>= 7;
	} while (n);
	if (b->len + k - 1 > b->cap || b->len + k - 1 - SPROTO_HEADER_SIZE > SPROTO_MAX_PAYLOAD)
		return -1;
	memmove(b->p + b->count_at + k, b->p + b->count_at + 1, b->len - b->count_at - 1);
	memcpy(b->p + b->count_at, v, k);
	b->len += k - 1;
	put_le(b->p + 8, b->len - SPROTO_HEADER_SIZE, 4);
	return 0;
}

size_t sproto_end(struct sproto_buf *b)
{
	uint16_t type;

	if (b->ctx && !b->overflow && b->len >= SPROTO_HEADER_SIZE &&
	    sproto_is_sample((uint16_t)get_le(b->p + 6, 2)))
		emit_entries(b); /* version 10: written now, in the shortest mode */
	if (b->overflow || b->len < SPROTO_HEADER_SIZE ||
	    b->len - SPROTO_HEADER_SIZE > SPROTO_MAX_PAYLOAD)
		return 0;
	put_le(b->p + 8, b->len - SPROTO_HEADER_SIZE, 4);
	type = (uint16_t)get_le(b->p + 6, 2);
	if (type == SPROTO_LIST_REPLY) {
		put_le(b->p + b->count_at, b->n1, 4);
		put_le(b->p + b->count_at + 4, b->n2, 4);
	} else if (type == SPROTO_RESOURCES_REPLY) {
		if (put_count(b) != 0)
			return 0;
	} else if (type == SPROTO_BATCH) {
		if (!b->n1)
			return 0; /* a BATCH holds one request at least */
		put_le(b->p + b->count_at, b->n1, 2);
	} else if (sproto_is_sample(type) && b->ctx) {
		uint8_t head = b->p[b->head_at];

		if (type == SPROTO_BUCKET_REPLY && (head == 1 << 1 || head == 2 << 1)) {
			/* version 10: `same` or `kept` alone, said by the type */
			memmove(b->p + b->head_at, b->p + b->head_at + 1, b->len - b->head_at - 1);
			b->len--;
			put_le(b->p + 6, head == 1 << 1 ? SPROTO_BUCKET_SAME : SPROTO_BUCKET_KEPT, 2);
			put_le(b->p + 8, b->len - SPROTO_HEADER_SIZE, 4);
		}
		sctx_commit(b->ctx, b->units);
		b->ctx = NULL; /* once */
	}
	return b->len;
}

size_t sproto_shorten(void *msg, size_t n, size_t *off)
{
	uint8_t *p = msg, hdr[SPROTO_SHORT_HEADER_MAX];
	uint64_t len, type, v;
	size_t k = 1;

	if (n < SPROTO_HEADER_SIZE || get_le(p, 4) != SPROTO_MAGIC)
		return 0;
	type = get_le(p + 6, 2);
	len = get_le(p + 8, 4);
	if (len != n - SPROTO_HEADER_SIZE || len > SPROTO_MAX_PAYLOAD || type > 0xff ||
	    !sproto_type_name((uint16_t)type) || sproto_is_request((uint16_t)type))
		return 0;
	hdr[0] = (uint8_t)type;
	for (v = len; k == 1 || v; v >>= 7) /* uvarint: 7 bits a byte, the high bit: more */
		hdr[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
	*off = SPROTO_HEADER_SIZE - k;
	memcpy(p + *off, hdr, k);
	return k + (size_t)len;
}

/* A short string with a u8 length; longer than max or not one line: the message is refused. */
static void put_name(struct sproto_buf *b, const char *s, size_t max)
{
	size_t n = strlen(s), i;

	for (i = 0; i < n; i++)
		if (s[i] == '\n' || s[i] == '\r')
			b->overflow = 1;
	if (n > max)
		b->overflow = 1;
	sproto_u8(b, (uint8_t)n);
	sproto_bytes(b, s, n);
}

size_t sproto_put_hello(void *mem, size_t cap, const struct sproto_hello *h)
{
	struct sproto_buf b;

	sproto_begin(&b, mem, cap, SPROTO_HELLO);
	sproto_u16(&b, h->min_version);
	sproto_u16(&b, h->max_version);
	put_name(&b, h->client, SPROTO_MAX_NAME);
	return sproto_end(&b);
}

static void put_uvar(struct sproto_buf *b, uint64_t v);
static void put_svar(struct sproto_buf *b, int64_t v);

/* Version 10 (r->version >= 10): varints, no limits; earlier versions' layout otherwise (a
 * test's). */
size_t sproto_put_hello_reply(void *mem, size_t cap, const struct sproto_hello_reply *r)
{
	struct sproto_buf b;

	sproto_begin(&b, mem, cap, SPROTO_HELLO_REPLY);
	sproto_u16(&b, r->version);
	if (r->version >= 10) {
		put_uvar(&b, r->pid);
		put_uvar(&b, r->flags);
		put_uvar(&b, r->entry_addr);
		put_svar(&b, (int64_t)(r->exit_addr - r->entry_addr));
		put_svar(&b, (int64_t)(r->ret_tramp_addr - r->entry_addr));
		put_name(&b, r->build, SPROTO_MAX_NAME);
		return sproto_end(&b);
	}
	sproto_u16(&b, 0);
	sproto_u32(&b, r->pid);
	sproto_u32(&b, r->flags);
	sproto_u32(&b, r->max_points);
	sproto_u32(&b, r->max_actions);
	sproto_u32(&b, r->max_counters);
	sproto_u32(&b, r->max_timers);
	sproto_u32(&b, r->max_metrics);
	sproto_u32(&b, r->max_terms);
	sproto_u32(&b, r->shadow_depth);
	sproto_u32(&b, r->max_tcounters);
	sproto_u64(&b, r->bucket_ns);
	sproto_u64(&b, r->entry_addr);
	sproto_u64(&b, r->exit_addr);
	sproto_u64(&b, r->ret_tramp_addr);
	put_name(&b, r->build, SPROTO_MAX_NAME);
	return sproto_end(&b);
}

size_t sproto_put_point_set(void *mem, size_t cap, const struct sproto_point_set *p)
{
	struct sproto_buf b;
	uint16_t i;

	if (p->n > SPROTO_MAX_ACTIONS)
		return 0;
	sproto_begin(&b, mem, cap, SPROTO_POINT_SET);
	sproto_u32(&b, p->point);
	sproto_u16(&b, p->n);
	sproto_u16(&b, 0);
	for (i = 0; i < p->n; i++) {
		const struct sproto_action *a = &p->act[i];

		sproto_u8(&b, a->when);
		sproto_u8(&b, a->prim);
		sproto_u8(&b, a->pred);
		sproto_u8(&b, a->op);
		sproto_u32(&b, a->target);
		sproto_u32(&b, a->pred_index);
		sproto_u32(&b, 0);
		sproto_u64(&b, (uint64_t)a->value);
		sproto_u64(&b, (uint64_t)a->pred_value);
	}
	return sproto_end(&b);
}

static void put_uvar(struct sproto_buf *b, uint64_t v);
static void put_svar(struct sproto_buf *b, int64_t v);

size_t sproto_put_point_actions(void *mem, size_t cap, const struct sproto_point_set *p)
{
	struct sproto_buf b;
	uint16_t i;

	if (!p->n || p->n > SPROTO_MAX_ACTIONS || p->point >= SPROTO_MAX_POINTS)
		return 0;
	sproto_begin(&b, mem, cap, SPROTO_POINT_ACTIONS);
	put_uvar(&b, p->point);
	sproto_u8(&b, (uint8_t)p->n);
	for (i = 0; i < p->n; i++) {
		const struct sproto_action *a = &p->act[i];

		if (a->when > 1 || a->prim >= 16 || a->pred >= 8 || a->op >= 8 ||
		    (!a->pred && (a->pred_index || a->pred_value)))
			return 0; /* no room, or predicate fields without one (refused anyway) */
		sproto_u8(&b, (uint8_t)(a->when | a->prim << 1));
		sproto_u8(&b, (uint8_t)(a->pred | a->op << 3));
		put_uvar(&b, a->target);
		put_svar(&b, a->value);
		if (a->pred) {
			put_uvar(&b, a->pred_index);
			put_svar(&b, a->pred_value);
		}
	}
	return sproto_end(&b);
}

size_t sproto_put_point_clear(void *mem, size_t cap, uint32_t first, uint32_t count)
{
	struct sproto_buf b;

	sproto_begin(&b, mem, cap, SPROTO_POINT_CLEAR);
	sproto_u32(&b, first);
	sproto_u32(&b, count);
	return sproto_end(&b);
}

size_t sproto_put_metric_enable(void *mem, size_t cap, const struct sproto_metric *m)
{
	struct sproto_buf b;
	uint16_t i;

	if (m->n > SPROTO_MAX_TERMS || (m->flags & ~SPROTO_M_FLAGS) ||
	    (m->flags & SPROTO_M_UNITS) == SPROTO_M_UNITS)
		return 0;
	sproto_begin(&b, mem, cap, SPROTO_METRIC_ENABLE);
	sproto_u32(&b, m->id);
	sproto_u16(&b, m->n);
	sproto_u8(&b, m->flags);
	sproto_u8(&b, m->every);
	for (i = 0; i < m->n; i++) {
		sproto_u8(&b, m->term[i].kind);
		sproto_u8(&b, 0);
		sproto_u16(&b, 0);
		sproto_u32(&b, m->term[i].index);
		sproto_u32(&b, m->term[i].tid);
	}
	return sproto_end(&b);
}

size_t sproto_put_metric_disable(void *mem, size_t cap, uint32_t id)
{
	struct sproto_buf b;

	sproto_begin(&b, mem, cap, SPROTO_METRIC_DISABLE);
	sproto_u32(&b, id);
	return sproto_end(&b);
}

size_t sproto_put_sampling(void *mem, size_t cap, uint64_t bucket_ns)
{
	struct sproto_buf b;

	sproto_begin(&b, mem, cap, SPROTO_SAMPLING);
	sproto_u64(&b, bucket_ns);
	return sproto_end(&b);
}

size_t sproto_put_bucket(void *mem, size_t cap, uint64_t width_ns)
{
	struct sproto_buf b;

	if (width_ns < SPROTO_MIN_BUCKET_NS || width_ns > SPROTO_MAX_BUCKET_NS)
		return 0;
	sproto_begin(&b, mem, cap, SPROTO_BUCKET);
	sproto_u64(&b, width_ns);
	return sproto_end(&b);
}

size_t sproto_put_empty(void *mem, size_t cap, uint16_t type)
{
	struct sproto_buf b;

	sproto_begin(&b, mem, cap, type);
	return sproto_end(&b);
}

size_t sproto_put_costs_reply(void *mem, size_t cap, const struct sproto_costs *c)
{
	struct sproto_buf b;
	uint32_t i;

	if (c->n > SPROTO_MAX_COSTS)
		return 0;
	sproto_begin(&b, mem, cap, SPROTO_COSTS_REPLY);
	put_uvar(&b, c->flags); /* version 10: varints (u32 u32 u64 u64, 12 bytes a figure before) */
	put_uvar(&b, c->n);
	put_uvar(&b, c->when_ns);
	put_uvar(&b, c->elapsed_ns);
	for (i = 0; i < c->n; i++) {
		put_uvar(&b, c->c[i].item);
		put_uvar(&b, c->c[i].mean_ps);
		put_uvar(&b, c->c[i].sd_ps);
	}
	return sproto_end(&b);
}

size_t sproto_put_profile_begin(void *mem, size_t cap, const char *dir)
{
	struct sproto_buf b;
	size_t n = strlen(dir), i;

	if (!n || n > SPROTO_MAX_PATH || dir[0] != '/')
		return 0;
	for (i = 0; i < n; i++)
		if (dir[i] == '\n' || dir[i] == '\r')
			return 0;
	sproto_begin(&b, mem, cap, SPROTO_PROFILE_BEGIN);
	sproto_u16(&b, (uint16_t)n);
	sproto_bytes(&b, dir, n);
	return sproto_end(&b);
}

size_t sproto_put_ok(void *mem, size_t cap, uint16_t request)
{
	struct sproto_buf b;

	if (!sproto_is_request(request))
		return 0;
	sproto_begin(&b, mem, cap, SPROTO_OK); /* version 10: empty (9: u8 its type; u16 before) */
	return sproto_end(&b);
}

size_t sproto_put_error(void *mem, size_t cap, uint16_t request, const char *text)
{
	struct sproto_buf b;
	size_t n = 0;

	while (text[n] && text[n] != '\n' && text[n] != '\r' && n < SPROTO_MAX_TEXT)
		n++;
	if (!n) {
		text = "error";
		n = 5;
	}
	sproto_begin(&b, mem, cap, SPROTO_ERROR);
	sproto_u16(&b, request);
	sproto_u16(&b, (uint16_t)n);
	sproto_bytes(&b, text, n);
	return sproto_end(&b);
}

void sproto_list_begin(struct sproto_buf *b, void *mem, size_t cap)
{
	sproto_begin(b, mem, cap, SPROTO_LIST_REPLY);
	b->count_at = b->len;
	sproto_u32(b, 0);
	sproto_u32(b, 0);
}

void sproto_list_add_module(struct sproto_buf *b, const struct sproto_module *m)
{
	size_t n = strlen(m->path);

	if (b->n2 || !n || n > SPROTO_MAX_PATH || m->build_id_len > SPROTO_MAX_BUILD_ID ||
	    m->lo > m->hi) {
		b->overflow = 1; /* modules come before threads; a module has a path */
		return;
	}
	sproto_u64(b, m->bias);
	sproto_u64(b, m->lo);
	sproto_u64(b, m->hi);
	sproto_u8(b, m->build_id_len);
	sproto_bytes(b, m->build_id, m->build_id_len);
	sproto_u16(b, (uint16_t)n);
	sproto_bytes(b, m->path, n);
	b->n1++;
}

void sproto_list_add_tid(struct sproto_buf *b, uint32_t tid)
{
	sproto_u32(b, tid);
	b->n2++;
}

static void put_uvar(struct sproto_buf *b, uint64_t v)
{
	do {
		sproto_u8(b, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v);
}

static void put_svar(struct sproto_buf *b, int64_t v)
{
	put_uvar(b, ((uint64_t)v << 1) ^ (uint64_t)-(int64_t)((uint64_t)v >> 63));
}

/* Version 10: the head `lost << 4 | last << 3 | mode << 1 | start given` (last and the mode set
 * by sproto_end: below lost's bits, so the head keeps its length), the start only when the
 * bucket does not begin at the previous end; a BUCKET_REPLY's width from its BUCKET's
 * (asked_ns). */
static void sample_begin(struct sproto_buf *b, void *mem, size_t cap, uint16_t type,
			 uint64_t asked_ns, uint64_t after_ns, uint64_t start_ns, uint64_t end_ns,
			 uint64_t lost)
{
	int given = !after_ns || after_ns != start_ns;

	sproto_begin(b, mem, cap, type);
	if (end_ns < start_ns || start_ns >> 63 || lost >> 59)
		b->overflow = 1;
	b->head_at = b->len;
	put_uvar(b, lost << 4 | (uint64_t)given);
	if (given && after_ns && after_ns <= start_ns)
		put_uvar(b, (start_ns - after_ns) << 1);
	else if (given)
		put_uvar(b, start_ns << 1 | 1);
	b->units = (sproto_sample_end(start_ns, end_ns) - start_ns) >> SPROTO_WIDTH_SHIFT;
	if (type == SPROTO_SAMPLE)
		put_uvar(b, b->units);
	else { /* version 10: from the ask, in quanta (sproto_bucket_end made it whole) */
		int64_t d = (int64_t)(b->units - asked_units(asked_ns));

		if (d % SPROTO_BUCKET_QUANTUM || asked_ns > SPROTO_MAX_BUCKET_NS)
			b->overflow = 1;
		put_svar(b, d / SPROTO_BUCKET_QUANTUM);
	}
	b->entries_at = b->len;
	b->ctx = NULL;
	b->all_last = 1;
}

void sproto_sample_context(struct sproto_buf *b, struct sproto_sctx *c)
{
	b->ctx = c;
	c->nnext = 0;
}

/* A keyed entry: its id from next (the previous keyed entry's + 1), its flags, d, its value. */
static void put_keyed(struct sproto_buf *b, const struct sproto_sample_entry *e, int64_t d,
		      uint32_t next)
{
	put_uvar(b, (uint64_t)(e->metric - next) << 3 | e->flags);
	put_svar(b, d);
	if (e->flags & SPROTO_S_VALUE)
		put_svar(b, e->value);
}

/* The delta written for an added entry: less the predicted one unless it is a first. */
/* The delta written for the entry written k-th (the ones before it in c->next and c->pend):
 * less the predicted one unless it is a first. */
static int64_t entry_d(const struct sproto_buf *b, const struct sproto_sample_entry *e,
		       uint32_t k)
{
	if (e->flags & SPROTO_S_FIRST)
		return e->delta;
	return (int64_t)((uint64_t)e->delta -
			 (uint64_t)predict_at(b->ctx, k, e->metric, b->units));
}

/* Which added entries the previous SAMPLE's metrics keep (unflagged but for `last`, same id):
 * c->mark[id] = entry + 1, | 0x8000 when kept; *dropped: the previous entries not kept (bit i;
 * 0 in *ok when one past the 64th is). The number kept. */
static uint32_t find_kept(struct sproto_sctx *c, uint32_t last, uint64_t *dropped, int *ok)
{
	uint32_t i, kept = 0;

	*dropped = 0;
	*ok = 1;
	for (i = 0; i < c->nnext; i++)
		c->mark[c->e[i].metric] = (uint16_t)(i + 1);
	for (i = 0; i < c->nprev; i++) {
		uint16_t *m = &c->mark[c->prev[i]];

		if (*m && !(c->e[(*m & 0x7fff) - 1].flags & ~last)) {
			*m |= 0x8000;
			kept++;
		} else if (i < 64) {
			*dropped |= 1ull << i;
		} else {
			*ok = 0;
		}
	}
	return kept;
}

/* The first of the previous SAMPLE's entries at or after index `from` that is kept (find_kept's
 * mark); c->nprev when none is. */
static uint32_t next_kept(const struct sproto_sctx *c, uint32_t from)
{
	while (from < c->nprev && !(c->mark[c->prev[from]] & 0x8000))
		from++;
	return from;
}

/* The code of a delta written (version 11): 1, 2, 3 for 0, +1, -1, else 0 (an svarint). */
static unsigned code_of(int64_t d)
{
	return d == 0 ? 1 : d == 1 ? 2 : d == -1 ? 3 : 0;
}

/* Modes same and kept: the kept entries' deltas, in the previous SAMPLE's order, after the
 * k keyed ones (version 11): their codes first (SPROTO_CODED), then the svarints of those
 * coded 0. Two passes: the first puts each entry in c->next and c->pend (the prediction of an
 * entry reads those before it only, so the second computes the same deltas). */
static void emit_kept(struct sproto_buf *b, uint32_t k)
{
	struct sproto_sctx *c = b->ctx;
	uint64_t codes = 0;
	uint32_t i, j, k0 = k;

	for (i = next_kept(c, 0), j = 0; i < c->nprev; i = next_kept(c, i + 1), j++) {
		const struct sproto_sample_entry *e = &c->e[(c->mark[c->prev[i]] & 0x7fff) - 1];

		if (j < SPROTO_CODED)
			codes |= (uint64_t)code_of(entry_d(b, e, k)) << 2 * j;
		c->next[k] = (uint16_t)e->metric;
		c->pend[k++] = e->delta;
	}
	put_uvar(b, codes);
	for (i = next_kept(c, 0), j = 0, k = k0; i < c->nprev; i = next_kept(c, i + 1), j++, k++) {
		int64_t d = entry_d(b, &c->e[(c->mark[c->prev[i]] & 0x7fff) - 1], k);

		if (j >= SPROTO_CODED || !code_of(d))
			put_svar(b, d);
	}
}

/* Version 10: the entries added in a context, written at the end in the shortest of the three
 * modes; the context's order becomes the order written. */
static void emit_entries(struct sproto_buf *b)
{
	struct sproto_sctx *c = b->ctx;
	uint32_t i, k = 0, n = c->nnext, next = 0, kept;
	uint64_t dropped;
	int ok, mode;

	uint32_t last = b->all_last && n ? SPROTO_S_LAST : 0; /* every entry's: said once, in the head */

	kept = find_kept(c, last, &dropped, &ok);
	mode = kept == n && kept == c->nprev && n ? 1 : ok && kept > 2 ? 2 : 0;
	b->len = b->entries_at;
	if (mode == 2) {
		put_uvar(b, dropped);
		put_uvar(b, n - kept);
	}
	for (i = 0; i < n && mode != 1; i++) /* keyed: all (mode 0), or those not kept */
		if (!mode || !(c->mark[c->e[i].metric] & 0x8000)) {
			struct sproto_sample_entry e = c->e[i];

			e.flags &= ~last;
			put_keyed(b, &e, entry_d(b, &c->e[i], k), next);
			next = c->e[i].metric + 1;
			c->next[k] = (uint16_t)c->e[i].metric;
			c->pend[k++] = c->e[i].delta;
		}
	if (mode)
		emit_kept(b, k);
	for (i = 0; i < n; i++)
		c->mark[c->e[i].metric] = 0;
	b->p[b->head_at] |= (uint8_t)(mode << 1 | (last ? 1 << 3 : 0));
}

uint64_t sproto_bucket_end(uint64_t start_ns, uint64_t end_ns, uint64_t asked_ns)
{
	int64_t w = (int64_t)((sproto_sample_end(start_ns, end_ns) - start_ns) >> SPROTO_WIDTH_SHIFT);
	int64_t a = (int64_t)asked_units(asked_ns), d = w - a;

	/* the least multiple not below d (C's division truncates: up for d < 0) */
	d = d > 0 ? (d + SPROTO_BUCKET_QUANTUM - 1) / SPROTO_BUCKET_QUANTUM : d / SPROTO_BUCKET_QUANTUM;
	return start_ns + ((uint64_t)(a + d * SPROTO_BUCKET_QUANTUM) << SPROTO_WIDTH_SHIFT);
}

uint64_t sproto_sample_end(uint64_t start_ns, uint64_t end_ns)
{
	uint64_t unit = 1ull << SPROTO_WIDTH_SHIFT, w = end_ns > start_ns ? end_ns - start_ns : 0;

	return start_ns + (w + unit - 1) / unit * unit;
}

void sproto_sample_begin(struct sproto_buf *b, void *mem, size_t cap, uint64_t after_ns,
			 uint64_t start_ns, uint64_t end_ns, uint64_t lost)
{
	sample_begin(b, mem, cap, SPROTO_SAMPLE, 0, after_ns, start_ns, end_ns, lost);
}

void sproto_bucket_reply_begin(struct sproto_buf *b, void *mem, size_t cap, uint64_t asked_ns,
			       uint64_t after_ns, uint64_t start_ns, uint64_t end_ns,
			       uint64_t lost)
{
	sample_begin(b, mem, cap, SPROTO_BUCKET_REPLY, asked_ns, after_ns, start_ns, end_ns,
		     lost);
}

/* b->n2: the next metric id an entry may have (the previous one's + 1). In a context the entry
 * is kept and written by sproto_end (emit_entries). */
void sproto_sample_add(struct sproto_buf *b, const struct sproto_sample_entry *e)
{
	struct sproto_sctx *c = b->ctx;
	uint32_t next = b->n2;

	if (e->metric >= SPROTO_MAX_METRICS || e->metric < b->n2 || (e->flags & ~SPROTO_S_FLAGS)) {
		b->overflow = 1;
		return;
	}
	b->n2 = e->metric + 1;
	b->n1++;
	b->all_last = b->all_last && (e->flags & SPROTO_S_LAST);
	if (c) {
		c->e[c->nnext++] = *e;
		return;
	}
	put_keyed(b, e, e->delta, next);
}

size_t sproto_put_resources(void *mem, size_t cap, uint32_t kinds)
{
	struct sproto_buf b;
	uint32_t all = (1u << SPROTO_OBJ_KINDS) - 1;

	if (!(kinds & all) || (kinds & ~all & ~SPROTO_RES_NEW))
		return 0;
	sproto_begin(&b, mem, cap, SPROTO_RESOURCES);
	sproto_u32(&b, kinds);
	return sproto_end(&b);
}

void sproto_objects_begin(struct sproto_buf *b, void *mem, size_t cap, uint32_t slots,
			  const uint64_t dropped[SPROTO_OBJ_KINDS])
{
	uint32_t k;

	uint64_t mask = 0;

	sproto_begin(b, mem, cap, SPROTO_RESOURCES_REPLY);
	b->count_at = b->len;
	sproto_u8(b, 0); /* the count: a uvarint, widened by sproto_end when it takes more */
	put_uvar(b, slots);
	b->n2 = slots;
	b->last = 0;
	b->last_kind = 0;
	for (k = 0; k < SPROTO_OBJ_KINDS; k++) /* version 10: the kinds that dropped some */
		mask |= (uint64_t)(dropped[k] != 0) << k;
	put_uvar(b, mask);
	for (k = 0; k < SPROTO_OBJ_KINDS; k++)
		if (dropped[k])
			put_uvar(b, dropped[k]);
}

/* The reader's rules, kept by the writer too: a refused entry makes the message 0. */
void sproto_objects_add(struct sproto_buf *b, const struct sproto_object *e)
{
	int same = b->n1 && e->kind == b->last_kind;

	if (e->kind >= SPROTO_OBJ_KINDS || !e->addr || e->addr >= SPROTO_OBJ_ADDR_LIMIT ||
	    (!e->uses && !e->inits) || b->n1 >= b->n2 || b->n1 >= SPROTO_MAX_OBJECTS ||
	    (b->n1 && (e->kind < b->last_kind || (same && e->addr <= b->last)))) {
		b->overflow = 1;
		return;
	}
	put_uvar(b, e->kind - (b->n1 ? b->last_kind : 0));
	put_uvar(b, same ? e->addr - b->last : e->addr);
	put_uvar(b, e->uses);
	put_uvar(b, e->inits);
	put_uvar(b, e->site);
	b->last = e->addr;
	b->last_kind = e->kind;
	b->n1++;
}

void sproto_batch_begin(struct sproto_buf *b, void *mem, size_t cap)
{
	sproto_begin(b, mem, cap, SPROTO_BATCH);
	b->count_at = b->len;
	sproto_u16(b, 0);
}

void sproto_batch_quiet(void *msg, size_t len)
{
	uint8_t *p = msg;

	if (len >= SPROTO_HEADER_SIZE + 2 && get_le(p + 6, 2) == SPROTO_BATCH)
		p[SPROTO_HEADER_SIZE + 1] |= SPROTO_BATCH_QUIET >> 8; /* the count's high byte */
}

void sproto_batch_add(struct sproto_buf *b, const void *msg, size_t len)
{
	const uint8_t *p = msg;
	uint16_t type;
	uint64_t n;

	if (len < SPROTO_HEADER_SIZE || b->n1 >= SPROTO_MAX_BATCH) {
		b->overflow = 1;
		return;
	}
	type = (uint16_t)get_le(p + 6, 2);
	n = get_le(p + 8, 4);
	if (get_le(p, 4) != SPROTO_MAGIC || !sproto_batchable(type) || n > 0xffff ||
	    n != len - SPROTO_HEADER_SIZE) {
		b->overflow = 1;
		return;
	}
	sproto_u8(b, (uint8_t)type);
	sproto_u16(b, (uint16_t)n);
	sproto_bytes(b, p + SPROTO_HEADER_SIZE, (size_t)n);
	b->n1++;
}
