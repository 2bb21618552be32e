/*
 * The patcher's test corpus (tests/unit/test_patch.c): small functions whose machine code has
 * what entry patching must handle — recursion, loops whose branches go back near the entry,
 * switches compiled to jump tables, RIP-relative globals in the first instructions, tail calls,
 * very short functions, calls through pointers. Built as one shared object per compiler,
 * optimisation level and flavour (tests/tests.mk), with patch_corpus_asm.S beside it.
 *
 * Every exported function is `long pc_NAME(long a, long b, long c, long d)`: the test calls each
 * with several inputs, c always the address of a callback `long cb(long)`, d a small count.
 * Results must not depend on anything but the arguments and the constant tables.
 */
typedef long (*pc_cb)(long);

long pc_fib(long a, long b, long c, long d);
long pc_fact_tail(long a, long b, long c, long d);
long pc_count_bits(long a, long b, long c, long d);
long pc_gcd(long a, long b, long c, long d);
long pc_sub_loop(long a, long b, long c, long d);
long pc_switch(long a, long b, long c, long d);
long pc_switch_loop(long a, long b, long c, long d);
long pc_global(long a, long b, long c, long d);
long pc_global_static(long a, long b, long c, long d);
long pc_global_write(long a, long b, long c, long d);
long pc_tail(long a, long b, long c, long d);
long pc_tail_ptr(long a, long b, long c, long d);
long pc_call_ptr(long a, long b, long c, long d);
long pc_calls(long a, long b, long c, long d);
long pc_ident(long a, long b, long c, long d);
long pc_zero(long a, long b, long c, long d);
long pc_add(long a, long b, long c, long d);
long pc_ackermann(long a, long b, long c, long d);
long pc_string(long a, long b, long c, long d);
long pc_float(long a, long b, long c, long d);
long pc_many_args(long a, long b, long c, long d);
long pc_while_entry(long a, long b, long c, long d);
long pc_mutual(long a, long b, long c, long d);

