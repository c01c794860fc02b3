/* Scale (docs/RELIABILITY.md "Scale"): `make test-large`,
 * not every CI run (minutes and several GB).
 *
 *   tnd_1m     TND with T = 1,048,576 tokens (N1 = N2 = 1, D = Dv = 64, bf16)
 *              in 2,048 batches of mixed lengths (1 to 4,096, empty ones
 *              too), forward and backward: finite outputs, three short
 *              batches equal to the same batches run alone, and the peak
 *              RSS over the call at most inputs + outputs + 64 MiB.
 *   causal_128k  one causal sequence S1 = S2 = 131,072 (BNSD, N = 1, D = 64,
 *              bf16, sparse mode 3), forward and backward, timed.
 *   mask_2g    an explicit mask [S1, S2] of 46,341^2 > 2^31 elements (bool,
 *              2.1 GB), the causal pattern in mode 0, against sparse mode 3
 *              (the same mask as a band, no tensor) on the same data: the
 *              rows past element 2^31 are where 32-bit offsets would fail.
 *
 *   test_large [tnd_1m|causal_128k|mask_2g ...]   (default: all three) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "suite.h"

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static tu_tensor bf16(int rank, const int64_t *shape, tu_rng *r)
{
    tu_tensor t = tu_tensor_new(ATTNOPS_DTYPE_BF16, rank, shape, 0);
    tu_tensor_randn(&t, r, 1.0);
    return t;
}

static bool all_finite(const tu_tensor *t, const char *what)
{
    const int64_t n = tu_numel(&t->view);
    const size_t es = attnops_dtype_size(t->view.dtype);
    for (int64_t i = 0; i < n; i++) {
        const char *p = (const char *)t->view.data + (size_t)i * es;
        const float x = t->view.dtype == ATTNOPS_DTYPE_F32 ? *(const float *)p : attnops_bf16_to_f32(*(const uint16_t *)p);
        if (!isfinite(x)) {
            TU_CHECK(false, "%s[%lld] = %g", what, (long long)i, x);
            return false;
        }
    }
    return true;
}

static attnops_status run_fwd(const void *a, void *ws, size_t n) { return attnops_flash_attention_score(a, ws, n); }
static attnops_status run_bwd(const void *a, void *ws, size_t n) { return attnops_flash_attention_score_grad(a, ws, n); }

/* The workspace query, then the run on a canary-guarded workspace. */
static attnops_status two_phase_fwd(const attnops_fa_fwd_args *a)
{
    size_t bytes = 0;
    const attnops_status st = attnops_flash_attention_score_workspace_size(a, &bytes);
    return st != ATTNOPS_SUCCESS ? st : tu_run_with_workspace(run_fwd, a, bytes, "forward");
}

static attnops_status two_phase_bwd(const attnops_fa_bwd_args *a)
{
    size_t bytes = 0;
    const attnops_status st = attnops_flash_attention_score_grad_workspace_size(a, &bytes);
    return st != ATTNOPS_SUCCESS ? st : tu_run_with_workspace(run_bwd, a, bytes, "backward");
}

/* One problem's tensors and argument structs (q-like [rows, N, D] or BNSD). */
typedef struct big {
    tu_tensor q, k, v, dy, out, smax, ssum, dq, dk, dv;
    attnops_fa_fwd_args fwd;
    attnops_fa_bwd_args bwd;
} big;

