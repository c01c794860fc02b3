/* FP8 block quantisation (spec 6), shared by the reference, the fast kernel
 * and the public quantisation helper.
 *
 * Inputs q, k, v, dy hold f8 values x_q = fp8(x * scale) per 128-row block
 * of a head; the d_scale tensors hold 1 / scale, so x ~ x_q * d_scale.  The
 * golden then quantises twice more, without and with a scale:
 *   Pq  = fp8(P * keep / keep_prob)                  (no scale)
 *   dSq = fp8(dS * sds), sds = FP8_MAX / max|dS| over a 128 x 128 tile
 *         (0 when that max is below FA_FP8_EPSILON), ids = 1 / sds (or 0). */
#ifndef ATTNOPS_FA_FP8_H
#define ATTNOPS_FA_FP8_H

#include <math.h>
#include <string.h>

#include "core/f8_format.h"
#include "fa/fa_problem.h"

#define FA_FP8_BLOCK 128
#define FA_FP8_EPSILON 1e-8

/* The largest finite value: 448 (e4m3fn), 57344 (e5m2). */
static inline double fa_fp8_max(attnops_dtype fp8) { return fp8 == ATTNOPS_DTYPE_F8_E4M3FN ? 448.0 : 57344.0; }

/* x rounded to the nearest f8 value (ties to even), as a double: the
 * reference's quantisation points, bit for bit ao_store_f64 then load. */
static inline double fa_fp8_round(double x, attnops_dtype fp8)
{
    uint8_t bits;
    ao_store_f64(&bits, fp8, x);
    return ao_load_f64(&bits, fp8);
}

/* The de-quantisation factor of row `row`'s block in head n of batch b. */
static inline double fa_fp8_dscale(const fa_view *v, int64_t b, int64_t n, int64_t row)
{
    return *(const float *)fa_at(v, b, n, row / FA_FP8_BLOCK, 0);
}

#endif
