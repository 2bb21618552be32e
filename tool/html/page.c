/* SPDX-License-Identifier: MIT */
/*
 * The page of `sonde report --html`: head with the inline style, the sections in order, the
 * inline script that sorts tables. No URL anywhere: the page opens the same without a network.
 */
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "term.h"
#include "util.h"

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 2em;color:#222;background:#fff}"
	"h1{font-size:1.4em;margin:.6em 0 .2em}h2{font-size:1.15em;border-bottom:1px solid #ccc;"
	"margin-top:1.6em}h3{font-size:1em;margin:1.2em 0 .3em}"
	"nav{position:sticky;top:0;background:#f6f6f6;padding:.3em .5em;border-bottom:1px solid #ddd;"
	"z-index:2}nav a{margin-right:1em;color:#035;text-decoration:none}"
	"table{border-collapse:collapse;margin:.4em 0;font-size:13px}"
	"th,td{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}"
	"th{background:#eef2f6;cursor:pointer;user-select:none;position:relative}"
	"th[aria-sort=descending]::after{content:' \\25BC';font-size:.7em}"
	"th[aria-sort=ascending]::after{content:' \\25B2';font-size:.7em}"
	"td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
	"td.name{max-width:40em;overflow:hidden;text-overflow:ellipsis}"
	"tr:hover td{background:#fafae0}.cut,.note{color:#666;font-size:.9em}"
	"pre{background:#f8f8f8;padding:.6em;overflow:auto;font-size:12px;max-height:40em}"
	"svg{display:block;margin:.4em 0;max-width:100%;height:auto}"
	"svg text{pointer-events:none}.kv td:first-child{color:#555}svg.flame g{cursor:pointer}"
	"button.unzoom{font-size:.85em;margin-left:.5em}"
	".unrel{color:#a00}.legend span{display:inline-block;width:.9em;height:.9em;"
	"margin:0 .3em 0 1em;vertical-align:middle}";

/* Sorting by a header click (numbers by data-v, text alphabetically), and by the fragment:
 * #sort=TABLE:COL[:asc|desc] sorts once, #click=TABLE:COL[:N] clicks the header N times (so a
 * headless browser, which cannot click, drives the same handler). body[data-js] says it ran. */
static const char js[] =
	"(function(){'use strict';\n"
	"function key(td,num){var v=td.getAttribute('data-v');if(v===null)v=td.textContent;"
	"return num?parseFloat(v)||0:v.toLowerCase();}\n"
	"function sortTable(t,col,dir){var hs=t.tHead.rows[0].cells;if(col>=hs.length)return;"
	"var num=hs[col].getAttribute('data-t')==='n',b=t.tBodies[0],"
	"rows=Array.prototype.slice.call(b.rows),i;"
	"rows.sort(function(x,y){var a=key(x.cells[col],num),c=key(y.cells[col],num),"
	"r=a<c?-1:a>c?1:0;return dir==='asc'?r:-r;});"
	"rows.forEach(function(r){b.appendChild(r);});"
	"for(i=0;i<hs.length;i++)hs[i].removeAttribute('aria-sort');"
	"hs[col].setAttribute('aria-sort',dir==='asc'?'ascending':'descending');"
	"t.setAttribute('data-sorted',col+':'+dir);}\n"
	"function clicked(t,col){var hs=t.tHead.rows[0].cells,cur=t.getAttribute('data-sorted'),"
	"num=hs[col].getAttribute('data-t')==='n',dir;"
	"if(cur===col+':desc')dir='asc';else if(cur===col+':asc')dir='desc';"
	"else dir=num?'desc':'asc';sortTable(t,col,dir);}\n"
	"Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(t){"
	"Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){"
	"th.addEventListener('click',function(){clicked(t,i);});});});\n"
	"function frag(){var h=decodeURIComponent(location.hash),"
	"m=/sort=([\\w-]+):(\\d+)(?::(asc|desc))?/.exec(h),t,n;"
	"if(m&&(t=document.getElementById(m[1])))sortTable(t,+m[2],m[3]||'desc');"
	"m=/click=([\\w-]+):(\\d+)(?::(\\d+))?/.exec(h);"
	"if(m&&(t=document.getElementById(m[1]))){n=+(m[3]||1);"
	"while(n-->0&&+m[2]<t.tHead.rows[0].cells.length)"
	"t.tHead.rows[0].cells[+m[2]].dispatchEvent(new MouseEvent('click',{bubbles:true}));}}\n"
	"frag();window.addEventListener('hashchange',frag);"
	"document.body.setAttribute('data-js','ran');})();\n";

