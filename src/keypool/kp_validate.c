/* KeyPool argument validation: the golden's validate_inputs order (spec
 * A.2), each rule with the golden's sentence behind "KeyPool: ".  Null
 * required tensors -> 161001; malformed values -> 161002; RoPE inputs, which
 * CANN reserves and does not implement -> 161003.  Nothing is written
 * before every rule has passed, so the state cache is never touched by a
 * call that fails. */
#include <math.h>
#include <stdio.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/validate.h"
#include "keypool/kp_problem.h"

#define NULLPTR ATTNOPS_ERR_NULLPTR
#define INVALID ATTNOPS_ERR_PARAM_INVALID
#define UNSUPPORTED ATTNOPS_ERR_UNSUPPORTED

static kp_matrix matrix_of(const attnops_tensor *t, int row_dim)
{
    return (kp_matrix){(char *)t->data, t->dtype, (int64_t)attnops_dtype_size(t->dtype), t->strides[row_dim],
                       t->strides[row_dim + 1]};
}

static int32_t i32_at(const attnops_tensor *t, int64_t i0, int64_t i1)
{
    const int64_t at = i0 * t->strides[0] + i1 * (t->rank > 1 ? t->strides[1] : 0);
    return *(const int32_t *)((const char *)t->data + at * 4);
}

static attnops_status check_attributes(const char *op, const attnops_key_pool_args *a)
{
    const int64_t R = a->cmp_ratio;
    if (R < 2 || R > 128 || (R & (R - 1)))
        return ao_fail(INVALID, "%s: unsupported cmp_ratio=%lld; it must be one of 2, 4, 8, 16, 32, 64, 128.", op,
                       (long long)R);
    if (!(a->norm_eps > 0) || !isfinite(a->norm_eps))
        return ao_fail(INVALID, "%s: norm_eps must be positive (and finite); got %g.", op, a->norm_eps);
    if (a->rotary_mode != 0 && a->rotary_mode != 1)
        return ao_fail(INVALID, "%s: rotary_mode must be 0 or 1; got %lld.", op, (long long)a->rotary_mode);
    if (a->capacity != ATTNOPS_KEY_POOL_CAPACITY_CURRENT && a->capacity != ATTNOPS_KEY_POOL_CAPACITY_FIXED)
        return ao_fail(INVALID, "%s: capacity is %d; it must be ATTNOPS_KEY_POOL_CAPACITY_CURRENT (0) or FIXED (1).",
                       op, (int)a->capacity);
    if (a->impl != ATTNOPS_IMPL_AUTO && a->impl != ATTNOPS_IMPL_REFERENCE && a->impl != ATTNOPS_IMPL_CPU)
        return ao_fail(INVALID, "%s: impl is %d; it must be AUTO, REFERENCE or CPU (KeyPool has no benchmark "
                       "chain).", op, (int)a->impl);
    if (a->num_threads < 0)
        return ao_fail(INVALID, "%s: num_threads is %d; it must be >= 0.", op, (int)a->num_threads);
    return ATTNOPS_SUCCESS;
}

static attnops_status check_dtypes(const char *op, const attnops_key_pool_args *a)
{
    const attnops_dtype dt = a->hidden_states->dtype;
    if (dt != ATTNOPS_DTYPE_BF16 && dt != ATTNOPS_DTYPE_F16)
        return ao_fail(INVALID, "%s: hidden_states must be bf16 or f16; got %s.", op, attnops_dtype_name(dt));
    AO_TRY(ao_check_dtype(op, "wk", a->wk, dt, "wk and gate_weight must have hidden_states' dtype"));
    AO_TRY(ao_check_dtype(op, "gate_weight", a->gate_weight, dt, "wk and gate_weight must have hidden_states' dtype"));
    AO_TRY(ao_check_dtype(op, "ape", a->ape, ATTNOPS_DTYPE_F32, "ape must be FP32"));
    AO_TRY(ao_check_dtype(op, "state_cache", a->state_cache, ATTNOPS_DTYPE_F32, "state_cache must be FP32"));
    AO_TRY(ao_check_dtype(op, "cache_block_table", a->cache_block_table, ATTNOPS_DTYPE_I32,
                          "cache_block_table and start_pos must be INT32"));
    AO_TRY(ao_check_dtype(op, "start_pos", a->start_pos, ATTNOPS_DTYPE_I32,
                          "cache_block_table and start_pos must be INT32"));
    return ATTNOPS_SUCCESS;
}

