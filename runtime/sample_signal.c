/* SPDX-License-Identifier: MIT */
/*
 * The sampling signal: its handler takes the interrupted instruction from the ucontext and the
 * callers by the frame-pointer chain, and counts the stack in the table (sample_table.c).
 *
 * The signal is a real-time one the program is unlikely to use (SIGRTMAX-2). The program still
 * owns it: sigaction() and signal() are interposed for that one number, so the program sees and
 * sets its own disposition as if we were not there, and our handler passes every instance that
 * is not one of our timers' (si_code SI_TIMER with our value) on to what the program set —
 * including the default action (termination) and SIG_IGN. Other signals go straight through.
 */
#include "sample.h"
#include "dyn/dyn.h"

#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);

#define MAX_SPANS 64
#define STACK_MAX (1ull << 30) /* a thread's stack is smaller; beyond, the bounds are wrong */

extern RT_TLS struct smp_thread *smp_self;
extern _Atomic int smp_sampling;

static sigaction_fn real_sigaction;
static struct sigaction prog_act; /* the program's disposition of the sampling signal */

/* Code spans of the modules loaded at start: a frame's return address must point into one. */
static struct {
	uintptr_t lo, hi;
} spans[MAX_SPANS];
static uint32_t nspans;

static int call_real(int signo, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction)
		real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	return real_sigaction(signo, act, old);
}

/* Whether the bytes before `ret` end with a call instruction: e8 rel32, or ff /2 (indirect). */
static int after_call(const uint8_t *r)
{
	int k;

	if (r[-5] == 0xe8)
		return 1;
	for (k = 2; k <= 7; k++)
		if (r[-k] == 0xff && ((r[-k + 1] >> 3) & 7) == 2)
			return 1;
	return 0;
}

/* A plausible return address: in a module's code, just after a call. Rejects garbage chains. */
static int is_return(uintptr_t ret)
{
	uint32_t i;

	for (i = 0; i < nspans; i++)
		if (ret >= spans[i].lo + 8 && ret < spans[i].hi)
			return after_call((const uint8_t *)ret);
	return 0;
}

/*
 * Under dynamic instrumentation a hooked call's return address is the return trampoline's; the
 * real one is on the thread's shadow stack (dyn/dyn.h), found by the stack slot it came from.
 * 0 when it is not there (the walk ends).
 */
static uintptr_t real_return(uintptr_t ret, uintptr_t slot)
{
	const struct dyn_thread *d = dyn_self;
	uint32_t i;

	if (ret != (uintptr_t)dyn_ret_tramp_local)
		return ret;
	if (!d)
		return 0;
	for (i = d->depth < DYN_SHADOW ? d->depth : DYN_SHADOW; i-- > 0;)
		if ((uintptr_t)d->frames[i].slot == slot)
			return (uintptr_t)d->frames[i].ret;
	return 0;
}

/*
 * The interrupted function may have no frame of its own (a leaf compiled without one, or one
 * stopped at its first instruction): then the frame pointer is still its caller's, and the
 * caller would be missed. Its return address is then the word at the stack pointer; a word
 * there is taken for one only when it follows a direct call whose target lies at most 64 KiB
 * before the interrupted instruction (a stale value left in a local slot hardly does).
 */
static int leaf_return(uintptr_t sp, uintptr_t hi, uintptr_t pc, uintptr_t *ret)
{
	const uint8_t *r;
	int32_t rel;
	uintptr_t target;

	if (sp + 8 > hi || (sp & 7))
		return 0;
	*ret = real_return(*(const uintptr_t *)sp, sp);
	if (!is_return(*ret))
		return 0;
	r = (const uint8_t *)*ret;
	if (r[-5] != 0xe8)
		return 0;
	memcpy(&rel, r - 4, 4);
	target = *ret + (uintptr_t)(intptr_t)rel;
	return target <= pc && pc - target < 65536;
}

/*
 * pcs[0] is the interrupted instruction, then return addresses outwards. Memory is read only
 * between the interrupted stack pointer and the top of the thread's stack (always mapped), each
 * frame above the last, so a garbage frame pointer (code built without frame pointers) ends the
 * walk instead of faulting.
 */
