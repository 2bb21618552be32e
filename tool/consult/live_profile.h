/* SPDX-License-Identifier: MIT */
/* The profile table of a live bottleneck's focus (live_profile.c). */
#ifndef SONDE_CONSULT_LIVE_PROFILE_H
#define SONDE_CONSULT_LIVE_PROFILE_H

#include "view.h"

/* cs_live_profile_fn over a live source (arg): the module's procedures the search measured,
 * the highest share of a CPU first. */
uint32_t live_profile(void *arg, const struct cs_engine *e, const struct cs_focus *module,
		      struct cs_live_row *rows, uint32_t max);

#endif
