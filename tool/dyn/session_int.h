/* SPDX-License-Identifier: MIT */
/* Between the files of a session (session.c, program.c, sites.c); not an API. */
#ifndef SONDE_DYN_SESSION_INT_H
#define SONDE_DYN_SESSION_INT_H

#include "session.h"

/* program.c: the modules of process s->pid and their procedures (s->mods, procs, pinfo,
 * callees). 0, or -1 with err. */
int dyn_program_read(struct dyn_session *s, char *err, size_t n);
/* The modules the plan uses are still mapped where they were when it was made. */
int dyn_program_check(const struct dyn_session *s, char *err, size_t n);
void dyn_program_free(struct dyn_session *s);
/* Run-time address of procedure i. */
uint64_t dyn_proc_addr(const struct dyn_session *s, uint32_t i);
/* The module's file as the tool opens it (through /proc/PID/root when it can). */
void dyn_module_file(const struct dyn_session *s, uint32_t mod, char *out, size_t cap);

/* sites.c: the points of the plan's requests (s->set, s->site): the procedures' entries and
 * their call sites (read from the process), refusals known before patching. */
int dyn_sites_collect(struct dyn_session *s, char *err, size_t n);
/* A procedure of a killed session's patches: an entry or a call jumping out of its module. */
int dyn_sites_left_patch(const struct dyn_session *s, char *err, size_t n);

#endif
