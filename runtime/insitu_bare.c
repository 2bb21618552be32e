/* SPDX-License-Identifier: MIT */
/*
 * Bare windows for `--insitu` (insitu.c; docs/measurement.md, "The probes' price in situ"):
 * the hot function's own calls of the probes are taken out of its machine code for one window,
 * so that its calls run as in an uninstrumented build, and put back after.
 *
 * gcc's -finstrument-functions code calls __cyg_profile_func_enter once, in the function's
 * prologue, and __cyg_profile_func_exit before each return: direct calls (e8 rel32, through the
 * PLT; ff 15 through the GOT with -fno-plt). The enter call is the first call in the function's
 * first bytes that reaches the probe; each exit call is the call just before where the exit
 * probe returns, seen at the function's periodic checks (so no decoder is needed, and no call
 * of another function's is ever taken for one). In a bare window the enter call becomes a NOP
 * of the same length and each exit call a call of a stub near the code (a page mapped within
 * rel32 reach), which counts the window's calls down in a thread-local counter and, at zero,
 * jumps to the runtime's end of the window. So the window's calls cost what the uninstrumented
 * function costs, plus the stub's call, decrement and return. An exit the window missed reaches
 * the probe with no frame: the pair is dropped and the site learned (insitu.c).
 *
 * Only the function's own body is rewritten: an exit whose call lies in other code (a copy of
 * the function inlined into a caller, with its own probe calls) is no site of it. Calls through
 * such a copy keep their probes in a bare window: one that exits with no frame is a stray (the
 * pair is dropped); one on a call path of its own is measured inside the window, which then
 * costs more, and the price comes out low by its share.
 *
 * Only a function that no other thread has called gets bare windows (rt_func.caller): a thread
 * that calls it for the first time during one runs it uncounted and unmeasured (its enter is
 * gone, the stub's counter is its own).
 */
#include "rt.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define ENTER_BYTES 128    /* the enter probe's call is in the function's prologue */
#define BODY_BYTES 65536ul /* the exit calls lie within this much after it */
#define PAGE 4096ul
#define STUB_RANGE (1l << 30) /* the stub lies within 1 GiB of the code: rel32 reaches it */

static RT_TLS int64_t bare_left; /* this thread's calls still to come in its bare window */

static int32_t rd32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * The 8 bytes at `at`, or 0 where nothing is mapped: a GOT slot named by bytes that only look
 * like an instruction (the scans go byte by byte) may point anywhere, so it is read through the
 * kernel, which answers EFAULT instead of a fault.
 */
static uint64_t peek64(uintptr_t at)
{
	uint64_t v = 0;
	struct iovec mine = { &v, sizeof(v) }, there = { (void *)at, sizeof(v) };

	if (process_vm_readv(getpid(), &mine, 1, &there, 1, 0) != (ssize_t)sizeof(v))
		return 0;
	return v;
}

/* Where a PLT entry at t jumps (jmp *GOT(%rip), after endbr64 and bnd where present); or t. */
static uintptr_t through_plt(uintptr_t t, const struct rt_module *m)
{
	const uint8_t *q = (const uint8_t *)t;

	if (t < m->lo || t + 16 > m->hi)
		return t;
	if (q[0] == 0xf3 && q[1] == 0x0f && q[2] == 0x1e && q[3] == 0xfa)
		q += 4;
	if (q[0] == 0xf2)
		q++;
	if (q[0] == 0xff && q[1] == 0x25)
		return (uintptr_t)peek64((uintptr_t)q + 6 + (uintptr_t)(intptr_t)rd32(q + 2));
	return t;
}

/* The call at p (its length in *len): the address it reaches, or 0 when p is no such call. */
static uintptr_t call_target(uintptr_t p, const struct rt_module *m, uint8_t *len)
{
	const uint8_t *q = (const uint8_t *)p;

	if (q[0] == 0xe8) {
		*len = 5;
		return through_plt(p + 5 + (uintptr_t)(intptr_t)rd32(q + 1), m);
	}
	if (q[0] == 0xff && q[1] == 0x15) {
		*len = 6;
		return (uintptr_t)peek64(p + 6 + (uintptr_t)(intptr_t)rd32(q + 2));
	}
	return 0;
}