/* Rules 6-12: ranks and shapes of the required inputs. */
static attnops_status check_shapes(const char *op, const attnops_key_pool_args *a, kp_problem *p)
{
    const attnops_tensor *x = a->hidden_states, *wk = a->wk;
    char buf[96];
    if (x->rank != 2 && x->rank != 3)
        return ao_fail(INVALID, "%s: hidden_states rank must be 2 (TH) or 3 (BSH); got shape %s.", op,
                       ao_shape_str(x, buf, sizeof buf));
    if (wk->rank != 2)
        return ao_fail(INVALID, "%s: wk and gate_weight must have the same rank-2 shape [D, H]; wk has shape %s.", op,
                       ao_shape_str(wk, buf, sizeof buf));
    AO_TRY(ao_check_shape(op, "gate_weight", a->gate_weight, wk->shape, 2,
                          "wk and gate_weight must have the same rank-2 shape"));
    p->D = wk->shape[0], p->H = wk->shape[1];
    if (p->D < 1 || p->H < 1)
        return ao_fail(INVALID, "%s: wk has shape %s; D and H must be at least 1 (only hidden_states' B, S or T may "
                       "be 0).", op, ao_shape_str(wk, buf, sizeof buf));
    if (x->shape[x->rank - 1] != p->H)
        return ao_fail(INVALID, "%s: hidden_states last dimension must match wk.shape[1]: %lld vs %lld.", op,
                       (long long)x->shape[x->rank - 1], (long long)p->H);
    const int64_t ape_shape[2] = {a->cmp_ratio, p->D};
    AO_TRY(ao_check_shape(op, "ape", a->ape, ape_shape, 2, "ape shape must be [cmp_ratio, D]"));
    const attnops_tensor *c = a->state_cache;
    if (c->rank != 3 || c->shape[2] != 2 * p->D)
        return ao_fail(INVALID, "%s: state_cache shape must be [block_num, block_size, 2*D] = [*, *, %lld]; got %s.",
                       op, (long long)(2 * p->D), ao_shape_str(c, buf, sizeof buf));
    if (a->cache_block_table->rank != 2)
        return ao_fail(INVALID, "%s: cache_block_table shape must be [B, max_block_num_per_batch]; got %s.", op,
                       ao_shape_str(a->cache_block_table, buf, sizeof buf));
    if (a->start_pos->rank != 1 || a->start_pos->shape[0] != a->cache_block_table->shape[0])
        return ao_fail(INVALID, "%s: start_pos shape must be [B] with B = %lld table rows; got %s.", op,
                       (long long)a->cache_block_table->shape[0], ao_shape_str(a->start_pos, buf, sizeof buf));
    return ATTNOPS_SUCCESS;
}

/* Rules 14-16: LayerNorm pair, reserved RoPE and seqused inputs. */
static attnops_status check_optional(const char *op, const attnops_key_pool_args *a, int64_t D)
{
    if (!a->norm_weight != !a->norm_bias)
        return ao_fail(INVALID, "%s: norm_weight and norm_bias must be passed as a pair; only %s was given.", op,
                       a->norm_weight ? "norm_weight" : "norm_bias");
    const int64_t d[1] = {D};
    const attnops_tensor *norm[2] = {a->norm_weight, a->norm_bias};
    const char *names[2] = {"norm_weight", "norm_bias"};
    for (int i = 0; i < 2 && norm[i]; i++) {
        AO_TRY(ao_check_view(op, names[i], norm[i]));
        AO_TRY(ao_check_dtype(op, names[i], norm[i], ATTNOPS_DTYPE_F32, "norm parameters must be FP32"));
        AO_TRY(ao_check_shape(op, names[i], norm[i], d, 1, "norm parameters must have shape [D]"));
    }
    if (!a->cos != !a->sin)
        return ao_fail(INVALID, "%s: cos and sin must be passed as a pair; only %s was given.", op,
                       a->cos ? "cos" : "sin");
    if (a->cos) return ao_fail(UNSUPPORTED, "%s: KeyPool RoPE is reserved but not implemented (cos/sin given).", op);
    if (a->seqused)
        return ao_fail(INVALID, "%s: seqused is reserved and must be NULL in this stage.", op);
    return ATTNOPS_SUCCESS;
}

