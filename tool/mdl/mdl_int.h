/* SPDX-License-Identifier: MIT */
/* Internal to tool/mdl/: growing the library while parsing, and look-ups the parser needs. */
#ifndef SONDE_MDL_INT_H
#define SONDE_MDL_INT_H

#include "mdl.h"

/* A new zeroed definition appended to the library (freed with it, even half-filled). */
struct mdl_units *mdl_add_units(struct mdl_lib *lib);
struct mdl_list *mdl_add_list(struct mdl_lib *lib);
struct mdl_constraint *mdl_add_constraint(struct mdl_lib *lib);
struct mdl_metric *mdl_add_metric(struct mdl_lib *lib);
/* The library's copy of a file name, for locations. */
const char *mdl_add_file(struct mdl_lib *lib, const char *name);

const struct mdl_list *mdl_find_list(const struct mdl_lib *lib, const char *name);
const struct mdl_units *mdl_find_units(const struct mdl_lib *lib, const char *name);

void mdl_stmt_free(struct mdl_stmt *s);

/* How many definitions of each kind; a failed load truncates the library back to them. */
struct mdl_counts {
	uint32_t units, lists, cons, metrics;
};
void mdl_lib_truncate(struct mdl_lib *lib, const struct mdl_counts *keep);

#endif
