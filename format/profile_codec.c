/* SPDX-License-Identifier: MIT */
/*
 * Primitive encoders and decoders for the profile format. Used inside the measured process by
 * the writer, so: no malloc, no stdio, no locale, nothing that is not async-signal-safe.
 */
#include "profile.h"

#include <string.h>

/* Append raw bytes; on overflow mark the buffer and keep nothing. */
static void put_bytes(struct sprof_buf *b, const void *src, size_t n)
{
	if (b->error || n > b->cap - b->len) {
		b->error = 1;
		return;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

/* Take n bytes from the buffer, or NULL (and a sticky error) when fewer remain. */
static const uint8_t *get_bytes(struct sprof_buf *b, size_t n)
{
	const uint8_t *at;

	if (b->error || n > b->cap - b->len) {
		b->error = 1;
		return NULL;
	}
	at = b->p + b->len;
	b->len += n;
	return at;
}

/* x86-64 is little-endian like the format, so values are copied as they are. */
void sprof_put_u16(struct sprof_buf *b, uint16_t v) { put_bytes(b, &v, sizeof(v)); }
void sprof_put_u32(struct sprof_buf *b, uint32_t v) { put_bytes(b, &v, sizeof(v)); }
void sprof_put_u64(struct sprof_buf *b, uint64_t v) { put_bytes(b, &v, sizeof(v)); }
void sprof_put_f64(struct sprof_buf *b, double v) { put_bytes(b, &v, sizeof(v)); }

/* Strings are a u32 length and the bytes, no terminator; longer ones are cut. */
void sprof_put_str(struct sprof_buf *b, const char *s, size_t n)
{
	if (n > SPROF_MAX_STR)
		n = SPROF_MAX_STR;
	sprof_put_u32(b, (uint32_t)n);
	put_bytes(b, s, n);
}

void sprof_put_header(struct sprof_buf *b, uint32_t features)
{
	put_bytes(b, SPROF_MAGIC, 8);
	sprof_put_u16(b, SPROF_VERSION);
	sprof_put_u16(b, SPROF_MIN_VERSION);
	sprof_put_u32(b, features);
	sprof_put_u64(b, 0);
	sprof_put_u64(b, 0);
}

void sprof_put_calib(struct sprof_buf *b, const struct sprof_calib *c)
{
	sprof_put_u32(b, c->clock_kind);
	sprof_put_u32(b, c->samples);
	sprof_put_f64(b, c->ticks_per_ns);
	sprof_put_f64(b, c->clock_ns);
	sprof_put_f64(b, c->clock_sd);
	sprof_put_f64(b, c->dt_ns);
	sprof_put_f64(b, c->o_in);
	sprof_put_f64(b, c->o_in_sd);
	sprof_put_f64(b, c->o_full);
	sprof_put_f64(b, c->o_full_sd);
	sprof_put_f64(b, c->o_skip);
	sprof_put_f64(b, c->o_skip_sd);
}

uint16_t sprof_get_u16(struct sprof_buf *b)
{
	uint16_t v = 0;
	const uint8_t *at = get_bytes(b, sizeof(v));

	if (at)
		memcpy(&v, at, sizeof(v));
	return v;
}

uint32_t sprof_get_u32(struct sprof_buf *b)
{
	uint32_t v = 0;
	const uint8_t *at = get_bytes(b, sizeof(v));

	if (at)
		memcpy(&v, at, sizeof(v));
	return v;
}

uint64_t sprof_get_u64(struct sprof_buf *b)
{
	uint64_t v = 0;
	const uint8_t *at = get_bytes(b, sizeof(v));

	if (at)
		memcpy(&v, at, sizeof(v));
	return v;
}

double sprof_get_f64(struct sprof_buf *b)
{
	double v = 0;
	const uint8_t *at = get_bytes(b, sizeof(v));

	if (at)
		memcpy(&v, at, sizeof(v));
	return v;
}

const char *sprof_get_str(struct sprof_buf *b, uint32_t *n)
{
	uint32_t len = sprof_get_u32(b);
	const uint8_t *at;

	if (len > SPROF_MAX_STR)
		b->error = 1;
	at = get_bytes(b, len);
	*n = at ? len : 0;
	return at ? (const char *)at : "";
}

void sprof_get_calib(struct sprof_buf *b, struct sprof_calib *c)
{
	c->clock_kind = sprof_get_u32(b);
	c->samples = sprof_get_u32(b);
	c->ticks_per_ns = sprof_get_f64(b);
	c->clock_ns = sprof_get_f64(b);
	c->clock_sd = sprof_get_f64(b);
	c->dt_ns = sprof_get_f64(b);
	c->o_in = sprof_get_f64(b);
	c->o_in_sd = sprof_get_f64(b);
	c->o_full = sprof_get_f64(b);
	c->o_full_sd = sprof_get_f64(b);
	c->o_skip = sprof_get_f64(b);
	c->o_skip_sd = sprof_get_f64(b);
}