long pc_global_table[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
static const long pc_static_table[8] = { 2, 7, 1, 8, 2, 8, 1, 8 };
static long pc_scratch;
long pc_exported_scratch;

/* Naive recursion: many calls, deep stacks. */
long pc_fib(long a, long b, long c, long d)
{
	long n = a & 15;

	if (n < 2)
		return n + (b & 1);
	return pc_fib(n - 1, b, c, d) + pc_fib(n - 2, b, c, d);
}

/* Tail recursion: compilers turn it into a loop that jumps back near the entry. */
long pc_fact_tail(long a, long b, long c, long d)
{
	if ((a & 15) <= 1)
		return b;
	return pc_fact_tail((a & 15) - 1, b * (a & 15) + 1, c, d);
}

long pc_count_bits(long a, long b, long c, long d)
{
	unsigned long x = (unsigned long)a;
	long n = 0;

	(void)c;
	(void)d;
	while (x) {
		n += (long)(x & 1);
		x >>= 1;
	}
	return n + b;
}

long pc_gcd(long a, long b, long c, long d)
{
	unsigned long x = (unsigned long)a | 1, y = (unsigned long)b | 2;

	(void)c;
	(void)d;
	while (y) {
		unsigned long t = x % y;

		x = y;
		y = t;
	}
	return (long)x;
}

/* The loop is the whole function: its head sits right at the entry. */
long pc_sub_loop(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	b = (b & 7) + 1;
	a &= 1023;
	while (a > b)
		a -= b;
	return a;
}

/* Dense cases: a jump table. */
long pc_switch(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	switch (a & 15) {
	case 0: return b + 1;
	case 1: return b * 3;
	case 2: return b - 7;
	case 3: return b ^ 0x55;
	case 4: return b << 2;
	case 5: return b >> 1;
	case 6: return -b;
	case 7: return b * b;
	case 8: return b + 100;
	case 9: return b & 0xf0;
	default: return 42;
	}
}

/* A switch inside a loop: table targets branch back to the loop head. */
long pc_switch_loop(long a, long b, long c, long d)
{
	long acc = 0;
	long i;

	(void)c;
	for (i = 0; i < (d & 7) + 3; i++) {
		switch ((a + i) & 7) {
		case 0: acc += b; break;
		case 1: acc -= 3; break;
		case 2: acc *= 2; break;
		case 3: acc ^= i; break;
		case 4: acc += i * b; break;
		case 5: acc -= b; break;
		case 6: acc += 11; break;
		default: acc |= 1; break;
		}
	}
	return acc;
}

/* RIP-relative loads of globals in the first instructions (through the GOT when exported). */
long pc_global(long a, long b, long c, long d)
{
	(void)b;
	(void)c;
	(void)d;
	return pc_global_table[a & 7];
}

long pc_global_static(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	return pc_static_table[a & 7] + b;
}

/* Writes a global first, reads it back. */
long pc_global_write(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	pc_scratch = a;
	pc_exported_scratch = b;
	return pc_scratch * 2 + pc_exported_scratch;
}

static __attribute__((noinline)) long pc_helper(long a, long b)
{
	return a * 7 + b;
}

/* A tail call to a local function: `jmp pc_helper`. */
long pc_tail(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	return pc_helper(a + 1, b);
}

/* A tail call through a pointer: `jmp *%rdx`. */
long pc_tail_ptr(long a, long b, long c, long d)
{
	(void)b;
	(void)d;
	return ((pc_cb)c)(a + 1);
}

/* A call through a pointer that is not a tail call. */
long pc_call_ptr(long a, long b, long c, long d)
{
	(void)d;
	return ((pc_cb)c)(a) * 3 + ((pc_cb)c)(b);
}

/* Several direct calls: call sites to patch. */
long pc_calls(long a, long b, long c, long d)
{
	long r = pc_helper(a, b);

	r += pc_fib(a & 7, b, c, d);
	r += pc_helper(r, 1);
	return r + pc_count_bits(r, 0, c, d);
}

/* Very short functions. */
long pc_ident(long a, long b, long c, long d)
{
	(void)b;
	(void)c;
	(void)d;
	return a;
}

long pc_zero(long a, long b, long c, long d)
{
	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return 0;
}

long pc_add(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	return a + b;
}

static long pc_ack(long m, long n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return pc_ack(m - 1, 1);
	return pc_ack(m - 1, pc_ack(m, n - 1));
}

long pc_ackermann(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	return pc_ack(a & 1, b & 3) + pc_ack(2, a & 1);
}

/* String constants and a byte loop. */
long pc_string(long a, long b, long c, long d)
{
	static const char text[] = "the quick brown fox jumps over the lazy dog";
	long h = b;
	unsigned long i;

	(void)c;
	(void)d;
	for (i = 0; i < sizeof(text) - 1; i++)
		h = h * 31 + text[(i + (unsigned long)a) % (sizeof(text) - 1)];
	return h;
}

/* Floating point: SSE registers live across the entry (the handler must not touch them). */
static __attribute__((noinline)) double pc_scale(double x, double y)
{
	return x * 1.5 + y;
}

long pc_float(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	return (long)(pc_scale((double)a, (double)b) * 4.0);
}

static __attribute__((noinline)) long pc_six(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

long pc_many_args(long a, long b, long c, long d)
{
	(void)c;
	return pc_six(a, b, d, a - b, b - d, 7);
}

/* A do-while loop at the very entry, no prologue before its head at -O2. */
long pc_while_entry(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	a &= 255;
	do {
		a = a / 2 + b;
	} while (a > 64);
	return a;
}

static long pc_odd(long n);

static __attribute__((noinline)) long pc_even(long n)
{
	return n == 0 ? 1 : pc_odd(n - 1);
}

static __attribute__((noinline)) long pc_odd(long n)
{
	return n == 0 ? 0 : pc_even(n - 1);
}

/* Mutual recursion through two static functions. */
long pc_mutual(long a, long b, long c, long d)
{
	(void)c;
	(void)d;
	return pc_even(a & 31) * 10 + pc_odd(b & 15);
}
