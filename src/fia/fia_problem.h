/* FusedInferAttentionScore semantics shared by every implementation: the
 * validated problem (fia_validate.c), how a (batch, head, position) finds
 * its element in a contiguous or paged tensor, the per-batch lengths, and
 * which keys a query row keeps (fia_mask.c).  The rules and their sources
 * are docs/FIA.md and docs/FIA_SPEC.md.
 *
 * Indices: b batch, h query head (n2 = h / G its kv head, G = N1 / N2),
 * i query row within the batch (0 .. act_q[b] - 1), j key position
 * (0 .. act_kv[b] - 1), d head dim. */
#ifndef ATTNOPS_FIA_PROBLEM_H
#define ATTNOPS_FIA_PROBLEM_H

#include <math.h>

#include "attn/attn_problem.h"
#include "core/core.h"

/* Element (b, n, s, d) of a contiguous q-like tensor: data + ((b sb + n sn
 * + (row0[b] + s) ss + d sd) elements, row0 the batch's first token (TND)
 * or 0.  A paged key/value: s goes through the block table instead. */
typedef struct fia_view {
    const char *data;
    attnops_dtype dtype;
    int64_t es;             /* bytes per element */
    int64_t sb, sn, ss, sd; /* element strides of batch, head, position, head dim */
    /* paged: the cache [block_num, block_size, N D] or [block_num, N, block_size, D] */
    int64_t s_block;        /* element stride of one physical block (ss: of one row in it) */
    /* the NZ (fractal) cache [block_num, N, D / c0, block_size, c0]: the head dim in chunks of c0, chunk k at
     * k sc0 (c0 = 0: a row's head dim is one run, sd apart) */
    int64_t c0, sc0;
} fia_view;

/* The element offset of head-dim element d within a row (fractal or not). */
static inline int64_t fia_d_at(const fia_view *v, int64_t d)
{
    return v->c0 ? (d / v->c0) * v->sc0 + (d % v->c0) * v->sd : d * v->sd;
}

/* The row's head dim is one contiguous run: the fast kernels' direct loads take it. */
static inline bool fia_row_contiguous(const fia_view *v) { return v->sd == 1 && !v->c0; }

/* The mask a prompt row or a decode step reads. */
typedef enum fia_mask_kind {
    FIA_MASK_NONE = 0,
    FIA_MASK_USER,       /* [b|0][i][j] (prompt modes 0, 1) or [b][j] (decode) */
    FIA_MASK_COMPRESSED  /* modes 2, 3, 4: the rule, the tile's contents unused */
} fia_mask_kind;

/* int8 key/value dequantisation of one tensor: x_hat = (x + offset) * scale. */
typedef enum fia_quant_kind {
    FIA_QUANT_NONE = 0,
    FIA_QUANT_CHANNEL, /* [n2][d] (per tensor: one value, strides 0) */
    FIA_QUANT_TOKEN,   /* [b][s] */
    FIA_QUANT_HEAD,    /* [n2] */
    FIA_QUANT_TOKEN_HEAD /* [b][n2][s] */
} fia_quant_kind;

typedef struct fia_quant {
    fia_quant_kind kind;
    const char *scale, *offset; /* offset NULL: 0 */
    attnops_dtype scale_dtype, offset_dtype;
    int64_t s0, s1, s2; /* element strides of the kind's indices, in order ([n2][d], [b][s], [n2], [b][n2][s]) */
} fia_quant;

typedef struct fia_problem {
    int64_t B, N1, N2, G, S1, S2, D, Dv, Dr; /* S1, S2: the tensors' (TND: the longest batch's); S2 paged: capacity */
    attnops_layout layout, out_layout;
    bool decode;          /* S1 = 1: the incremental branch (masks per batch, tokens and modes unused) */
    bool paged;
    double scale;
    attn_rule rule; /* active: a prompt with a mask (a decode step keeps every key the mask leaves) */
    int64_t inner_precise;
    bool lse_flag;

    fia_view q, k, v, qr, kr, out; /* qr, kr: data NULL without MLA */
    const attnops_tensor *lse;     /* NULL: none (flag off and no tensor) */

    /* per-batch lengths: a value per batch, or one for all (stride 0); TND
     * cumulative, read through fia_q_len / fia_q_row0 */
    const char *q_len, *kv_len;
    attnops_dtype q_len_dtype, kv_len_dtype;
    int64_t q_len_stride, kv_len_stride;
    bool q_cumulative, kv_cumulative;

    /* paged KV: table [B, table_cols] i32 */
    const int32_t *table;
    int64_t table_sb, table_sc, table_cols, block_size;

    /* mask and position bias */
    fia_mask_kind mask;
    const char *mask_data;
    int64_t mask_sb, mask_si, mask_sj; /* element strides of [b][i][j] (sb 0: shared by the batches) */
    const char *pse;
    attnops_dtype pse_dtype;
    int64_t pse_sb, pse_sh, pse_si, pse_sj;
    /* attnops extensions: the cap (0: off) and the ALiBi slopes (NULL: none), element strides of [b|.][h] */
    double softcap;
    const float *alibi;
    int64_t alibi_sb, alibi_sh;
    bool alibi_from_starts, alibi_sqrt; /* CANN's rule (pseType 2 / 3); else flash-attn's bottom-right */
    int64_t alibi_shift;                /* q_start - kv_start under CANN's rule */

    fia_quant kq, vq; /* int8 key/value */

    attn_sinks sink; /* [N1] of any float dtype (data NULL: none) */

    /* A FlashAttention forward run here (attn/attn_plan.c): every row's
     * (max, sum) of the scaled scores also go to its statistics. */
    void (*row_stats)(const void *ctx, int64_t b, int64_t h, int64_t i, float max, float sum);
    const void *row_stats_ctx;

    attnops_impl impl;
    int threads, team, deterministic;
} fia_problem;

