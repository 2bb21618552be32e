/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the tool's commands: errors, memory, paths, a growable string. */
#ifndef SONDE_UTIL_H
#define SONDE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#define EXIT_USAGE 2

/* One line on stderr, "sonde: ...". Returns -1 so callers can `return error(...)`. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Called before an error or warning line, when set: a progress line (term.c) clears itself. */
extern void (*before_message)(void);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Directory holding the running sonde executable (for finding the runtime and headers). */
const char *self_dir(void);
/* The runtime to preload: $SONDE_RUNTIME, else ../lib/libsonde.so next to this executable. */
int runtime_path(char *out, size_t cap);
/* The directory of sonde.h: ../include next to this executable. */
int include_dir(char *out, size_t cap);
/* Resolve a program name like execvp would; 0 and the path in out, or -1 with errno. */
int find_program(const char *name, char *out, size_t cap);
int parse_u64(const char *s, unsigned long long *out);
int parse_size(const char *s, unsigned long long *out);
/* A duration in seconds: "10s", "500ms", "2m", "1h", "1.5" (seconds); above 0, at most a year. */
int parse_time_span(const char *s, double *seconds);
/* The trace files of a run directory (only trace.PID.strc when pid), sorted; NULL and *n = 0
 * when there is none or the directory cannot be read. Free each and the array. */
char **trace_files(const char *dir, uint32_t pid, size_t *n);

/* CLOCK_MONOTONIC in ns, and the ms elapsed since such a reading. */
/* SIGINT, SIGTERM and SIGHUP only set stop_signal (to their number) from then on: a command
 * that runs until stopped (watch, consult) ends cleanly, letting its process go. */
extern volatile sig_atomic_t stop_signal;
void catch_stop_signals(void);

uint64_t mono_now_ns(void);
double elapsed_ms(uint64_t t0_ns);

/* Option parsing shared by commands: "--name VALUE" and "--name=VALUE". */
int opt_value(int argc, char **argv, int *i, const char *name, const char **value);

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is not one. */
int utf8_seq_len(const unsigned char *s);

#endif