static void big_init(big *b, int rank, const int64_t *qshape, const int64_t *kshape, const int64_t *stat_shape,
                     int stat_rank, uint64_t seed)
{
    tu_rng r = tu_rng_make(seed);
    b->q = bf16(rank, qshape, &r), b->k = bf16(rank, kshape, &r), b->v = bf16(rank, kshape, &r);
    b->dy = bf16(rank, qshape, &r);
    b->out = tu_tensor_new(ATTNOPS_DTYPE_BF16, rank, qshape, 0);
    b->smax = tu_tensor_new(ATTNOPS_DTYPE_F32, stat_rank, stat_shape, 0);
    b->ssum = tu_tensor_new(ATTNOPS_DTYPE_F32, stat_rank, stat_shape, 0);
    b->dq = tu_tensor_new(ATTNOPS_DTYPE_BF16, rank, qshape, 0);
    b->dk = tu_tensor_new(ATTNOPS_DTYPE_BF16, rank, kshape, 0);
    b->dv = tu_tensor_new(ATTNOPS_DTYPE_BF16, rank, kshape, 0);
    attnops_fa_fwd_args_init(&b->fwd);
    attnops_fa_params *p = &b->fwd.p;
    p->query = &b->q.view, p->key = &b->k.view, p->value = &b->v.view, p->head_num = 1;
    p->scale_value = 0.125, p->num_threads = 0;
    b->fwd.softmax_max = &b->smax.view, b->fwd.softmax_sum = &b->ssum.view, b->fwd.attention_out = &b->out.view;
    attnops_fa_bwd_args_init(&b->bwd);
    b->bwd.dy = &b->dy.view, b->bwd.attention_in = &b->out.view;
    b->bwd.softmax_max = &b->smax.view, b->bwd.softmax_sum = &b->ssum.view;
    b->bwd.dq = &b->dq.view, b->bwd.dk = &b->dk.view, b->bwd.dv = &b->dv.view;
}

static double big_bytes(const big *b)
{
    const tu_tensor *all[] = {&b->q, &b->k, &b->v, &b->dy, &b->out, &b->smax, &b->ssum, &b->dq, &b->dk, &b->dv};
    double n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) n += (double)all[i]->data_bytes;
    return n;
}