static uint32_t walk(const struct smp_thread *t, const ucontext_t *uc, uint64_t *pcs, int *cut)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t fp = (uintptr_t)g[REG_RBP], lo = (uintptr_t)g[REG_RSP], hi = t->stack_hi;
	uintptr_t ret;
	uint32_t n = 0;

	pcs[n++] = (uint64_t)g[REG_RIP];
	if (lo < t->stack_lo || lo >= hi || hi - lo > STACK_MAX)
		return n; /* not on the thread's own stack (an alternate signal stack, a coroutine) */
	if (leaf_return(lo, hi, (uintptr_t)g[REG_RIP], &ret))
		pcs[n++] = ret;
	while (fp >= lo && fp <= hi - 16 && !(fp & 7)) {
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t r = real_return(f[1], fp + 8);

		if (!is_return(r))
			break;
		if (n == SMP_MAX_DEPTH) {
			*cut = 1;
			break;
		}
		pcs[n++] = r;
		lo = fp + 16;
		fp = f[0];
	}
	return n;
}

static void take_sample(struct smp_thread *t, void *ctx, uint64_t periods)
{
	uint64_t pcs[SMP_MAX_DEPTH];
	int cut = 0;
	uint32_t n = walk(t, ctx, pcs, &cut);

	t->samples++;
	t->periods += periods;
	t->truncated += (uint64_t)cut;
	if (smp_table_add(t->index, pcs, n, periods) != 0)
		t->dropped++;
}

/* The program's disposition, for an instance of the signal that is not ours. */
static void pass_on(int signo, siginfo_t *si, void *ctx)
{
	struct sigaction p = prog_act;

	if (p.sa_flags & SA_SIGINFO) {
		if (p.sa_flags & SA_RESETHAND)
			prog_act.sa_handler = SIG_DFL;
		p.sa_sigaction(signo, si, ctx);
	} else if (p.sa_handler == SIG_DFL) { /* a real-time signal's default: termination */
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		rt_write_profile(SPROF_END_SIGNAL, signo);
		call_real(signo, &dfl, NULL);
		raise(signo); /* delivered when this handler returns */
	} else if (p.sa_handler != SIG_IGN) {
		if (p.sa_flags & SA_RESETHAND)
			prog_act.sa_handler = SIG_DFL;
		p.sa_handler(signo);
	}
}

static void on_signal(int signo, siginfo_t *si, void *ctx)
{
	struct smp_thread *t = smp_self;

	if (!t || si->si_code != SI_TIMER || si->si_value.sival_ptr != t) {
		pass_on(signo, si, ctx);
		return;
	}
	if (atomic_load_explicit(&smp_sampling, memory_order_relaxed) &&
	    !atomic_load_explicit(&t->ended, memory_order_relaxed))
		take_sample(t, ctx, 1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0));
}

/* Our handler with the program's mask and the flags that matter to it; always restarting. */
static int install(const struct sigaction *prog)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	if (prog)
		sa.sa_mask = prog->sa_mask;
	else
		sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_RESTART |
		      (prog ? prog->sa_flags & (SA_ONSTACK | SA_NODEFER) : 0);
	return call_real(smp_signo, &sa, NULL);
}

int smp_signal_init(void)
{
	uint32_t i, n = rt_module_count();

	for (i = 0; i < n && nspans < MAX_SPANS; i++) {
		const struct rt_module *m = rt_module_at(i);

		if (m->hi > m->lo) {
			spans[nspans].lo = m->lo;
			spans[nspans++].hi = m->hi;
		}
	}
	if (call_real(smp_signo, NULL, &prog_act) != 0)
		return -1;
	return install(NULL);
}

/* sigaction(2) as the program sees it: its own disposition of the sampling signal. */
RT_EXPORT int sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	if (!rt_sample_on || signo != smp_signo)
		return call_real(signo, act, old);
	if (old)
		*old = prog_act;
	if (act) {
		prog_act = *act;
		install(act);
	}
	return 0;
}

RT_EXPORT sighandler_t signal(int signo, sighandler_t handler)
{
	static signal_fn real;
	struct sigaction sa, old;

	if (!rt_sample_on || signo != smp_signo) {
		if (!real)
			real = (signal_fn)dlsym(RTLD_NEXT, "signal");
		return real(signo, handler);
	}
	memset(&sa, 0, sizeof(sa)); /* glibc's signal(): BSD semantics */
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, signo);
	sa.sa_flags = SA_RESTART;
	if (sigaction(signo, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}
