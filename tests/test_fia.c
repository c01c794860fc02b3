/* FusedInferAttentionScore from C, per ISA: the fast split-KV kernel against
 * the golden (the shared comparator's attention tolerance) on decode and
 * prompt steps over contiguous and paged caches, GQA, per-batch lengths and
 * a causal prompt; its bits for 1 and 2 threads; canaries around every
 * output.  (The golden against an independent float64 oracle, every rule,
 * is python/tests/test_fia.py.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "testutil.h"

typedef struct fia_case {
    const char *name;
    attnops_dtype dtype;
    int64_t B, N1, N2, S1, S2, D, block; /* block > 0: a paged cache [blocks, N2, block, D], shuffled */
    int64_t kv_len[3];
    int64_t sparse_mode;
} fia_case;

static const fia_case CASES[] = {
    {"decode bf16 GQA 4, contiguous", ATTNOPS_DTYPE_BF16, 3, 8, 2, 1, 600, 64, 0, {600, 0, 129}, 0},
    {"decode f16 GQA 8, paged 16", ATTNOPS_DTYPE_F16, 2, 8, 1, 1, 1030, 32, 16, {1030, 17}, 0},
    {"decode f32 MHA, paged 128", ATTNOPS_DTYPE_F32, 2, 4, 4, 1, 300, 16, 128, {300, 1}, 0},
    {"prompt bf16 causal 3, paged 32", ATTNOPS_DTYPE_BF16, 2, 4, 2, 7, 200, 32, 32, {200, 9}, 3},
    {"prompt f32 no mask, contiguous", ATTNOPS_DTYPE_F32, 1, 2, 1, 70, 130, 16, 0, {130}, 0},
};

/* One case's tensors: q BNSD, k/v BNSD or paged, the table, the lengths, a mask. */
typedef struct fia_data {
    tu_tensor q, k, v, table, kv_len, mask, out, lse;
    attnops_fia_args a;
} fia_data;

static void make(const fia_case *c, fia_data *x, tu_rng *r)
{
    memset(x, 0, sizeof *x);
    const int64_t qs[4] = {c->B, c->N1, c->S1, c->D}, ls[4] = {c->B, c->N1, c->S1, 1};
    x->q = tu_tensor_new(c->dtype, 4, qs, 0);
    tu_tensor_randn(&x->q, r, 1.0);
    attnops_fia_args *a = &x->a;
    attnops_fia_args_init(a);
    if (c->block) {
        const int64_t cols = (c->S2 + c->block - 1) / c->block, blocks = c->B * cols + 2;
        const int64_t cs[4] = {blocks, c->N2, c->block, c->D}, ts[2] = {c->B, cols};
        x->k = tu_tensor_new(c->dtype, 4, cs, 0), x->v = tu_tensor_new(c->dtype, 4, cs, 0);
        x->table = tu_tensor_new(ATTNOPS_DTYPE_I32, 2, ts, 0);
        int32_t *t = x->table.view.data;
        for (int64_t i = 0; i < c->B * cols; i++) t[i] = (int32_t)(blocks - 1 - i); /* reversed: not in order */
        a->block_table = &x->table.view, a->block_size = c->block;
    } else {
        const int64_t ks[4] = {c->B, c->N2, c->S2, c->D};
        x->k = tu_tensor_new(c->dtype, 4, ks, 0), x->v = tu_tensor_new(c->dtype, 4, ks, 0);
    }
    tu_tensor_randn(&x->k, r, 1.0), tu_tensor_randn(&x->v, r, 1.0);
    x->kv_len = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, &c->B, 0);
    memcpy(x->kv_len.view.data, c->kv_len, sizeof(int64_t) * (size_t)c->B);
    if (c->sparse_mode) {
        const int64_t ms[2] = {2048, 2048};
        x->mask = tu_tensor_new(ATTNOPS_DTYPE_BOOL, 2, ms, 0);
        uint8_t *m = x->mask.view.data;
        for (int64_t i = 0; i < 2048 * 2048; i++) m[i] = i % 2048 > i / 2048;
        a->atten_mask = &x->mask.view, a->sparse_mode = c->sparse_mode;
    }
    x->out = tu_tensor_new(c->dtype, 4, qs, 0), x->lse = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, ls, 0);
    a->query = &x->q.view, a->key = &x->k.view, a->value = &x->v.view;
    a->actual_seq_lengths_kv = &x->kv_len.view;
    a->num_heads = c->N1, a->num_key_value_heads = c->N2, a->scale_value = 1.0 / sqrt((double)c->D);
    a->input_layout = ATTNOPS_LAYOUT_BNSD, a->softmax_lse_flag = true;
    a->attention_out = &x->out.view, a->softmax_lse = &x->lse.view;
}

