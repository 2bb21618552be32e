/* SPDX-License-Identifier: MIT */
/* Attach, inject the runtime, let go: the steps of `sonde attach` for every command. */
#include "session.h"

#include "internal.h"

#include <stdio.h>
#include <string.h>

static double ms_since(uint64_t t0)
{
	return (double)(tgt_now_ns() - t0) / 1e6;
}

static void name_of(pid_t pid, char *out, size_t cap)
{
	struct proc_status st;

	snprintf(out, cap, "%s", tgt_proc_status(pid, &st) == 0 ? st.name : "?");
}

/* A library that cannot be used is refused before the process is stopped. */
static int check_library(const struct inject_session_opts *o, char *err, size_t errlen)
{
	const char *entry = o->entry ? o->entry : SONDE_ATTACH_ENTRY;
	uint64_t vaddr = 0, size;

	if (o->runtime[0] != '/')
		snprintf(err, errlen, "%s: the library's path must be absolute", o->runtime);
	else if (tgt_elf_symbols(o->runtime, &entry, 1, &vaddr, &size) != 0)
		snprintf(err, errlen, "%s is not a readable ELF file", o->runtime);
	else if (!vaddr)
		snprintf(err, errlen, "%s has no %s (a runtime too old for attaching?)", o->runtime,
			 entry);
	return vaddr ? 0 : -1;
}

static int inject(struct inject_session *s, const struct inject_session_opts *o,
		  const struct target_libc *libc, char *err, size_t errlen)
{
	struct target_inject_opts io = { libc, o->runtime,
					 o->entry ? o->entry : SONDE_ATTACH_ENTRY, o->ctl_dir, 10, 0,
					 o->leave_running };
	uint64_t t0 = tgt_now_ns();
	int r = target_inject(&s->t, &io, &s->entry_ret);

	s->inject_ms = ms_since(t0);
	s->load_ms = (double)s->t.load_ns / 1e6;
	if (r != 0)
		snprintf(err, errlen, "%s", target_error(&s->t));
	else if (s->entry_ret != 0)
		snprintf(err, errlen, "%s returned %d in process %d (its log: %s/runtime.log)",
			 io.entry, s->entry_ret, s->t.pid, o->ctl_dir);
	return r != 0 || s->entry_ret != 0 ? -1 : 0;
}

int inject_session_open(struct inject_session *s, pid_t pid, const struct inject_session_opts *o,
			char *err, size_t errlen)
{
	struct target_libc *libc = NULL;
	uint64_t t0;
	int r = -1;

	memset(s, 0, sizeof(*s));
	s->start_ns = tgt_now_ns();
	name_of(pid, s->comm, sizeof(s->comm));
	if (check_library(o, err, errlen) != 0 || !(libc = target_libc_resolve(pid, err, errlen)))
		return -1;
	t0 = tgt_now_ns();
	if (target_attach(&s->t, pid, err, errlen) == 0) {
		s->stop_ms = ms_since(t0);
		s->threads = s->t.nthreads;
		r = inject(s, o, libc, err, errlen);
		if (r != 0)
			target_detach(&s->t);
	}
	target_libc_free(libc);
	return r;
}

int inject_session_close(struct inject_session *s, char *err, size_t errlen)
{
	uint64_t t0 = tgt_now_ns();
	int r = target_detach(&s->t);

	if (r != 0)
		snprintf(err, errlen, "%s", target_error(&s->t));
	s->detach_ms = ms_since(t0);
	s->pause_ms = (double)s->t.paused_ns / 1e6;
	s->total_ms = ms_since(s->start_ns);
	return r;
}
