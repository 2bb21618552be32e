/* SPDX-License-Identifier: MIT */
/*
 * What the return trampoline's unwind information (runtime/arch/x86_64/dyn_ret.S) reads of the
 * per-thread records (dyn.h): offsets in struct dyn_thread and struct dyn_frame, checked against
 * the structs by static assertions in runtime/dyn/unwind.c. Included by assembly: numbers only.
 */
#ifndef SONDE_DYN_UNWIND_LAYOUT_H
#define SONDE_DYN_UNWIND_LAYOUT_H

#define DYN_UW_DEPTH 0          /* uint32_t depth */
#define DYN_UW_STATE 12         /* int state */
#define DYN_UW_NEXT 32          /* struct dyn_thread *next */
/* frames[]: after the header, the thread counters and the wall and CPU timers */
#define DYN_UW_FRAMES (40 + 8 * 1024 + 2 * 4096 * 24)
#define DYN_UW_FRAME_SIZE 24    /* struct dyn_frame: ret, slot, point, closed, session, gen */
#define DYN_UW_FRAME_SLOT 8
#define DYN_UW_LIVE 1           /* DYN_T_LIVE */

#endif