/* Rules 17-18: the layout and the per-batch lengths. */
static attnops_status split_hidden(const char *op, const attnops_key_pool_args *a, kp_problem *p)
{
    const attnops_tensor *x = a->hidden_states, *cu = a->cu_seqlens;
    const int64_t table_b = a->cache_block_table->shape[0];
    p->th = x->rank == 2;
    if (!p->th) {
        if (cu) return ao_fail(INVALID, "%s: cu_seqlens must be absent for BSH (hidden_states is rank 3).", op);
        p->B = x->shape[0], p->S = x->shape[1], p->T = p->B * p->S;
    } else {
        if (!cu) return ao_fail(NULLPTR, "%s: cu_seqlens is required for TH (hidden_states is rank 2).", op);
        AO_TRY(ao_check_view(op, "cu_seqlens", cu));
        if (cu->rank != 1 || cu->dtype != ATTNOPS_DTYPE_I32)
            return ao_fail(INVALID, "%s: cu_seqlens must be a rank-1 INT32 tensor; got rank %d %s.", op, (int)cu->rank,
                           attnops_dtype_name(cu->dtype));
        if (cu->shape[0] != table_b + 1)
            return ao_fail(INVALID, "%s: cu_seqlens shape must be [B+1] = [%lld] (B = cache_block_table rows); got "
                           "[%lld].", op, (long long)(table_b + 1), (long long)cu->shape[0]);
        if (i32_at(cu, 0, 0) != 0)
            return ao_fail(INVALID, "%s: cu_seqlens[0] must be 0; got %d.", op, (int)i32_at(cu, 0, 0));
        for (int64_t b = 0; b < table_b; b++)
            if (i32_at(cu, b + 1, 0) < i32_at(cu, b, 0))
                return ao_fail(INVALID, "%s: cu_seqlens must be non-decreasing; cu_seqlens[%lld] = %d < "
                               "cu_seqlens[%lld] = %d.", op, (long long)(b + 1), (int)i32_at(cu, b + 1, 0),
                               (long long)b, (int)i32_at(cu, b, 0));
        if (i32_at(cu, table_b, 0) != x->shape[0])
            return ao_fail(INVALID, "%s: cu_seqlens[-1] must equal hidden_states.shape[0] = %lld; got %d.", op,
                           (long long)x->shape[0], (int)i32_at(cu, table_b, 0));
        p->B = table_b, p->S = 0, p->T = x->shape[0];
        p->cu = cu->data, p->cu_s = cu->strides[0];
    }
    if (p->B != table_b)
        return ao_fail(INVALID, "%s: cache_block_table batch does not match hidden_states: %lld rows vs B = %lld.", op,
                       (long long)table_b, (long long)p->B);
    return ATTNOPS_SUCCESS;
}

/* Rules 19-23: positions, the table and the cache's capacity. */
static attnops_status check_table(const char *op, const attnops_key_pool_args *a, const kp_problem *p)
{
    const attnops_tensor *tab = a->cache_block_table;
    for (int64_t b = 0; b < p->B; b++)
        if (kp_start(p, b) < 0)
            return ao_fail(INVALID, "%s: start_pos must be non-negative; start_pos[%lld] = %lld.", op, (long long)b,
                           (long long)kp_start(p, b));
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t l = 0; l < p->L; l++)
            if (i32_at(tab, b, l) < 0)
                return ao_fail(INVALID, "%s: cache_block_table must be non-negative; entry [%lld, %lld] = %d.", op,
                               (long long)b, (long long)l, (int)i32_at(tab, b, l));
    if (p->block_num == 0 || p->block_size == 0)
        return ao_fail(INVALID, "%s: state_cache must not be empty; block_num = %lld, block_size = %lld.", op,
                       (long long)p->block_num, (long long)p->block_size);
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t l = 0; l < p->L; l++)
            if (i32_at(tab, b, l) >= p->block_num)
                return ao_fail(INVALID, "%s: cache_block_table contains an out-of-range physical block: entry "
                               "[%lld, %lld] = %d, block_num = %lld.", op, (long long)b, (long long)l,
                               (int)i32_at(tab, b, l), (long long)p->block_num);
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t end = kp_start(p, b) + kp_len(p, b);
        if (end > p->L * p->block_size)
            return ao_fail(INVALID, "%s: updated sequence length exceeds logical cache capacity: batch %lld ends at "
                           "position %lld > L * block_size = %lld.", op, (long long)b, (long long)end,
                           (long long)(p->L * p->block_size));
        for (int64_t l = 0; l < (end + p->block_size - 1) / p->block_size; l++)
            if (i32_at(tab, b, l) == 0)
                return ao_fail(INVALID, "%s: physical block 0 is invalid for a used logical block: "
                               "cache_block_table[%lld, %lld] = 0 (batch %lld uses positions up to %lld).", op,
                               (long long)b, (long long)l, (long long)b, (long long)(end - 1));
    }
    return ATTNOPS_SUCCESS;
}

void kp_output_shape(const kp_problem *p, int32_t *rank, int64_t shape[3])
{
    if (p->capacity == ATTNOPS_KEY_POOL_CAPACITY_FIXED) {
        *rank = 3, shape[0] = p->B, shape[1] = (p->L * p->block_size + p->R - 1) / p->R, shape[2] = p->D;
    } else if (!p->th) {
        *rank = 3, shape[0] = p->B, shape[1] = (p->S + p->R - 1) / p->R, shape[2] = p->D;
    } else {
        const int64_t bound = p->T / p->R + p->B;
        *rank = 2, shape[0] = p->T < bound ? p->T : bound, shape[1] = p->D, shape[2] = 0;
    }
}

