/* The position bias (spec 4), shared by the reference and the fast kernel.
 * The score of (i, j) is
 *     pse_type 1:        (q.k + bias) * scale
 *     pse_type 0, 2, 3:  q.k * scale + bias
 * and a masked score is then replaced by FA_MASK_FILL. */
#ifndef ATTNOPS_FA_PSE_H
#define ATTNOPS_FA_PSE_H

#include "fa/fa_problem.h"

/* The bias of (b, h, i, j), exactly (the tensor's value, or the generated
 * ALiBi in double); 0 without pse.  S1, S2 are batch b's lengths. */
double fa_pse_value(const fa_problem *p, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1, int64_t S2);

/* The same in fp32 for rows [i0, i0+rows) x columns [j0, j0+cols):
 * out[r*ld + c] (the tensor forms; kernels generate pse_type 2/3 from
 * fa_pse_slope / fa_pse_shift). */
void fa_pse_tile(const fa_problem *p, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                 int64_t S1, int64_t S2, float *out, int64_t ld);

/* pse_type 2/3 pieces for kernels that generate the bias themselves: the
 * slope of (b, h) and kv_start_idx - q_start_idx as batch b sees it, so
 * bias(i, j) = -slope * g(|j - i + shift|). */
float fa_pse_slope(const fa_problem *p, int64_t b, int64_t h);
int64_t fa_pse_shift(const fa_problem *p, int64_t b);

#endif
