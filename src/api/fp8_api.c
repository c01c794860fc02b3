/* attnops_fp8_quantize_blocks: the golden's block quantisation of FP8
 * inputs (spec 6, get_block_quant_scale / block_quant_or_dequant_single). */
#include <math.h>
#include <string.h>

#include "fa/fa_fp8.h"
#include "fa/fa_problem.h"

static const char OP[] = "Fp8QuantizeBlocks";

/* max |x| over rows [s0, s1) of head (b, n); false at a non-finite value. */
static bool block_max(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t s1, int64_t D, double *mx)
{
    *mx = 0.0;
    for (int64_t s = s0; s < s1; s++)
        for (int64_t d = 0; d < D; d++) {
            const double x = ao_load_f64(fa_at(v, b, n, s, d), v->dtype);
            if (!isfinite(x)) return false;
            *mx = fmax(*mx, fabs(x));
        }
    return true;
}

attnops_status attnops_fp8_quantize_blocks(const attnops_tensor *src, attnops_layout layout, int64_t head_num,
                                           const attnops_tensor *out, const attnops_tensor *d_scale)
{
    ao_clear_error();
    if (layout == ATTNOPS_LAYOUT_TND)
        return ao_fail(ATTNOPS_ERR_UNSUPPORTED, "%s: layout TND is not supported (FP8 FlashAttention takes the "
                       "padded layouts only).", OP);
    if (layout < ATTNOPS_LAYOUT_BNSD || layout > ATTNOPS_LAYOUT_SBH)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: layout is %d; it must be BNSD, BSND, BSH or SBH.", OP,
                       (int)layout);
    const bool hidden = layout == ATTNOPS_LAYOUT_BSH || layout == ATTNOPS_LAYOUT_SBH;
    if (hidden && head_num <= 0)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: head_num is %lld; layout %s needs the head count (>= 1).", OP,
                       (long long)head_num, attnops_layout_name(layout));
    int64_t dims[4], odims[4];
    fa_view sv, ov;
    attnops_status st = fa_layout_view(OP, "src", src, layout, hidden ? head_num : 0, dims, &sv);
    if (st != ATTNOPS_SUCCESS) return st;
    if (src->dtype != ATTNOPS_DTYPE_F32 && src->dtype != ATTNOPS_DTYPE_F16 && src->dtype != ATTNOPS_DTYPE_BF16)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: src has dtype %s; it must be f32, f16 or bf16.", OP,
                       attnops_dtype_name(src->dtype));
    if ((st = fa_layout_view(OP, "out", out, layout, hidden ? head_num : 0, odims, &ov)) != ATTNOPS_SUCCESS) return st;
    if (out->dtype != ATTNOPS_DTYPE_F8_E4M3FN && out->dtype != ATTNOPS_DTYPE_F8_E5M2)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: out has dtype %s; it must be f8_e4m3fn or f8_e5m2.", OP,
                       attnops_dtype_name(out->dtype));
    if (memcmp(dims, odims, sizeof dims) != 0)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: out (B %lld, S %lld, N %lld, D %lld) must have src's sizes "
                       "(B %lld, S %lld, N %lld, D %lld).", OP, (long long)odims[0], (long long)odims[1],
                       (long long)odims[2], (long long)odims[3], (long long)dims[0], (long long)dims[1],
                       (long long)dims[2], (long long)dims[3]);
    const int64_t B = dims[0], S = dims[1], N = dims[2], D = dims[3], nblk = (S + FA_FP8_BLOCK - 1) / FA_FP8_BLOCK;
    if (!d_scale) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: d_scale is NULL.", OP);
    const int64_t want[4] = {B, N, nblk, 1};
    if (d_scale->dtype != ATTNOPS_DTYPE_F32 || d_scale->rank != 4 || memcmp(d_scale->shape, want, sizeof want) != 0)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: d_scale must be f32 of shape [%lld, %lld, %lld, 1] (B, N, "
                       "ceil(S / 128), 1).", OP, (long long)B, (long long)N, (long long)nblk);
    for (int i = 0; i < 4; i++)
        if (d_scale->strides[i] < 0 || (d_scale->strides[i] == 0 && want[i] > 1))
            return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: d_scale has stride %lld in dimension %d; its elements "
                           "must not overlap.", OP, (long long)d_scale->strides[i], i);
    if (!d_scale->data && B * N * nblk > 0) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: d_scale has a NULL data pointer.", OP);
    const char *lo[3], *hi[3];
    const attnops_tensor *all[3] = {src, out, d_scale};
    for (int i = 0; i < 3; i++) ao_tensor_extent(all[i], &lo[i], &hi[i]);
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (lo[i] < hi[j] && lo[j] < hi[i])
                return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: tensors '%s' and '%s' overlap in memory.", OP,
                               i == 0 ? "src" : "out", j == 1 ? "out" : "d_scale");

    /* First pass: every block finite, before anything is written. */
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t s0 = 0; s0 < S; s0 += FA_FP8_BLOCK) {
                double mx;
                if (!block_max(&sv, b, n, s0, s0 + FA_FP8_BLOCK < S ? s0 + FA_FP8_BLOCK : S, D, &mx))
                    return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: src holds a non-finite value in batch %lld, head "
                                   "%lld, rows %lld..%lld.", OP, (long long)b, (long long)n, (long long)s0,
                                   (long long)(s0 + FA_FP8_BLOCK - 1));
            }
    const double fp8_max = fa_fp8_max(out->dtype);
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t s0 = 0; s0 < S; s0 += FA_FP8_BLOCK) {
                const int64_t s1 = s0 + FA_FP8_BLOCK < S ? s0 + FA_FP8_BLOCK : S;
                double mx;
                block_max(&sv, b, n, s0, s1, D, &mx);
                const double scale = mx > 0.0 ? fp8_max / mx : 1.0;
                for (int64_t s = s0; s < s1; s++)
                    for (int64_t d = 0; d < D; d++)
                        ao_store_f64(fa_at(&ov, b, n, s, d), out->dtype, ao_load_f64(fa_at(&sv, b, n, s, d), sv.dtype) * scale);
                const int64_t *st = d_scale->strides;
                ((float *)d_scale->data)[b * st[0] + n * st[1] + (s0 / FA_FP8_BLOCK) * st[2]] = (float)(1.0 / scale);
            }
    return ATTNOPS_SUCCESS;
}