static attnops_status check_output(const char *op, const attnops_key_pool_args *a, kp_problem *p)
{
    const attnops_tensor *o = a->pooled_key;
    AO_TRY(ao_check_present(op, "pooled_key", o));
    AO_TRY(ao_check_view(op, "pooled_key", o));
    AO_TRY(ao_check_dtype(op, "pooled_key", o, p->dtype, "the output has hidden_states' dtype"));
    int32_t rank;
    int64_t shape[3];
    kp_output_shape(p, &rank, shape);
    AO_TRY(ao_check_shape(op, "pooled_key", o, shape, rank,
                          p->capacity == ATTNOPS_KEY_POOL_CAPACITY_FIXED
                              ? "fixed capacity: [B, ceil(L*block_size/cmp_ratio), D]"
                              : "pooledKey shape must use current-input capacity: BSH [B, ceil(S/cmp_ratio), D], "
                                "TH [min(T, floor(T/cmp_ratio) + B), D]"));
    const attnops_tensor *outs[2] = {o, a->state_cache};
    const char *names[2] = {"pooled_key", "state_cache"};
    AO_TRY(ao_check_disjoint(op, outs, names, 2));
    p->out = matrix_of(o, o->rank - 2);
    p->out_sb = o->rank == 3 ? o->strides[0] : 0;
    p->out_rows = shape[rank - 2];
    return ATTNOPS_SUCCESS;
}

attnops_status kp_validate(const attnops_key_pool_args *a, const char *op, bool need_output, kp_problem *p)
{
    if (!a) return ao_fail(NULLPTR, "%s: the argument struct is NULL.", op);
    *p = (kp_problem){0};
    const attnops_tensor *required[7] = {a->hidden_states, a->wk, a->gate_weight, a->ape, a->state_cache,
                                         a->cache_block_table, a->start_pos};
    const char *names[7] = {"hidden_states", "wk", "gate_weight", "ape", "state_cache", "cache_block_table",
                            "start_pos"};
    for (int i = 0; i < 7; i++) AO_TRY(ao_check_present(op, names[i], required[i]));
    for (int i = 0; i < 7; i++) AO_TRY(ao_check_view(op, names[i], required[i]));
    AO_TRY(check_attributes(op, a));
    AO_TRY(check_dtypes(op, a));
    AO_TRY(check_shapes(op, a, p));
    AO_TRY(check_optional(op, a, p->D));
    AO_TRY(split_hidden(op, a, p));

    p->dtype = a->hidden_states->dtype;
    p->R = a->cmp_ratio;
    p->L = a->cache_block_table->shape[1];
    p->block_num = a->state_cache->shape[0], p->block_size = a->state_cache->shape[1];
    p->eps = (double)(float)a->norm_eps; /* the golden adds eps to an f32 tensor */
    p->layer_norm = a->norm_weight != NULL;
    p->capacity = a->capacity;
    p->impl = a->impl;
#ifdef _OPENMP
    p->threads = a->num_threads > 0 ? a->num_threads : omp_get_max_threads();
#else
    p->threads = 1;
#endif
    p->team = p->threads; /* the entry points cap it for their run */
    p->start = a->start_pos->data, p->start_s = a->start_pos->strides[0];
    p->table = a->cache_block_table->data;
    p->table_sb = a->cache_block_table->strides[0], p->table_sl = a->cache_block_table->strides[1];
    AO_TRY(check_table(op, a, p));

    const attnops_tensor *x = a->hidden_states;
    p->hidden = matrix_of(x, x->rank - 2);
    p->hidden_sb = p->th ? 0 : x->strides[0];
    p->wk = matrix_of(a->wk, 0), p->gate = matrix_of(a->gate_weight, 0), p->ape = matrix_of(a->ape, 0);
    if (p->layer_norm) {
        p->norm_w = a->norm_weight->data, p->norm_ws = a->norm_weight->strides[0];
        p->norm_b = a->norm_bias->data, p->norm_bs = a->norm_bias->strides[0];
    }
    const attnops_tensor *c = a->state_cache;
    p->cache = c->data, p->cache_sb = c->strides[0], p->cache_ss = c->strides[1], p->cache_sc = c->strides[2];
    if (need_output) AO_TRY(check_output(op, a, p));
    return ATTNOPS_SUCCESS;
}

void attnops_key_pool_args_init(attnops_key_pool_args *a)
{
    if (!a) return;
    *a = (attnops_key_pool_args){0};
    a->cmp_ratio = 4;
    a->norm_eps = 1e-6;
    a->rotary_mode = 1;
    a->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED; /* aclnnKeyPool's infershape today */
}
