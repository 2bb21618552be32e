/* SPDX-License-Identifier: MIT */
/*
 * The return trampoline's personality routine (docs/dynamic.md, "Exceptions and unwinding
 * through a hooked return"). Its unwind information (arch/x86_64/dyn_ret.S) names this routine:
 * every unwinder that runs cleanups — a C++ exception's second phase, the forced unwinding of
 * pthread_exit and pthread_cancel — calls it as it passes a hooked return, and the calls that
 * end there run their exit actions. The search phase, and walks that run no cleanups
 * (backtrace, gdb), change nothing.
 */
#include "dyn.h"
#include "unwind_layout.h"

#include <stddef.h>
#include <unwind.h>

/* The expression in dyn_ret.S reads these by offset. */
_Static_assert(offsetof(struct dyn_thread, depth) == DYN_UW_DEPTH, "depth");
_Static_assert(offsetof(struct dyn_thread, state) == DYN_UW_STATE, "state");
_Static_assert(offsetof(struct dyn_thread, next) == DYN_UW_NEXT, "next");
_Static_assert(offsetof(struct dyn_thread, frames) == DYN_UW_FRAMES, "frames");
_Static_assert(sizeof(struct dyn_frame) == DYN_UW_FRAME_SIZE, "frame size");
_Static_assert(offsetof(struct dyn_frame, slot) == DYN_UW_FRAME_SLOT, "slot");
_Static_assert(offsetof(struct dyn_frame, ret) == 0, "ret");
_Static_assert(DYN_T_LIVE == DYN_UW_LIVE, "live");

_Unwind_Reason_Code dyn_unwind_personality(int version, _Unwind_Action actions,
					   _Unwind_Exception_Class cls,
					   struct _Unwind_Exception *exc,
					   struct _Unwind_Context *ctx)
	__attribute__((visibility("hidden")));

/*
 * The slot is just below the stack pointer the trampoline was entered with: libgcc's
 * _Unwind_GetCFA gives that (the CFA of the hooked function, the frame below), an unwinder that
 * gives the trampoline's own CFA gives it + 1 (dyn_ret.S): rounded down to 8 either way.
 */
_Unwind_Reason_Code dyn_unwind_personality(int version, _Unwind_Action actions,
					   _Unwind_Exception_Class cls,
					   struct _Unwind_Exception *exc,
					   struct _Unwind_Context *ctx)
{
	(void)cls;
	(void)exc;
	if (version == 1 && (actions & _UA_CLEANUP_PHASE))
		dyn_unwound((uint64_t *)((_Unwind_GetCFA(ctx) & ~(_Unwind_Word)7) - 8));
	return _URC_CONTINUE_UNWIND;
}
