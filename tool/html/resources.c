/* SPDX-License-Identifier: MIT */
/* Synchronization objects (sonde run --sync) and files (--io) as sortable tables, top-N. */
#include <stdlib.h>

#include "html.h"
#include "model_io.h"
#include "model_sync.h"
#include "util.h"

static const struct model_sync *sorted;

static int by_wait(const void *x, const void *y)
{
	double a = sorted->objs[*(const uint32_t *)x].wait, b = sorted->objs[*(const uint32_t *)y].wait;

	return a < b ? 1 : a > b ? -1 : 0;
}

static void sync_objects(FILE *out, const struct model_sync *ms, int limit)
{
	static const char *const cols[] = { "object", "kind", "#pid", "#wait", "#max wait",
					    "#hold (est.)", "#acquires", "#shared", "#contended",
					    "#busy", "#timeouts", "#releases" };
	uint32_t *idx = xmalloc((ms->nobjs ? ms->nobjs : 1) * sizeof(*idx)), i;

	for (i = 0; i < ms->nobjs; i++)
		idx[i] = i;
	sorted = ms;
	qsort(idx, ms->nobjs, sizeof(*idx), by_wait);
	fputs("<h3>Synchronization objects by wait time (sonde run --sync)</h3>\n", out);
	html_table(out, "sync-objects", cols, 12);
	for (i = 0; i < ms->nobjs && i < (uint32_t)limit; i++) {
		const struct m_sync *o = &ms->objs[idx[i]];

		fputs("<tr>", out);
		html_td(out, o->name);
		html_td(out, sync_kind_name(o->kind));
		html_td_u(out, o->pid);
		html_td_ns(out, o->wait);
		html_td_ns(out, o->wait_max);
		html_td_ns(out, o->hold);
		html_td_u(out, o->acquires);
		html_td_u(out, o->shared);
		html_td_u(out, o->contended);
		html_td_u(out, o->failed);
		html_td_u(out, o->timeouts);
		html_td_u(out, o->releases + o->broadcasts);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
	html_cut_note(out, i, ms->nobjs, "objects (by wait time)");
	free(idx);
}

static const struct m_ext *sorted_x;

static int by_time(const void *x, const void *y)
{
	uint64_t a = m_io_total_ns(&sorted_x->files[*(const uint32_t *)x]);
	uint64_t b = m_io_total_ns(&sorted_x->files[*(const uint32_t *)y]);

	return a < b ? 1 : a > b ? -1 : 0;
}

/* calls[]: read, write, open, close, sync (SPROF_IO_OPS) */
static void files(FILE *out, const struct m_ext *x, int limit)
{
	static const char *const cols[] = { "path", "#time", "#calls", "#reads", "#bytes read",
					    "#writes", "#bytes written", "#opens", "#closes",
					    "#syncs", "#errors" };
	uint32_t *idx = xmalloc((x->nfiles ? x->nfiles : 1) * sizeof(*idx)), i;

	for (i = 0; i < x->nfiles; i++)
		idx[i] = i;
	sorted_x = x;
	qsort(idx, x->nfiles, sizeof(*idx), by_time);
	fputs("<h3>Files by I/O time (sonde run --io; time in the calls, as measured)</h3>\n", out);
	html_table(out, "files", cols, 11);
	for (i = 0; i < x->nfiles && i < (uint32_t)limit; i++) {
		const struct m_iofile *f = &x->files[idx[i]];

		fputs("<tr>", out);
		html_td(out, f->path);
		html_td_ns(out, (double)m_io_total_ns(f));
		html_td_u(out, m_io_total_calls(f));
		html_td_u(out, f->calls[0]);
		html_td_u(out, f->bytes_read);
		html_td_u(out, f->calls[1]);
		html_td_u(out, f->bytes_written);
		html_td_u(out, f->calls[2]);
		html_td_u(out, f->calls[3]);
		html_td_u(out, f->calls[4]);
		html_td_u(out, f->errors);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
	html_cut_note(out, i, x->nfiles, "files (by I/O time)");
	free(idx);
}

void html_resources(FILE *out, const struct model *m, int limit)
{
	int any = 0;

	html_section(out, "resources", "Sync objects and files");
	if (m->sync && m->sync->nobjs) {
		sync_objects(out, m->sync, limit);
		any = 1;
	}
	if (m->ext && m->ext->nfiles) {
		files(out, m->ext, limit);
		any = 1;
	}
	if (!any)
		fputs("<p class=\"note\">No synchronization object (<code>sonde run --sync</code>) "
		      "and no file (<code>--io</code>) in this run.</p>\n", out);
	html_section_end(out);
}