static void add_site(struct rt_bare_site *s, uintptr_t at, uint8_t len)
{
	s->at = at;
	s->len = len;
	memcpy(s->old, (const void *)at, len);
}

/* The enter probe's call: the first call in the function's first bytes that reaches it. */
static int find_enter(struct rt_bare *b, uintptr_t fn, const struct rt_module *m)
{
	uintptr_t end = fn + ENTER_BYTES < m->hi - 8 ? fn + ENTER_BYTES : m->hi - 8, p;
	uint8_t len;

	for (p = fn; p < end; p++)
		if (call_target(p, m, &len) == (uintptr_t)rt_probe_enter) {
			add_site(&b->enter, p, len);
			return 0;
		}
	return -1;
}

/*
 * Is the call at `at` in the function's own body: after its enter call, with no other
 * function's enter call in between? (A copy of the function inlined into a caller has its own
 * probe calls, in the caller's code: not these.)
 */
static int in_body(const struct rt_bare *b, uintptr_t at, const struct rt_module *m)
{
	uintptr_t p;
	uint8_t len;

	if (at <= b->enter.at || at - b->enter.at > BODY_BYTES)
		return 0;
	for (p = b->enter.at + b->enter.len; p < at; p++)
		if (call_target(p, m, &len) == (uintptr_t)rt_probe_enter)
			return 0;
	return 1;
}

/*
 * An exit call site, from where the exit probe returns (ret): the call before it must reach
 * the exit probe. Sites are learned as the function's exits reach the probe: its periodic
 * checks, and an exit a bare window missed (insitu.c). 1 when new, 0 known, -1 not a site.
 */
int rt_bare_note_exit(struct rt_bare *b, uintptr_t ret)
{
	const struct rt_module *m = b->module;
	uint32_t i;
	uint8_t len;

	if (!m || ret < m->lo + 6 || ret > m->hi - 8)
		return -1;
	for (i = 0; i < b->nexits; i++)
		if (b->exits[i].at + b->exits[i].len == ret)
			return 0;
	for (len = 5; len <= 6; len++) {
		uint8_t got;

		if (call_target(ret - len, m, &got) == (uintptr_t)rt_probe_exit && got == len &&
		    in_body(b, ret - len, m)) {
			if (b->nexits == RT_BARE_EXITS)
				return -1;
			add_site(&b->exits[b->nexits++], ret - len, len);
			return 1;
		}
	}
	return -1;
}

/*
 * The stub: decq %fs:off (this thread's bare_left); jz to the end; ret. The end is reached
 * with jmp *addr(%rip), as a tail call from the exit site's call: the stack as at any call.
 */
static int write_stub(uint8_t *s, void (*end)(void))
{
	uintptr_t fs, off;
	uint64_t to = (uint64_t)(uintptr_t)end;

	__asm__("mov %%fs:0, %0" : "=r"(fs));
	off = (uintptr_t)&bare_left - fs;
	if ((intptr_t)off != (intptr_t)(int32_t)off)
		return -1;
	memcpy(s, "\x64\x48\xff\x0c\x25", 5); /* decq %fs:disp32 */
	memcpy(s + 5, &(int32_t){ (int32_t)off }, 4);
	memcpy(s + 9, "\x74\x01\xc3\xff\x25\x00\x00\x00\x00", 9); /* jz +1; ret; jmp *0(%rip) */
	memcpy(s + 18, &to, 8);
	return 0;
}

/* A page within rel32 reach of [lo, hi), with the stub in it: its address, or 0. */
static uintptr_t map_stub(uintptr_t lo, uintptr_t hi, void (*end)(void))
{
	uintptr_t step = 16ul << 20, k;

	lo &= ~(PAGE - 1);
	hi = (hi + PAGE - 1) & ~(PAGE - 1);
	for (k = 1; k <= 64; k++) {
		uintptr_t want = k & 1 ? lo - (k + 1) / 2 * step : hi + k / 2 * step;
		void *p = mmap((void *)want, PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p == MAP_FAILED)
			continue;
		if ((intptr_t)((uintptr_t)p - lo) > -STUB_RANGE &&
		    (intptr_t)((uintptr_t)p - hi) < STUB_RANGE && write_stub(p, end) == 0 &&
		    mprotect(p, PAGE, PROT_READ | PROT_EXEC) == 0)
			return (uintptr_t)p;
		munmap(p, PAGE);
	}
	return 0;
}

