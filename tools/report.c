#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnops.h"

typedef struct report_entry {
    char case_name[64], output[16];
    cmp_verdict v;
    int64_t hist[LOC_BINS];
    int strip_n;
    int64_t strip[240]; /* failures per group of rows */
    int64_t rows, rows_per_bin;
} report_entry;

struct report {
    char *path;
    report_entry *e;
    int n, cap;
};

report *report_open(const char *path)
{
    FILE *f = fopen(path, "w"); /* fail early, before the run */
    if (!f) {
        fprintf(stderr, "attnops: cannot write the report %s\n", path);
        return NULL;
    }
    fclose(f);
    report *r = calloc(1, sizeof *r);
    r->path = strdup(path);
    return r;
}

void report_add(report *r, const char *case_name, const char *output, const cmp_verdict *v, const localisation *l)
{
    if (r->n == r->cap) r->e = realloc(r->e, sizeof *r->e * (size_t)(r->cap = r->cap ? 2 * r->cap : 16));
    report_entry *e = &r->e[r->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->case_name, sizeof e->case_name, "%s", case_name);
    snprintf(e->output, sizeof e->output, "%s", output);
    e->v = *v;
    memcpy(e->hist, l->hist, sizeof e->hist);
    e->rows = l->rows;
    e->rows_per_bin = (l->rows + 239) / 240 > 0 ? (l->rows + 239) / 240 : 1;
    e->strip_n = (int)((l->rows + e->rows_per_bin - 1) / e->rows_per_bin);
    for (int64_t row = 0; row < l->rows; row++) e->strip[row / e->rows_per_bin] += l->row_fail[row];
}

/* Bars of the error histogram; the rule's threshold sits between bin 5 and 6. */
static void histogram_svg(FILE *f, const report_entry *e)
{
    const int w = 36, h = 90, top = 10;
    int64_t most = 1;
    for (int i = 0; i < LOC_BINS; i++) most = e->hist[i] > most ? e->hist[i] : most;
    fprintf(f, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"error histogram\">", LOC_BINS * w + 10,
            h + top + 30);
    for (int i = 0; i < LOC_BINS; i++) {
        const double frac = e->hist[i] ? (0.08 + 0.92 * log1p((double)e->hist[i]) / log1p((double)most)) : 0.0;
        const int bh = (int)(frac * h), x = 5 + i * w;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>%s: %lld</title></rect>", x,
                top + h - bh, w - 4, bh, i <= 5 ? "#4a8" : (i == LOC_BINS - 1 ? "#a4a" : "#d54"),
                loc_bin_labels[i], (long long)e->hist[i]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%s</text>", x + w / 2 - 2,
                top + h + 12, loc_bin_labels[i]);
    }
    const int xl = 5 + 6 * w - 2;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\" stroke-dasharray=\"3,2\"/>", xl, top - 5, xl,
            top + h);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\">threshold</text>", xl + 3, top + 3);
    fprintf(f, "<text x=\"5\" y=\"%d\" font-size=\"9\">|a - e| / the rule's limit (log count)</text></svg>", top + h + 26);
}

/* Failures per group of rows, darker = more. */
static void strip_svg(FILE *f, const report_entry *e)
{
    int64_t most = 0;
    for (int i = 0; i < e->strip_n; i++) most = e->strip[i] > most ? e->strip[i] : most;
    fprintf(f, "<svg width=\"%d\" height=\"34\" role=\"img\" aria-label=\"failures per row\">", 2 * 240 + 10);
    for (int i = 0; i < e->strip_n; i++) {
        const double t = most ? (double)e->strip[i] / (double)most : 0.0;
        char fill[32] = "#e8f4ec"; /* no failure */
        if (e->strip[i]) snprintf(fill, sizeof fill, "rgb(220,%d,%d)", (int)(200 - 180 * t), (int)(200 - 180 * t));
        fprintf(f, "<rect x=\"%d\" y=\"2\" width=\"2\" height=\"18\" fill=\"%s\"><title>rows %lld-%lld: %lld</title></rect>",
                5 + 2 * i, fill, (long long)(i * e->rows_per_bin), (long long)((i + 1) * e->rows_per_bin - 1),
                (long long)e->strip[i]);
    }
    fprintf(f, "<text x=\"5\" y=\"31\" font-size=\"9\">%lld rows, %lld per column; failing elements per row</text></svg>",
            (long long)e->rows, (long long)e->rows_per_bin);
}

static void escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

int report_close(report *r, const char *title)
{
    FILE *f = fopen(r->path, "w");
    int rc = 0;
    if (!f) {
        fprintf(stderr, "attnops: cannot write the report %s\n", r->path);
        rc = -1;
    } else {
        int passed = 0;
        for (int i = 0; i < r->n; i++) passed += r->e[i].v.pass;
        fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>attnops report</title>"
                   "<style>body{font:13px sans-serif;margin:20px}table{border-collapse:collapse}"
                   "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}.PASS{color:#186}.FAIL{color:#c22;"
                   "font-weight:bold}section{margin:14px 0;padding-top:6px;border-top:1px solid #ddd}</style></head><body>\n");
        fprintf(f, "<h1>attnops %s</h1><p>", attnops_version());
        escape(f, title);
        fprintf(f, "</p>\n<table id=\"summary\"><caption>%d of %d outputs pass</caption>"
                   "<tr><th>case</th><th>output</th><th>rule</th><th>verdict</th><th>metrics</th><th>max abs</th>"
                   "<th>max rel</th><th>off</th></tr>\n", passed, r->n);
        for (int i = 0; i < r->n; i++) {
            const report_entry *e = &r->e[i];
            fprintf(f, "<tr><td><a href=\"#o%d\">", i);
            escape(f, e->case_name);
            fprintf(f, "</a></td><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td>", e->output,
                    cmp_rule_name(e->v.rule), e->v.pass ? "PASS" : "FAIL", e->v.pass ? "PASS" : "FAIL");
            for (int m = 0; m < e->v.n_metrics; m++)
                if (!isinf(e->v.metric[m].limit))
                    fprintf(f, "%s %.4g (%s %.4g)<br>", e->v.metric[m].name, e->v.metric[m].value,
                            e->v.metric[m].at_least ? "&ge;" : "&le;", e->v.metric[m].limit);
            fprintf(f, "</td><td>%.3g</td><td>%.3g</td><td>%lld / %lld</td></tr>\n", e->v.max_abs, e->v.max_rel,
                    (long long)e->v.n_fail, (long long)e->v.counted);
        }
        fprintf(f, "</table>\n");
        for (int i = 0; i < r->n; i++) {
            const report_entry *e = &r->e[i];
            fprintf(f, "<section id=\"o%d\"><h3>", i);
            escape(f, e->case_name);
            fprintf(f, " %s <span class=\"%s\">%s</span></h3>", e->output, e->v.pass ? "PASS" : "FAIL",
                    e->v.pass ? "PASS" : "FAIL");
            histogram_svg(f, e);
            fputs("<br>", f);
            strip_svg(f, e);
            fputs("</section>\n", f);
        }
        fputs("</body></html>\n", f);
        if (fclose(f) != 0) rc = -1;
    }
    free(r->e);
    free(r->path);
    free(r);
    return rc;
}
