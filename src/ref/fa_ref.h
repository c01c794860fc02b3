/* The FlashAttention golden: exact double arithmetic on the validated problem.
 * Inputs are widened exactly, every product and sum is double, outputs are
 * rounded once to their dtype.  Memory is O(S2) per thread (never S1 x S2). */
#ifndef ATTNOPS_FA_REF_H
#define ATTNOPS_FA_REF_H

#include "fa/fa_problem.h"

size_t fa_ref_fwd_workspace(const fa_problem *p);
void fa_ref_fwd(const fa_problem *p, void *workspace);
size_t fa_ref_bwd_workspace(const fa_problem *p);
void fa_ref_bwd(const fa_problem *p, void *workspace);

/* The double cores, on contiguous canonical arrays (exposed for the
 * finite-difference test): q [N1][T1][D], k [N2][T2][D], v [N2][T2][Dv],
 * o/dy [N1][T1][Dv], m/l [N1][T1], dq/dk/dv like q/k/v, where T = B*S for
 * the padded layouts (set p->T1, p->T2) and batch b's rows start at b*S.
 * scratch: fa_ref_scratch_doubles(p, backward) doubles. */
size_t fa_ref_scratch_doubles(const fa_problem *p, bool backward);
void fa_ref_forward_f64(const fa_problem *p, const double *q, const double *k, const double *v, double *o, double *m,
                        double *l, double *scratch);
void fa_ref_backward_f64(const fa_problem *p, const double *q, const double *k, const double *v, const double *o,
                         const double *dy, const double *m, const double *l, double *dq, double *dk, double *dv,
                         double *scratch);
/* FP8 inputs (spec 6): the same arrays hold the f8 values. */
void fa_ref_backward_fp8_f64(const fa_problem *p, const double *q, const double *k, const double *v, const double *o,
                             const double *dy, const double *m, const double *l, double *dq, double *dk, double *dv,
                             double *scratch);

#endif
