/* The export of cases as .npy files with a manifest (tools/export.c). */
#ifndef ATTNOPS_TOOLS_EXPORT_H
#define ATTNOPS_TOOLS_EXPORT_H

#include "harness_case.h"

/* The .npy export of `golden` and `run --save`: per case a directory of
 * tensors (the kernel and benchmark chains' outputs too when given, else
 * NULL), one manifest.json.  Each returns 0, or -1 after a message. */
typedef struct export_set export_set;
export_set *export_open(const char *dir); /* NULL after a message */
int export_fa_case(export_set *x, const harness_case *hc, const fa_case *golden, const fa_case *kernel,
                   const fa_case *bench);
/* KeyPool: the chains after kp_case_run, with their pooled_key outputs. */
int export_kp_case(export_set *x, const harness_case *hc, const kp_case *golden, const tu_tensor *golden_pooled,
                   const kp_case *kernel, const tu_tensor *kernel_pooled);
/* AttnRes: the case's inputs and its chains after ar_case_run. */
int export_ar_case(export_set *x, const harness_case *hc, const ar_case *c, ar_chain *golden, ar_chain *kernel,
                   ar_chain *bench);
int export_close(export_set *x); /* writes manifest.json; 0 or -1 */

#endif