/* Zooming an icicle graph (flame.c): a click on a frame makes it the whole width, its callees
 * in proportion below it, its callers full width above it (faded), the rest hidden; the reset
 * button, or a second click on a zoomed top frame, undoes it. #zoom=SVG:NAME clicks the first
 * frame of that name and #zoom=SVG: the reset button, in turn when several are joined by '&'
 * (a headless browser, which cannot click, drives the same handlers so).
 * The svg's data-zoom says which frame it is zoomed to. */
static const char zoom_js[] =
	"(function(){'use strict';var NS='http://www.w3.org/2000/svg',CH=6.6,ROW=17;\n"
	"function nameOf(g){return g.querySelector('title').textContent.split('\\n')[0];}\n"
	"function label(g,x,w){var t=g.querySelector('text'),n=nameOf(g),"
	"fit=w>20?Math.floor((w-6)/CH):0;\n"
	"if(!t){if(fit<3)return;t=document.createElementNS(NS,'text');t.setAttribute('y',"
	"+g.getAttribute('data-d')*ROW+12);g.appendChild(t);}\n"
	"t.setAttribute('x',(x+3).toFixed(1));t.textContent=fit<3?'':n.length>fit?n.slice(0,"
	"fit-2)+'..':n;}\n"
	"function zoom(s,f){var W=+s.getAttribute('width'),fx=f?+f.getAttribute('data-x'):0,"
	"fw=f?+f.getAttribute('data-w'):W,fd=f?+f.getAttribute('data-d'):0,k=W/fw,e=0.05;\n"
	"Array.prototype.forEach.call(s.querySelectorAll('g[data-x]'),function(g){"
	"var x=+g.getAttribute('data-x'),w=+g.getAttribute('data-w'),"
	"d=+g.getAttribute('data-d'),r=g.querySelector('rect'),nx,nw,show;\n"
	"if(d<fd){show=x<=fx+e&&x+w>=fx+fw-e;nx=0;nw=W;}else{show=x>=fx-e&&x+w<=fx+fw+e;"
	"nx=(x-fx)*k;nw=w*k;}\n"
	"g.style.display=show?'':'none';if(!show)return;g.style.opacity=f&&d<fd?'0.6':'';\n"
	"r.setAttribute('x',nx.toFixed(1));r.setAttribute('width',nw.toFixed(1));label(g,nx,"
	"nw);});\n"
	"s.setAttribute('data-zoom',f?nameOf(f):'');}\n"
	"Array.prototype.forEach.call(document.querySelectorAll('svg.flame'),function(s){"
	"s.addEventListener('click',function(ev){var g=ev.target.closest('g[data-x]');\n"
	"if(g)zoom(s,+g.getAttribute('data-d')===0&&s.getAttribute('data-zoom')===nameOf(g)"
	"?null:g);});});\n"
	"Array.prototype.forEach.call(document.querySelectorAll('button.unzoom'),function(b){"
	"b.addEventListener('click',function(){var s=document.getElementById(b.getAttribute('"
	"data-svg'));if(s)zoom(s,null);});});\n"
	"function click(x){x.dispatchEvent(new MouseEvent('click',{bubbles:true}));}\n"
	"function frag(){var h=decodeURIComponent(location.hash),re=/zoom=([\\w-]+):([^&]*)/g,"
	"m,s,g,b;\n"
	"while((m=re.exec(h))){if(!(s=document.getElementById(m[1])))continue;\n"
	"if(m[2]===''){b=document.querySelector('button.unzoom[data-svg=\"'+m[1]+'\"]');if(b)"
	"click(b);continue;}\n"
	"g=Array.prototype.filter.call(s.querySelectorAll('g[data-x]'),function(x){"
	"return nameOf(x)===m[2];})[0];\n"
	"if(g)click(g.querySelector('rect'));}}\n"
	"frag();window.addEventListener('hashchange',frag);})();\n";

