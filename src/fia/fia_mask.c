/* FusedInferAttentionScore's per-batch lengths, the kept-key predicate,
 * the dequantisation lookup and where a row's results go
 * (docs/FIA.md "Masks"; spec section 3.8).  Shared by the
 * golden and the fast kernel, and checked against the tests' own float64
 * statement of the rules (python/tests/fia_oracle.py). */
#include <math.h>

#include "fia/fia_problem.h"

/* Batch b's value of a length list, or of a cumulative one (its difference). */
static int64_t length(const char *data, attnops_dtype dt, int64_t stride, bool cumulative, int64_t b)
{
    if (!cumulative) return fia_int_at(data, dt, b * stride);
    return fia_int_at(data, dt, b * stride) - (b ? fia_int_at(data, dt, (b - 1) * stride) : 0);
}

int64_t fia_q_len(const fia_problem *p, int64_t b)
{
    if (p->decode && !p->q_cumulative) return 1; /* the decode branch ignores the q lengths but in TND */
    return p->q_len ? length(p->q_len, p->q_len_dtype, p->q_len_stride, p->q_cumulative, b) : p->S1;
}

int64_t fia_kv_len(const fia_problem *p, int64_t b)
{
    return p->kv_len ? length(p->kv_len, p->kv_len_dtype, p->kv_len_stride, p->kv_cumulative, b) : p->S2;
}

int64_t fia_q_row0(const fia_problem *p, int64_t b)
{
    return p->q_cumulative && b ? fia_int_at(p->q_len, p->q_len_dtype, (b - 1) * p->q_len_stride) : 0;
}

int64_t fia_kv_row0(const fia_problem *p, int64_t b)
{
    return p->kv_cumulative && b ? fia_int_at(p->kv_len, p->kv_len_dtype, (b - 1) * p->kv_len_stride) : 0;
}

bool fia_kept_band(const fia_problem *p, int64_t b, int64_t i, int64_t L1, int64_t L2, int64_t *lo, int64_t *hi)
{
    if (p->mask == FIA_MASK_USER) return false;
    const attn_band band = attn_band_of(&p->rule, b, L1, L2);
    *lo = i - band.pre, *hi = i + band.next;
    return true;
}

void fia_dequant(const fia_quant *q, int64_t b, int64_t n2, int64_t s, int64_t d, double *scale, double *offset)
{
    int64_t at = 0;
    switch (q->kind) {
    case FIA_QUANT_CHANNEL: at = n2 * q->s0 + d * q->s1; break;
    case FIA_QUANT_TOKEN: at = b * q->s0 + s * q->s1; break;
    case FIA_QUANT_HEAD: at = n2 * q->s0; break;
    case FIA_QUANT_TOKEN_HEAD: at = b * q->s0 + n2 * q->s1 + s * q->s2; break;
    default: *scale = 1.0, *offset = 0.0; return;
    }
    *scale = ao_load_f64(q->scale + at * (int64_t)attnops_dtype_size(q->scale_dtype), q->scale_dtype);
    *offset = q->offset ? ao_load_f64(q->offset + at * (int64_t)attnops_dtype_size(q->offset_dtype), q->offset_dtype)
                        : 0.0;
}

void fia_write_lse(const fia_problem *p, int64_t b, int64_t h, int64_t row, double value)
{
    const attnops_tensor *t = p->lse;
    if (!t || !p->lse_flag) return;
    const int64_t at = p->layout == ATTNOPS_LAYOUT_TND ? row * t->strides[0] + h * t->strides[1]
                                                       : b * t->strides[0] + h * t->strides[1] + row * t->strides[2];
    ((float *)t->data)[at] = (float)value;
}

void fia_empty_row(const fia_problem *p, int64_t b, int64_t h, int64_t row)
{
    const int64_t oa = fia_q_at(&p->out, b, h, row);
    char *out = (char *)p->out.data; /* writable: the view keeps it const */
    for (int64_t d = 0; d < p->Dv; d++) ao_store_f64(out + (oa + d * p->out.sd) * p->out.es, p->out.dtype, 0.0);
    fia_write_lse(p, b, h, row, INFINITY);
}
