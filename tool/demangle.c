/* SPDX-License-Identifier: MIT */
/* C++ demangling through libstdc++'s __cxa_demangle, loaded once (demangle.h). */
#include "demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *name, char *buf, size_t *len, int *status);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static demangle_fn cxa_demangle;

/* The handle stays open for the tool's life: the function is used until its end. */
static void load(void)
{
	void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (cxx)
		cxa_demangle = (demangle_fn)dlsym(cxx, "__cxa_demangle");
}

char *demangle(const char *name)
{
	char *res;
	int status = -1;

	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	pthread_once(&once, load);
	if (!cxa_demangle)
		return NULL;
	res = cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(res);
		return NULL;
	}
	return res;
}