/*
 * What a call of the stub costs, ns: the fastest of 5 loops of 256 calls. An upper bound of
 * what it adds to a call in situ, where the function's own work may hide it.
 */
static double stub_cost(uintptr_t stub)
{
	void (*volatile call)(void) = (void (*)(void))stub;
	uint64_t best = UINT64_MAX;
	int i, k;

	bare_left = INT64_MAX; /* never reaches 0 here */
	for (k = 0; k < 5; k++) {
		uint64_t t0 = rt_now(), d;

		for (i = 0; i < 256; i++)
			call();
		d = rt_now() - t0;
		if (d < best)
			best = d;
	}
	bare_left = 0;
	return (double)best / rt_ticks_per_ns() / 256;
}

int rt_bare_prepare(struct rt_bare *b, const struct rt_func *f, void (*end)(void))
{
	const struct rt_module *m = f->module >= 0 ? rt_module_at((uint32_t)f->module) : NULL;

	memset(b, 0, sizeof(*b));
	b->state = -1;
	if (!m || f->addr < m->lo || f->addr + ENTER_BYTES >= m->hi || find_enter(b, f->addr, m))
		return -1;
	b->stub = map_stub(f->addr, f->addr + BODY_BYTES, end);
	if (!b->stub)
		return -1;
	b->module = m;
	b->stub_ns = stub_cost(b->stub);
	b->state = 1;
	return 0;
}

/*
 * The code is written through /proc/self/mem, which writes read-only pages as a debugger does:
 * no page changes its protection, so threads rewriting sites on one page never race.
 */
static int code_open(void)
{
	return open("/proc/self/mem", O_RDWR | O_CLOEXEC);
}

static int code_write(int fd, uintptr_t at, const void *bytes, size_t len)
{
	return pwrite(fd, bytes, len, (off_t)at) == (ssize_t)len ? 0 : -1;
}

/*
 * The bytes of a call of `to` that ends where the site's call ends: a 6-byte site gets a NOP
 * first, so that a return into it, before or after it is put back, lands on an instruction.
 */
static void call_bytes(const struct rt_bare_site *s, uintptr_t to, uint8_t out[6])
{
	int32_t rel = (int32_t)(to - (s->at + s->len));

	out[0] = 0x90;
	out[s->len - 5] = 0xe8;
	memcpy(out + s->len - 4, &rel, 4);
}

/* Every site back as it was; 0, or -1 when the code could not be written. */
static int restore(struct rt_bare *b, int fd)
{
	int bad = code_write(fd, b->enter.at, b->enter.old, b->enter.len);
	uint32_t i;

	for (i = 0; i < b->nexits; i++)
		bad |= code_write(fd, b->exits[i].at, b->exits[i].old, b->exits[i].len);
	return bad;
}

/* The calls still to come in this thread's bare window. */
int64_t rt_bare_left(void)
{
	return bare_left;
}

int rt_bare_begin(struct rt_bare *b, int64_t calls)
{
	static const uint8_t nop[2][6] = { { 0x0f, 0x1f, 0x44, 0x00, 0x00 },
					   { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 } };
	uint8_t bytes[6];
	uint32_t i;
	int fd, bad = 0;

	if (b->state != 1 || !b->nexits || (fd = code_open()) < 0)
		return b->state = -1, -1;
	bare_left = calls;
	for (i = 0; i < b->nexits; i++) { /* the exits first: no call is left without one */
		call_bytes(&b->exits[i], b->stub, bytes);
		bad |= code_write(fd, b->exits[i].at, bytes, b->exits[i].len);
	}
	bad |= code_write(fd, b->enter.at, nop[b->enter.len == 6], b->enter.len);
	if (bad) {
		restore(b, fd);
		b->state = -1;
	}
	close(fd);
	b->active = !bad;
	return bad ? -1 : 0;
}

void rt_bare_end(struct rt_bare *b)
{
	int fd;

	bare_left = 0;
	if (!b->active)
		return;
	fd = code_open();
	if (fd >= 0 && restore(b, fd) == 0)
		b->active = 0;
	if (fd >= 0)
		close(fd);
}
