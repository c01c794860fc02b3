/* attnops_dropout_mask: the keep mask the FlashAttention operators apply,
 * written out for comparison with a device's (spec 5); attnops_dropout_gen_mask:
 * the mask A2/A3 programs draw with aclnnDropoutGenMaskV2 and pass in. */
#include <string.h>

#include "fa/fa_dropout.h"
#include "fa/fa_problem.h"

static const char OP[] = "DropoutMask";

/* A rank-1 u8 output of at least `need` elements (exactly, when `exact`). */
static attnops_status check_output(const char *name, const attnops_tensor *t, int64_t need, bool exact)
{
    if (t->dtype != ATTNOPS_DTYPE_U8 || t->rank != 1 || t->strides[0] < 0)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: '%s' must be a 1-D u8 tensor with a non-negative stride.", OP,
                       name);
    if (exact ? t->shape[0] != need : t->shape[0] < need)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: '%s' has %lld elements; it needs %s%lld.", OP, name,
                       (long long)t->shape[0], exact ? "" : "at least ", (long long)need);
    if (!t->data && t->shape[0] > 0) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: '%s' has a NULL data pointer.", OP, name);
    if (t->shape[0] > 1 && t->strides[0] == 0)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: '%s' has stride 0, so its elements overlap.", OP, name);
    return ATTNOPS_SUCCESS;
}

attnops_status attnops_dropout_mask(const attnops_dropout_mask_args *a)
{
    ao_clear_error();
    if (!a) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: args is NULL.", OP);
    if (!a->byte_mask && !a->bit_mask)
        return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: give byte_mask, bit_mask or both; both are NULL.", OP);
    if (!(a->keep_prob > 0.0 && a->keep_prob <= 1.0))
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: keep_prob is %g; it must lie in (0, 1].", OP, a->keep_prob);
    if (a->head_num <= 0)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: head_num is %lld; it must be >= 1.", OP, (long long)a->head_num);
    fa_problem p;
    memset(&p, 0, sizeof p);
    p.N1 = a->head_num;
    if (a->actual_seq_qlen || a->actual_seq_kvlen) {
        attnops_status st = fa_derive_varlen(OP, a->actual_seq_qlen, a->actual_seq_kvlen, -1, -1, &p);
        if (st != ATTNOPS_SUCCESS) return st;
    } else {
        if (a->batch < 0 || a->seq_q < 0 || a->seq_kv < 0)
            return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: batch %lld, seq_q %lld, seq_kv %lld must not be negative.",
                           OP, (long long)a->batch, (long long)a->seq_q, (long long)a->seq_kv);
        p.B = a->batch, p.S1 = a->seq_q, p.S2 = a->seq_kv;
    }
    const int64_t count = fa_score_count(&p);
    if (a->byte_mask) {
        attnops_status st = check_output("byte_mask", a->byte_mask, count, true);
        if (st != ATTNOPS_SUCCESS) return st;
    }
    if (a->bit_mask) {
        attnops_status st = check_output("bit_mask", a->bit_mask, (count + 7) / 8, false);
        if (st != ATTNOPS_SUCCESS) return st;
    }

    const fa_dropout d = fa_dropout_make(a->seed, a->offset, a->keep_prob);
    uint8_t *bytes = a->byte_mask ? a->byte_mask->data : NULL, *bits = a->bit_mask ? a->bit_mask->data : NULL;
    const int64_t bs = a->byte_mask ? a->byte_mask->strides[0] : 0, ts = a->bit_mask ? a->bit_mask->strides[0] : 0;
    if (bits)
        for (int64_t i = 0; i < a->bit_mask->shape[0]; i++) bits[i * ts] = 0;
    uint8_t keep[1024];
    int64_t e = 0; /* element index in the unaligned output order */
    for (int64_t b = 0; b < p.B; b++) {
        const fa_dropout_batch at = fa_dropout_batch_of(&p, &d, b);
        const int64_t s1 = fa_q_len(&p, b), s2 = fa_kv_len(&p, b);
        for (int64_t h = 0; h < p.N1; h++)
            for (int64_t i = 0; i < s1; i++)
                for (int64_t j0 = 0; j0 < s2; j0 += 1024) {
                    const int64_t m = s2 - j0 < 1024 ? s2 - j0 : 1024;
                    if (d.active) fa_dropout_row(&d, fa_dropout_row_start(&at, h, i), j0, m, keep);
                    else memset(keep, 1, (size_t)m);
                    for (int64_t c = 0; c < m; c++, e++) {
                        if (bytes) bytes[e * bs] = keep[c];
                        if (bits && keep[c]) bits[(e / 8) * ts] |= (uint8_t)(1u << (e % 8));
                    }
                }
    }
    return ATTNOPS_SUCCESS;
}

static const char GEN_OP[] = "DropoutGenMask";

/* The drop probability as the generator compares it: rounded to the draws' dtype. */
static float rounded_prob(double prob, attnops_dtype dtype)
{
    if (dtype == ATTNOPS_DTYPE_F16) return attnops_f16_to_f32(attnops_f32_to_f16((float)prob));
    if (dtype == ATTNOPS_DTYPE_BF16) return attnops_bf16_to_f32(attnops_f32_to_bf16((float)prob));
    return (float)prob;
}

attnops_status attnops_dropout_gen_mask(const attnops_dropout_gen_mask_args *a)
{
    ao_clear_error();
    if (!a) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: args is NULL.", GEN_OP);
    if (!a->bit_mask) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: bit_mask is NULL.", GEN_OP);
    if (!(a->prob >= 0.0 && a->prob <= 1.0))
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: prob is %g; it must lie in [0, 1].", GEN_OP, a->prob);
    if (a->prob_dtype != ATTNOPS_DTYPE_F32 && a->prob_dtype != ATTNOPS_DTYPE_F16 && a->prob_dtype != ATTNOPS_DTYPE_BF16)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: prob_dtype is %s; it must be f32, f16 or bf16.", GEN_OP,
                       attnops_dtype_name(a->prob_dtype));
    if (a->count < 0)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: count is %lld; it must not be negative.", GEN_OP,
                       (long long)a->count);
    attnops_status st = check_output("bit_mask", a->bit_mask, a->count / 8 + (a->count % 8 != 0), false);
    if (st != ATTNOPS_SUCCESS) return st;

    const int m = a->prob_dtype == ATTNOPS_DTYPE_F32 ? 23 : a->prob_dtype == ATTNOPS_DTYPE_F16 ? 10 : 7;
    const uint32_t low = (UINT32_C(1) << m) - 1;
    const float prob = rounded_prob(a->prob, a->prob_dtype), unit = 1.0f / (float)(UINT32_C(1) << m);
    const uint32_t key[2] = {(uint32_t)a->seed, (uint32_t)((uint64_t)a->seed >> 32)};
    const uint32_t counter[4] = {0, 0, (uint32_t)a->offset, (uint32_t)((uint64_t)a->offset >> 32)};
    uint8_t *bits = a->bit_mask->data;
    const int64_t ts = a->bit_mask->strides[0];
    for (int64_t i = 0; i < a->bit_mask->shape[0]; i++) bits[i * ts] = 0;
    for (int64_t e = 0; e < a->count; e += 4) {
        uint32_t w[4];
        ao_philox10_block(key, counter, (uint64_t)(e / 4), w);
        for (int k = 0; k < 4 && e + k < a->count; k++) /* u is exact: m bits over 2^m */
            if ((float)(w[k] & low) * unit >= prob) bits[((e + k) / 8) * ts] |= (uint8_t)(1u << ((e + k) % 8));
    }
    return ATTNOPS_SUCCESS;
}
