/* The f8 formats' rounding parameters, a property of the dtype: what the
 * fast kernels' vector rounding (the kernel table's fp8_round) needs without
 * the FlashAttention FP8 semantics of fa/fa_fp8.h. */
#ifndef ATTNOPS_CORE_F8_FORMAT_H
#define ATTNOPS_CORE_F8_FORMAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attnops.h"

/* x rounded to the nearest f8 value (ties to even) in float, for the fast
 * kernel's tiles (fa_fp8_round is the golden's, in double): the quantum of x is
 * 2^(max(exponent, emin) - mantissa bits); rintf rounds ties to even.
 * Overflow past the largest finite value gives NaN (e4m3fn has no
 * infinity) or inf (e5m2), as the exact conversion does. */
typedef struct ao_f8_format {
    int man_bits, emin;
    float max_finite, overflow;
} ao_f8_format;

static inline ao_f8_format ao_f8_format_of(attnops_dtype fp8)
{
    if (fp8 == ATTNOPS_DTYPE_F8_E4M3FN) return (ao_f8_format){3, -6, 448.0f, NAN};
    return (ao_f8_format){2, -14, 57344.0f, INFINITY};
}

static inline float ao_f8_round_f32(float x, const ao_f8_format *f)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    const uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return a > 0x7f800000u ? x : copysignf(f->overflow, x); /* NaN stays, inf overflows */
    int e = (int)(a >> 23) - 127;
    if (e < f->emin) e = f->emin;
    const uint32_t qbits = (uint32_t)(e - f->man_bits + 127) << 23;
    float quantum, ax;
    memcpy(&quantum, &qbits, 4);
    memcpy(&ax, &a, 4);
    float r = rintf(ax / quantum) * quantum; /* exact: quantum is a power of two */
    if (r > f->max_finite) r = f->overflow;
    return copysignf(r, x);
}

#endif
