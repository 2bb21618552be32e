/* SPDX-License-Identifier: MIT */
/*
 * Trigger predicates of the "when" axis (docs/consult.md): a source wrapped so that the
 * search starts only when the trigger fires — `call:PROC` at the first call of a procedure,
 * `METRIC>VALUE` (or `<`) when the whole program's metric, per second over one sample period,
 * crosses the value (cpu_time>1.5: more than one and a half CPUs busy). Until then the inner
 * source's periods pass unseen; from then on times count from the firing, so the search's
 * whole run is "from the trigger on". Live and post mortem alike.
 */
#ifndef SONDE_CONSULT_TRIGGER_H
#define SONDE_CONSULT_TRIGGER_H

#include "source.h"

/* Parse SPEC; 0, or -1 with a one-line reason in err. */
int cs_trigger_check(const char *spec, char *err, size_t cap);
/* The wrapper (inner is not owned); NULL with err when the trigger cannot be measured. known:
 * every procedure is known from the start (live: the symbols), so an unknown name is an error;
 * else (a trace: procedures appear as they are first called) it is looked for as time goes. */
struct cs_source *cs_trigger_new(struct cs_source *inner, const char *spec, int known,
				 char *err, size_t cap);
void cs_trigger_free(struct cs_source *src);
/* When it fired (ns on the inner source's clock), 0 when it never did. */
uint64_t cs_trigger_fired(const struct cs_source *src);

#endif
