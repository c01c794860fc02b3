/* The export of cases as .npy files with a manifest (tools/export.c). */
#ifndef ATTNOPS_TOOLS_EXPORT_H
#define ATTNOPS_TOOLS_EXPORT_H

#include "harness_driver.h"

/* The .npy export of `golden` and `run --save`: per case a directory of
 * tensors -- the golden chain's, and the kernel and benchmark chains'
 * computed ones where the run has them -- and one manifest.json.  Each
 * returns 0, or -1 after a message. */
typedef struct export_set export_set;
export_set *export_open(const char *dir); /* NULL after a message */
int export_case(export_set *x, const harness_run *r);
int export_close(export_set *x); /* writes manifest.json; 0 or -1 */

#endif
