/* SPDX-License-Identifier: MIT */
/*
 * sonde.h — manual instrumentation for programs measured by sonde.
 *
 * A program that uses this header runs normally without sonde: the functions are weak
 * references, resolved only when sonde's runtime (libsonde.so) is loaded, and each macro does
 * nothing when they are absent. Names passed in must stay valid for the whole run (string
 * literals are best): the runtime keeps the pointer, never a copy.
 *
 *   SONDE_REGION_BEGIN("solve");  ...  SONDE_REGION_END("solve");   a named region, measured
 *                                       like a function (calls, inclusive and exclusive time)
 *   SONDE_PHASE("setup");               start of a phase of this thread (ends the previous one)
 *   SONDE_COUNTER("bytes", n);          a user counter: count, sum, min and max of the values
 */
#ifndef SONDE_H
#define SONDE_H

#ifdef __cplusplus
extern "C" {
#endif

#define SONDE_API_VERSION 1

#ifdef SONDE_RUNTIME /* the runtime defines them for real */
#define SONDE__WEAK
#else
#define SONDE__WEAK __attribute__((weak))
#endif

void sonde__region_begin(const char *name) SONDE__WEAK;
void sonde__region_end(const char *name) SONDE__WEAK;
void sonde__phase(const char *name) SONDE__WEAK;
void sonde__counter(const char *name, double value) SONDE__WEAK;

#define SONDE_REGION_BEGIN(name)                                                                   \
	do {                                                                                       \
		if (sonde__region_begin)                                                           \
			sonde__region_begin(name);                                                 \
	} while (0)
#define SONDE_REGION_END(name)                                                                     \
	do {                                                                                       \
		if (sonde__region_end)                                                             \
			sonde__region_end(name);                                                   \
	} while (0)
#define SONDE_PHASE(name)                                                                          \
	do {                                                                                       \
		if (sonde__phase)                                                                  \
			sonde__phase(name);                                                        \
	} while (0)
#define SONDE_COUNTER(name, value)                                                                 \
	do {                                                                                       \
		if (sonde__counter)                                                                \
			sonde__counter(name, (double)(value));                                     \
	} while (0)

#ifdef __cplusplus
}
#endif
#endif