/* Element i of an int32 or int64 list (lengths). */
static inline int64_t fia_int_at(const char *data, attnops_dtype dt, int64_t i)
{
    if (dt == ATTNOPS_DTYPE_I32) return ((const int32_t *)(const void *)data)[i];
    return ((const int64_t *)(const void *)data)[i];
}

/* Validates everything (docs/FIA.md "Validation"); fills p.
 * Nothing is read from outputs or written. */
attnops_status fia_validate(const attnops_fia_args *a, const char *op, fia_problem *p);
/* attention_out's and softmax_lse's shapes from the inputs' shapes alone
 * (attnops_fused_infer_attention_score_output_shapes, which has checked
 * query, key and value with ao_check_shape_only). */
attnops_status fia_output_shapes(const attnops_fia_args *a, const char *op, attnops_output_shape *out,
                                 attnops_output_shape *lse);

/* softmax_lse of query row `row` (TND: the token) of batch b, head h, when
 * the flag asks for it; and a row without keys (or a padded one): out 0,
 * lse +inf (fia_mask.c).  Both implementations write through these. */
void fia_write_lse(const fia_problem *p, int64_t b, int64_t h, int64_t row, double value);
void fia_empty_row(const fia_problem *p, int64_t b, int64_t h, int64_t row);

/* The int8 key/value dequantisation parameters into p->kq, p->vq
 * (fia_antiquant.c); after the key/value dims are known. */
attnops_status fia_validate_antiquant(const attnops_fia_args *a, const char *op, fia_problem *p);

/* Per-batch lengths (0 for a batch with none): the query rows the batch has
 * (decode: 1), its keys; its first query and key row in a TND tensor. */
int64_t fia_q_len(const fia_problem *p, int64_t b);
int64_t fia_kv_len(const fia_problem *p, int64_t b);
int64_t fia_q_row0(const fia_problem *p, int64_t b);
int64_t fia_kv_row0(const fia_problem *p, int64_t b);

/* The element offset (in elements of v's dtype) of (b, n, s, 0) of a
 * query-like view, and of key position s of batch b, head n2 in a key-like
 * view (contiguous, or through the block table). */
static inline int64_t fia_q_at(const fia_view *v, int64_t b, int64_t n, int64_t row)
{
    return b * v->sb + n * v->sn + row * v->ss;
}
static inline int64_t fia_kv_at(const fia_problem *p, const fia_view *v, int64_t b, int64_t n2, int64_t row0,
                                int64_t s)
{
    if (!p->paged) return b * v->sb + n2 * v->sn + (row0 + s) * v->ss;
    const int64_t block = p->table[b * p->table_sb + (s / p->block_size) * p->table_sc];
    return block * v->s_block + n2 * v->sn + (s % p->block_size) * v->ss;
}

/* Whether the user mask drops key j of query row i of batch b. */
static inline bool fia_user_masked(const fia_problem *p, int64_t b, int64_t i, int64_t j)
{
    return p->mask == FIA_MASK_USER && *(const uint8_t *)(p->mask_data + b * p->mask_sb + i * p->mask_si +
                                                          j * p->mask_sj) != 0;
}

/* Whether query row i of batch b keeps key j (i < act_q[b], j < act_kv[b]):
 * the user mask, then the sparse mode's band of the batch, `band` =
 * attn_band_of(&p->rule, b, L1, L2), made once per batch by the caller. */
static inline bool fia_kept(const fia_problem *p, const attn_band *band, int64_t b, int64_t i, int64_t j)
{
    return !fia_user_masked(p, b, i, j) && attn_band_keeps(band, i, j);
}
/* The same rule as a band where no user mask applies: row i keeps exactly
 * the keys lo <= j <= hi of 0 .. L2 - 1 (lo, hi may lie outside it); false
 * with a user mask (ask fia_kept per key).  The fast kernel masks a tile's
 * row in two runs. */
bool fia_kept_band(const fia_problem *p, int64_t b, int64_t i, int64_t L1, int64_t L2, int64_t *lo, int64_t *hi);

/* The dequantisation of an int8 key or value element (b, n2, s, d): its
 * scale and offset (1 and 0 for a float cache). */
void fia_dequant(const fia_quant *q, int64_t b, int64_t n2, int64_t s, int64_t d, double *scale, double *offset);

/* The shift of the ALiBi distance |i - j + shift| (before any square root) in a batch of L1 query and L2 key
 * rows: the start indices' under CANN's rule, the bottom-right corner's under flash-attn's. */
static inline int64_t fia_alibi_shift(const fia_problem *p, int64_t L1, int64_t L2)
{
    return p->alibi_from_starts ? p->alibi_shift : L2 - L1;
}

#endif
