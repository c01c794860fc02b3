/* `attnops run --report FILE.html`: one self-contained page (no network):
 * a summary table (case x output x verdict, element id "summary") and per
 * output an inline-SVG histogram of element errors against the rule's
 * threshold and a strip of per-row failure counts. */
#ifndef ATTNOPS_TOOLS_REPORT_H
#define ATTNOPS_TOOLS_REPORT_H

#include <stdio.h>

#include "localise.h"

typedef struct report report;

report *report_open(const char *path); /* NULL with a message on failure */
void report_add(report *r, const char *case_name, const char *output, const cmp_verdict *v, const localisation *l);
/* Writes the page and frees r; 0, or -1 with a message. */
int report_close(report *r, const char *title);

#endif