static void release(fia_data *x)
{
    tu_tensor *all[] = {&x->q, &x->k, &x->v, &x->table, &x->kv_len, &x->mask, &x->out, &x->lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_tensor_free(all[i]);
}

static attnops_status run_fia(const void *a, void *ws, size_t n)
{
    return attnops_fused_infer_attention_score(a, ws, n);
}

static attnops_status call(fia_data *x, attnops_impl impl, int threads, double *out, double *lse)
{
    x->a.impl = impl, x->a.num_threads = threads;
    size_t bytes = 0;
    attnops_status st = attnops_fused_infer_attention_score_workspace_size(&x->a, &bytes);
    if (st == ATTNOPS_SUCCESS) st = tu_run_with_workspace(run_fia, &x->a, bytes, "fused_infer_attention_score");
    TU_CHECK(tu_canaries_ok(&x->out, "attention_out") && tu_canaries_ok(&x->lse, "softmax_lse"),
             "FusedInferAttentionScore wrote outside its outputs");
    tu_tensor_to_f64(&x->out, out), tu_tensor_to_f64(&x->lse, lse);
    return st;
}

static bool check_case(const fia_case *c, uint64_t seed)
{
    const int before = tu_failures;
    tu_rng r = tu_rng_make(seed);
    fia_data x;
    make(c, &x, &r);
    const int64_t n = tu_numel(&x.out.view), nl = tu_numel(&x.lse.view);
    double *gold = malloc(sizeof(double) * (size_t)(2 * n + 3 * nl)), *fast = gold + n, *gl = fast + n,
           *fl = gl + nl, *fl2 = fl + nl;
    TU_CHECK(call(&x, ATTNOPS_IMPL_REFERENCE, 2, gold, gl) == ATTNOPS_SUCCESS, "%s: golden: %s", c->name,
             attnops_last_error());
    TU_CHECK(call(&x, ATTNOPS_IMPL_CPU, 2, fast, fl) == ATTNOPS_SUCCESS, "%s: fast: %s", c->name,
             attnops_last_error());
    const attnops_dtype gemm = c->dtype == ATTNOPS_DTYPE_BF16 ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F32;
    TU_CHECK(tu_compare(c->name, fast, gold, n,
                        tu_attention_tolerance(c->dtype, gemm, c->S2, tu_max_abs(gold, n)), x.out.view.shape, 4,
                        NULL).pass, "%s: attention_out", c->name);
    for (int64_t i = 0; i < nl; i++) { /* lse: +inf rows alike, the rest within f32's tolerance */
        if (isinf(gl[i]) || isinf(fl[i])) {
            TU_CHECK(gl[i] == fl[i], "%s: lse[%lld] %g vs %g", c->name, (long long)i, fl[i], gl[i]);
            gl[i] = fl[i] = 0.0;
        }
    }
    TU_CHECK(tu_compare(c->name, fl, gl, nl, tu_attention_tolerance(ATTNOPS_DTYPE_F32, gemm, c->S2, 1.0),
                        x.lse.view.shape, 4, NULL).pass, "%s: softmax_lse", c->name);
    call(&x, ATTNOPS_IMPL_CPU, 1, gold, fl2); /* one thread: the same bits */
    TU_CHECK(!memcmp(gold, fast, sizeof(double) * (size_t)n), "%s: 1 and 2 threads differ", c->name);
    free(gold);
    release(&x);
    printf("%s %s (%s)\n", tu_failures == before ? "ok  " : "FAIL", c->name, attnops_cpu_isa());
    return tu_failures == before;
}

/* A block id outside the cache is refused, with a sentence, before anything is written. */
static bool check_refusal(void)
{
    const int before = tu_failures;
    tu_rng r = tu_rng_make(7);
    fia_data x;
    make(&CASES[1], &x, &r);
    ((int32_t *)x.table.view.data)[1] = (int32_t)x.k.view.shape[0];
    tu_tensor_poison(&x.out, 0x5A);
    const attnops_status st = attnops_fused_infer_attention_score(&x.a, NULL, 0);
    TU_CHECK(st == ATTNOPS_ERR_PARAM_INVALID && strstr(attnops_last_error(), "block_table[0][1]"),
             "a block id past the cache: status %d, \"%s\"", (int)st, attnops_last_error());
    TU_CHECK(tu_tensor_untouched(&x.out, 0x5A), "attention_out written by a refused call");
    release(&x);
    return tu_failures == before;
}

int main(void)
{
    tu_require_isa();
    int passed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) passed += check_case(&CASES[i], 2026120500 + i);
    passed += check_refusal();
    return tu_finish("test_fia", passed);
}
