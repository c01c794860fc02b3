#include "fa/fa_pse.h"

#include <math.h>

/* BNHS / 1NHS: the tensor holds the last R (= 1024) rows of a causal ALiBi
 * whose values depend only on the diagonal j - i (S1 = S2 is required).
 * Row i >= S1 - R is read directly; an earlier row borrows row m = i mod R
 * at the column on the same diagonal (spec 4.2, kernel PseAlibiComputeOffset).
 * Columns above the diagonal are masked by the causal mask this form
 * requires; they read as 0. */
static const char *alibi_1024_at(const fa_problem *p, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1,
                                 int64_t S2)
{
    const fa_pse_cfg *c = &p->pse;
    if (p->varlen) {
        /* TND (kernel form, spec 4.2): only the diagonal matters; with
         * t = S2p - R (S2p = the tensor's last dim) and v = i - j - t, read
         * P[v][0] for v >= 0 and P[0][-v] otherwise (t < 0: always P[v][0]). */
        const int64_t S2p = p->S2, t = S2p - c->alibi_rows, v = i - j - t;
        if (t >= 0 && v < 0) return -v < S2p ? fa_at(&c->bias, b, h, 0, -v) : NULL;
        return v >= 0 && v < c->alibi_rows ? fa_at(&c->bias, b, h, v, 0) : NULL;
    }
    const int64_t R = c->alibi_rows, t = S1 - R;
    if (i >= t) return fa_at(&c->bias, b, h, i - t, j);
    const int64_t m = i % R, k = j - i + t + m;
    if (k < 0 || k >= S2) return NULL;
    return fa_at(&c->bias, b, h, m, k);
}

static double slope_of(const fa_pse_cfg *c, int64_t b, int64_t h) { return c->slopes[b * c->slope_sb + h * c->slope_sn]; }

/* q_start_idx - kv_start_idx as batch b sees it: in TND mode 8 only batch 0
 * is shifted (the 950 kernel zeroes the indices for the others, spec 3.4). */
int64_t fa_pse_shift(const fa_problem *p, int64_t b)
{
    if (p->varlen && p->mask.rule.active && p->mask.rule.mode == 8 && b != 0) return 0;
    return p->pse.kv_start - p->pse.q_start;
}

float fa_pse_slope(const fa_problem *p, int64_t b, int64_t h) { return (float)slope_of(&p->pse, b, h); }

double fa_pse_value(const fa_problem *p, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S1, int64_t S2)
{
    const fa_pse_cfg *c = &p->pse;
    switch (c->kind) {
    case FA_PSE_TENSOR: return ao_load_f64(fa_at(&c->bias, b, h, i, j), c->bias.dtype);
    case FA_PSE_ALIBI_1024: {
        const char *at = alibi_1024_at(p, b, h, i, j, S1, S2);
        return at ? ao_load_f64(at, c->bias.dtype) : 0.0;
    }
    case FA_PSE_SLOPES: {
        double delta = fabs((double)(j - i + fa_pse_shift(p, b)));
        return -slope_of(c, b, h) * (c->type == 3 ? sqrt(delta) : delta);
    }
    default: return 0.0;
    }
}

void fa_pse_tile(const fa_problem *p, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                 int64_t S1, int64_t S2, float *out, int64_t ld)
{
    const fa_pse_cfg *c = &p->pse;
    if (c->kind == FA_PSE_TENSOR) {
        for (int64_t r = 0; r < rows; r++) {
            const char *row = fa_at(&c->bias, b, h, i0 + r, j0);
            const int64_t sd = c->bias.sd;
            float *o = out + r * ld;
            switch (c->bias.dtype) {
            case ATTNOPS_DTYPE_F32: for (int64_t x = 0; x < cols; x++) o[x] = ((const float *)row)[x * sd]; break;
            case ATTNOPS_DTYPE_F16:
                for (int64_t x = 0; x < cols; x++) o[x] = attnops_f16_to_f32(((const uint16_t *)row)[x * sd]);
                break;
            default:
                for (int64_t x = 0; x < cols; x++) o[x] = attnops_bf16_to_f32(((const uint16_t *)row)[x * sd]);
                break;
            }
        }
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x = 0; x < cols; x++)
            out[r * ld + x] = (float)fa_pse_value(p, b, h, i0 + r, j0 + x, S1, S2);
}

attnops_status attnops_alibi_slopes(int64_t n, float *slopes)
{
    ao_clear_error();
    if (!slopes) return ao_fail(ATTNOPS_ERR_NULLPTR, "attnops_alibi_slopes: slopes is NULL.");
    if (n < 1 || n > (INT64_C(1) << 20))
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "attnops_alibi_slopes: n is %lld; it must be 1..2^20.", (long long)n);
    int64_t pw = 1;
    while (pw * 2 <= n) pw *= 2;
    const float base = (float)exp2(-8.0 / (double)pw), extra = (float)exp2(-4.0 / (double)pw);
    for (int64_t k = 1; k <= pw; k++) slopes[k - 1] = powf(base, (float)k);
    for (int64_t k = 0; k < n - pw; k++) slopes[pw + k] = powf(extra, (float)(2 * k + 1));
    return ATTNOPS_SUCCESS;
}