static const struct { const char *id, *title; } parts[] = {
	{ "run", "Run and calibration" },
	{ "profile", "Profile" },
	{ "threads", "Threads" },
	{ "callpaths", "Call paths" },
	{ "histograms", "Time histograms" },
	{ "resources", "Sync objects and files" },
	{ "timeline", "Trace timeline" },
	{ "consult", "Search History Graph" },
};

/* What the page is of: the first process's program, else the run directory. */
static const char *subject(const struct model *m)
{
	if (m->nprocs && m->procs[0].exe && *m->procs[0].exe)
		return m->procs[0].exe;
	return m->dir ? m->dir : "sonde-out";
}

static void head(FILE *out, const struct model *m)
{
	size_t i;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"sonde " SONDE_VERSION "\">\n<title>sonde: ",
	      out);
	html_text(out, subject(m));
	fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>sonde report: ", css);
	html_text(out, subject(m));
	fputs("</h1>\n<p class=\"note\">Run directory <code>", out);
	html_text(out, m->dir);
	fputs("</code>. Times are shown measured and compensated <b>(c)</b>: the probes' "
	      "calibrated cost removed. One self-contained file: it fetches nothing.</p>\n<nav>",
	      out);
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		fprintf(out, "<a href=\"#%s\">%s</a>", parts[i].id, parts[i].title);
	fputs("</nav>\n", out);
}

/* The traces of the run, at most HTML_MAX_TRACES of them, each searched and drawn. */
static void traces(FILE *out, const struct model *m, const struct html_opts *o)
{
	size_t n = 0, i;
	char **paths = trace_files(m->dir, o->flt.pid, &n);

	html_section(out, "timeline", "Trace timeline: measured and approximated");
	if (!n)
		fputs("<p class=\"note\">No trace in this run (record one with "
		      "<code>sonde run --trace</code>).</p>\n", out);
	for (i = 0; i < n && i < HTML_MAX_TRACES && o->timeline; i++) {
		html_progress("the perturbation analysis of a trace");
		html_timeline(out, paths[i]);
	}
	if (!o->timeline && n)
		fputs("<p class=\"note\">Left out (--no-timeline).</p>\n", out);
	html_cut_note(out, n < HTML_MAX_TRACES ? n : HTML_MAX_TRACES, n, "traces");
	html_section_end(out);
	html_section(out, "consult", "Search History Graph (post-mortem Performance Consultant)");
	if (!n)
		fputs("<p class=\"note\">No trace to search: <code>sonde consult</code> needs a "
		      "<code>sonde run --trace</code> recording.</p>\n", out);
	for (i = 0; i < n && i < HTML_MAX_TRACES && o->consult; i++)
		html_consult(out, paths[i]);
	if (!o->consult && n)
		fputs("<p class=\"note\">Left out (--no-consult).</p>\n", out);
	html_cut_note(out, n < HTML_MAX_TRACES ? n : HTML_MAX_TRACES, n, "traces");
	html_section_end(out);
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

static struct progress *page_progress; /* while report_html runs */

void html_progress(const char *what)
{
	if (page_progress)
		progress_update(page_progress, -1, what);
}

int report_html(FILE *out, const struct model *m, const struct html_opts *o)
{
	struct progress p;

	progress_start(&p, "report");
	page_progress = &p;
	head(out, m);
	html_meta(out, m);
	html_progress("tables");
	html_profile(out, m, o);
	html_threads(out, m, o);
	html_progress("call paths");
	html_flame(out, m);
	html_progress("time histograms");
	html_histograms(out, m, o);
	html_resources(out, m, o->limit);
	html_progress("traces");
	traces(out, m, o);
	fprintf(out, "<script>%s%s</script>\n</body>\n</html>\n", zoom_js, js);
	progress_end(&p);
	page_progress = NULL;
	return ferror(out) ? -1 : 0;
}