static void big_free(big *b)
{
    tu_tensor *all[] = {&b->q, &b->k, &b->v, &b->dy, &b->out, &b->smax, &b->ssum, &b->dq, &b->dk, &b->dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_tensor_free(all[i]);
}

/* Forward then backward, both timed; false after a reported failure. */
static bool run_chain(big *b, const char *label)
{
    b->bwd.p = b->fwd.p;
    double t0 = seconds();
    attnops_status st = two_phase_fwd(&b->fwd);
    const double tf = seconds() - t0;
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s forward: %s", label, attnops_last_error());
    if (st != ATTNOPS_SUCCESS) return false;
    t0 = seconds();
    st = two_phase_bwd(&b->bwd);
    const double tb = seconds() - t0;
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s backward: %s", label, attnops_last_error());
    printf("%s: forward %.1f s, backward %.1f s\n", label, tf, tb);
    return st == ATTNOPS_SUCCESS;
}

enum { TND_BATCHES = 2048, TND_TOKENS = 1 << 20 };

/* Rows [row0, row0 + rows) of a [T, 1, 64] bf16 output against the same
 * batch run alone, by the attention tolerance of the dtype and length. */
static void same_rows(const tu_tensor *big_out, int64_t row0, const tu_tensor *alone, int64_t rows, int batch)
{
    const int64_t n = rows * 64, shape[2] = {rows, 64};
    double *g = malloc(sizeof(double) * (size_t)n), *e = malloc(sizeof(double) * (size_t)n);
    const attnops_tensor part = attnops_tensor_contiguous((uint16_t *)big_out->view.data + row0 * 64,
                                                          ATTNOPS_DTYPE_BF16, 2, shape);
    tu_view_to_f64(&part, g);
    tu_tensor_to_f64(alone, e);
    const tu_tolerance tol = tu_attention_tolerance(ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_BF16, rows, tu_max_abs(e, n));
    const tu_compare_result r = tu_compare("tnd_1m batch alone", g, e, n, tol, shape, 2, "test_large tnd_1m");
    TU_CHECK(r.pass, "tnd_1m: batch %d (%lld rows) differs from the same batch alone", batch, (long long)rows);
    free(g);
    free(e);
}

static int tnd_1m(void)
{
    const int before = tu_failures;
    static int64_t cu[TND_BATCHES];
    int64_t t = 0;
    /* lengths 0 .. 4096, from a fixed pattern: mostly short, a few long */
    static const int64_t pattern[] = {1, 0, 17, 250, 1000, 4096, 333, 7, 64, 2048, 129, 0, 511, 900, 31, 2};
    for (int b = 0; b < TND_BATCHES; b++) {
        int64_t len = pattern[b % 16];
        if (b == TND_BATCHES - 1) len = TND_TOKENS - t; /* the last batch makes T exactly 2^20 */
        if (t + len > TND_TOKENS) len = TND_TOKENS - t;
        cu[b] = t += len;
    }
    TU_CHECK(t == TND_TOKENS, "T is %lld", (long long)t); /* the pattern runs out early: trailing batches are empty */
    /* the peak from here on: VmHWM reset, so a higher earlier peak (mask_2g's 2 GiB mask) does not count */
    const double rss0 = tu_rss_mark();
    big b;
    const int64_t qs[3] = {TND_TOKENS, 1, 64}, st[3] = {TND_TOKENS, 1, 8}, nb = TND_BATCHES;
    big_init(&b, 3, qs, qs, st, 3, tu_suite_seed());
    const attnops_tensor cuv = attnops_tensor_contiguous(cu, ATTNOPS_DTYPE_I64, 1, &nb);
    b.fwd.p.input_layout = ATTNOPS_LAYOUT_TND, b.fwd.p.actual_seq_qlen = &cuv, b.fwd.p.actual_seq_kvlen = &cuv;
    b.fwd.p.sparse_mode = 0;
    if (run_chain(&b, "tnd_1m (T = 2^20, 2048 batches)")) {
        const double grown = tu_status_bytes("VmHWM") - rss0, allowed = big_bytes(&b) + 64.0 * 1048576.0;
        printf("tnd_1m: peak RSS grew %.0f MiB over the call set-up; inputs + outputs %.0f MiB, + 64 MiB = %.0f MiB\n",
               grown / 1048576.0, big_bytes(&b) / 1048576.0, allowed / 1048576.0);
        if (isnan(rss0)) printf("SKIPPED tnd_1m's peak RSS check: /proc/self/clear_refs cannot reset VmHWM here\n");
        TU_CHECK(isnan(rss0) || grown <= allowed,
                 "tnd_1m: peak RSS grew %.0f MiB, above inputs + outputs + 64 MiB = %.0f MiB",
                 grown / 1048576.0, allowed / 1048576.0);
        all_finite(&b.out, "attention_out"), all_finite(&b.dq, "dq"), all_finite(&b.dk, "dk");
        all_finite(&b.dv, "dv");
        /* batches 2, 4 and 9 alone (views into the same tensors) against their rows of the big call */
        const int picks[] = {2, 4, 9};
        for (int i = 0; i < 3; i++) {
            const int bi = picks[i];
            const int64_t row0 = cu[bi - 1], rows = cu[bi] - cu[bi - 1], one = 1, len[1] = {rows};
            big s;
            const int64_t qs1[3] = {rows, 1, 64}, st1[3] = {rows, 1, 8};
            big_init(&s, 3, qs1, qs1, st1, 3, 1);
            memcpy(s.q.view.data, (uint16_t *)b.q.view.data + row0 * 64, (size_t)rows * 128);
            memcpy(s.k.view.data, (uint16_t *)b.k.view.data + row0 * 64, (size_t)rows * 128);
            memcpy(s.v.view.data, (uint16_t *)b.v.view.data + row0 * 64, (size_t)rows * 128);
            memcpy(s.dy.view.data, (uint16_t *)b.dy.view.data + row0 * 64, (size_t)rows * 128);
            const attnops_tensor lv = attnops_tensor_contiguous((void *)len, ATTNOPS_DTYPE_I64, 1, &one);
            s.fwd.p = b.fwd.p, s.fwd.p.query = &s.q.view, s.fwd.p.key = &s.k.view, s.fwd.p.value = &s.v.view;
            s.fwd.p.actual_seq_qlen = s.fwd.p.actual_seq_kvlen = &lv;
            /* not bit for bit: the tiling and the backward's kv splits follow the whole problem */
            if (run_chain(&s, "tnd_1m: one batch alone")) {
                const tu_tensor *alone[] = {&s.out, &s.dq, &s.dk, &s.dv}, *in_big[] = {&b.out, &b.dq, &b.dk, &b.dv};
                for (int o = 0; o < 4; o++)
                    same_rows(in_big[o], row0, alone[o], rows, bi);
            }
            big_free(&s);
        }
    }
    big_free(&b);
    return tu_failures == before;
}

static int causal_128k(void)
{
    const int before = tu_failures;
    const int64_t S = 131072, qs[4] = {1, 1, S, 64}, st[4] = {1, 1, S, 8}, mshape[2] = {2048, 2048};
    big b;
    big_init(&b, 4, qs, qs, st, 4, tu_suite_seed() + 1);
    tu_tensor mask = tu_tensor_new(ATTNOPS_DTYPE_BOOL, 2, mshape, 0);
    for (int64_t i = 0; i < 2048; i++)
        for (int64_t j = 0; j < 2048; j++) ((uint8_t *)mask.view.data)[i * 2048 + j] = j > i;
    b.fwd.p.input_layout = ATTNOPS_LAYOUT_BNSD, b.fwd.p.sparse_mode = 3, b.fwd.p.atten_mask = &mask.view;
    if (run_chain(&b, "causal_128k (S1 = S2 = 131072, D 64, bf16)")) {
        all_finite(&b.out, "attention_out"), all_finite(&b.dq, "dq"), all_finite(&b.dk, "dk");
        all_finite(&b.dv, "dv");
    }
    tu_tensor_free(&mask);
    big_free(&b);
    return tu_failures == before;
}

static int mask_2g(void)
{
    const int before = tu_failures;
    const int64_t S = 46341, qs[4] = {1, 1, S, 16}, st[4] = {1, 1, S, 8}, mshape[2] = {S, S};
    TU_CHECK(S * S > ((int64_t)1 << 31), "the mask is not above 2^31 elements");
    big a, b;
    big_init(&a, 4, qs, qs, st, 4, tu_suite_seed() + 2);
    big_init(&b, 4, qs, qs, st, 4, tu_suite_seed() + 2);
    tu_tensor mask = tu_tensor_new(ATTNOPS_DTYPE_BOOL, 2, mshape, 0);
    uint8_t *m = mask.view.data;
    for (int64_t i = 0; i < S; i++) {
        memset(m + i * S, 0, (size_t)(i + 1));
        memset(m + i * S + i + 1, 1, (size_t)(S - i - 1));
    }
    a.fwd.p.input_layout = b.fwd.p.input_layout = ATTNOPS_LAYOUT_BNSD;
    a.fwd.p.sparse_mode = 0, a.fwd.p.atten_mask = &mask.view; /* the whole [S1, S2] mask, 2.1 G elements */
    b.fwd.p.sparse_mode = 3, b.fwd.p.next_tokens = 0;        /* the same causal rule as a band */
    tu_tensor compressed = tu_tensor_new(ATTNOPS_DTYPE_BOOL, 2, (int64_t[]){2048, 2048}, 0);
    for (int64_t i = 0; i < 2048; i++)
        for (int64_t j = 0; j < 2048; j++) ((uint8_t *)compressed.view.data)[i * 2048 + j] = j > i;
    b.fwd.p.atten_mask = &compressed.view;
    if (run_chain(&a, "mask_2g (explicit [46341, 46341] mask)") && run_chain(&b, "mask_2g (the same as mode 3)")) {
        const tu_tensor *x[] = {&a.out, &a.dq, &a.dk, &a.dv}, *y[] = {&b.out, &b.dq, &b.dk, &b.dv};
        const char *names[] = {"attention_out", "dq", "dk", "dv"};
        for (int i = 0; i < 4; i++) {
            const int64_t n = tu_numel(&x[i]->view);
            double *e = malloc(sizeof(double) * (size_t)n), *g = malloc(sizeof(double) * (size_t)n);
            tu_tensor_to_f64(x[i], g), tu_tensor_to_f64(y[i], e);
            const tu_tolerance tol = tu_attention_tolerance(ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_BF16, S, tu_max_abs(e, n));
            const tu_compare_result r = tu_compare(names[i], g, e, n, tol, x[i]->view.shape, 4, "test_large mask_2g");
            TU_CHECK(r.pass, "mask_2g: %s with the explicit mask differs from mode 3", names[i]);
        }
    }
    tu_tensor_free(&compressed);
    tu_tensor_free(&mask);
    big_free(&a);
    big_free(&b);
    return tu_failures == before;
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*run)(void); } all[] = {
        {"tnd_1m", tnd_1m}, {"causal_128k", causal_128k}, {"mask_2g", mask_2g}};
    int passed = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        bool wanted = argc == 1;
        for (int a = 1; a < argc; a++) wanted |= !strcmp(argv[a], all[i].name);
        if (wanted) passed += all[i].run();
    }
    return tu_finish("test_large", passed);
}
