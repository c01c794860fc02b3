#include "fa_case.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_fp8(attnops_dtype d) { return d == ATTNOPS_DTYPE_F8_E4M3FN || d == ATTNOPS_DTYPE_F8_E5M2; }

/* The dtype of outputs (and pse): out_dtype under FP8, the input dtype otherwise. */
static attnops_dtype io_dtype(const fa_case_shape *s) { return is_fp8(s->dtype) ? s->out_dtype : s->dtype; }

static tu_tensor qlike_of(const fa_case_shape *s, attnops_dtype dtype, int64_t sq, int64_t n, int64_t d)
{
    int64_t shape[4];
    int rank = fa_case_tensor_shape(s, s->B, sq, n, d, shape);
    return tu_tensor_new(dtype, rank, shape, s->pad);
}

/* An input (q, k, v, dy): the input dtype. */
static tu_tensor qlike(const fa_case_shape *s, int64_t sq, int64_t n, int64_t d)
{
    return qlike_of(s, s->dtype, sq, n, d);
}

/* An FP8 input: N(0, 1) values quantised per 128-row block by the public
 * helper, as the golden prepares device inputs; *dscale gets 1 / scale. */
static void fill_fp8(const fa_case_shape *s, tu_tensor *t, tu_tensor *dscale, tu_rng *r, int64_t sq, int64_t n,
                     int64_t d)
{
    tu_tensor src = qlike_of(s, ATTNOPS_DTYPE_F32, sq, n, d);
    tu_tensor_randn(&src, r, 1.0);
    int64_t shape[4] = {s->B, n, (sq + 127) / 128, 1};
    *dscale = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, shape, 0);
    attnops_status st = attnops_fp8_quantize_blocks(&src.view, s->layout, n, &t->view, &dscale->view);
    TU_CHECK(st == ATTNOPS_SUCCESS, "fp8 quantisation of a case input: %s", attnops_last_error());
    tu_tensor_free(&src);
}

bool fa_case_golden_masked(int64_t mode, int64_t S1, int64_t S2, int64_t pre, int64_t next, int64_t prefix,
                           int64_t i, int64_t j)
{
    /* triu(ones, k) masks j - i >= k; tril(ones, k) masks j - i <= k. */
    const int64_t d = j - i;
    switch (mode) {
    case 0: return d >= next + 1 || d <= -pre - 1;
    case 2: return d >= 1;
    case 3: return d >= S2 - S1 + 1;
    case 4: return d >= next + S2 - S1 + 1 || d <= -pre + S2 - S1 - 1;
    case 5:
    case 6: return d >= S2 - S1 + 1 && j >= prefix; /* triu, then columns [0, prefix) cleared */
    default: return false;
    }
}

static void make_list(tu_tensor *t, int64_t n, const int64_t *values)
{
    int64_t shape[1] = {n};
    *t = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, shape, 0);
    for (int64_t i = 0; i < n; i++) ((int64_t *)t->view.data)[i] = values[i];
}

/* The atten_mask of the case: golden-built for modes 0/5, random with some
 * fully masked rows for mode 1, lower-triangular compressed for the rest. */
static void make_mask(fa_case *c, tu_rng *r, const int64_t *prefix)
{
    const fa_case_shape *s = &c->shape;
    if (s->mask == FA_CASE_MASK_COMPRESSED) {
        int64_t shape[2] = {s->sparse_mode == 6 ? 3072 : 2048, 2048};
        c->mask = tu_tensor_new(ATTNOPS_DTYPE_BOOL, 2, shape, 0);
        uint8_t *m = c->mask.view.data;
        for (int64_t i = 0; i < shape[0]; i++)
            for (int64_t j = 0; j < 2048; j++)
                m[i * 2048 + j] = i < 2048 ? j > i : (j >= 1024); /* mode 6: [triu ; (0 | 1)] */
        return;
    }
    int64_t shape[4], rank = 4, nb = s->B, nn = s->N1;
    switch (s->mask) {
    case FA_CASE_MASK_SS: rank = 2, nb = nn = 1; break;
    case FA_CASE_MASK_11SS: nb = nn = 1; break;
    case FA_CASE_MASK_B1SS: nn = 1; break;
    default: break;
    }
    if (rank == 2) shape[0] = s->S1, shape[1] = s->S2;
    else shape[0] = nb, shape[1] = nn, shape[2] = s->S1, shape[3] = s->S2;
    const attnops_dtype auto_dtype = s->dtype == ATTNOPS_DTYPE_F16 ? ATTNOPS_DTYPE_U8 : ATTNOPS_DTYPE_BOOL;
    c->mask = tu_tensor_new(s->mask_dtype ? s->mask_dtype : auto_dtype, (int)rank, shape, s->pad);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t n = 0; n < nn; n++)
            for (int64_t i = 0; i < s->S1; i++)
                for (int64_t j = 0; j < s->S2; j++) {
                    bool masked = s->sparse_mode == 1
                                      ? (i % 7 == 3) || tu_uniform(r) < 0.3
                                      : fa_case_golden_masked(s->sparse_mode, s->S1, s->S2, s->pre, s->next,
                                                              prefix ? prefix[b] : 0, i, j);
                    const int64_t *st = c->mask.view.strides;
                    int64_t off = rank == 2 ? i * st[0] + j * st[1] : b * st[0] + n * st[1] + i * st[2] + j * st[3];
                    ((uint8_t *)c->mask.view.data)[off] = masked;
                }
}

/* The pse of the case, rounded to its dtype. */
static void make_pse(fa_case *c, tu_rng *r)
{
    const fa_case_shape *s = &c->shape;
    if (s->pse == FA_CASE_PSE_SLOPES_N || s->pse == FA_CASE_PSE_SLOPES_BN) {
        int64_t shape[2] = {s->B, s->N1};
        bool bn = s->pse == FA_CASE_PSE_SLOPES_BN;
        c->pse = tu_tensor_new(ATTNOPS_DTYPE_F32, bn ? 2 : 1, bn ? shape : shape + 1, 0);
        float *slopes = c->pse.view.data;
        attnops_alibi_slopes(s->N1, slopes);
        for (int64_t b = 1; bn && b < s->B; b++)
            for (int64_t n = 0; n < s->N1; n++) slopes[b * s->N1 + n] = slopes[n] / (float)(b + 1);
        return;
    }
    const bool alibi = s->pse == FA_CASE_PSE_BNHS || s->pse == FA_CASE_PSE_1NHS;
    int64_t shape[4] = {s->pse == FA_CASE_PSE_1NSS || s->pse == FA_CASE_PSE_1NHS ? 1 : s->B, s->N1,
                        s->pse == FA_CASE_PSE_BN1S ? 1 : (alibi ? 1024 : s->S1), s->S2};
    c->pse = tu_tensor_new(io_dtype(s), 4, shape, s->pad);
    if (!alibi) {
        tu_tensor_randn(&c->pse, r, 1.0);
        return;
    }
    /* The golden's one-sided ALiBi (spec 4.2): full[r][c] = slope * (c - r) for
     * c <= r, built on max(S1, 1024) rows; the input is its last 1024 rows and
     * last S2 columns (S2 > 1024 in the padded layouts; max S2 in TND). */
    float *slopes = malloc(sizeof(float) * (size_t)s->N1);
    attnops_alibi_slopes(s->N1, slopes);
    int64_t n = tu_numel(&c->pse.view);
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t b = 0, k = 0; b < shape[0]; b++)
        for (int64_t h = 0; h < s->N1; h++)
            for (int64_t m = 0; m < 1024; m++)
                for (int64_t j = 0; j < s->S2; j++, k++) {
                    int64_t row = (s->S1 > 1024 ? s->S1 : 1024) - 1024 + m;
                    v[k] = j <= row ? (double)slopes[h] * (double)(j - row) : 0.0;
                }
    tu_tensor_from_f64(&c->pse, v);
    free(v);
    free(slopes);
}

void fa_case_init(fa_case *c, const fa_case_shape *shape, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->shape = *shape;
    c->seed = seed;
    const fa_case_shape *s = &c->shape;
    const bool tnd = s->layout == ATTNOPS_LAYOUT_TND;
    if (tnd) { /* lengths -> B, longest S, totals and the cumulative lists */
        fa_case_shape *w = &c->shape;
        int64_t cq[32], ckv[32];
        w->B = w->nseq, w->S1 = w->S2 = 0, c->T1 = c->T2 = 0;
        for (int b = 0; b < w->nseq; b++) {
            if (w->seq_kv[b] < 0) w->seq_kv[b] = w->seq_q[b];
            c->T1 += w->seq_q[b], c->T2 += w->seq_kv[b];
            cq[b] = c->T1, ckv[b] = c->T2;
            if (w->seq_q[b] > w->S1) w->S1 = w->seq_q[b];
            if (w->seq_kv[b] > w->S2) w->S2 = w->seq_kv[b];
        }
        make_list(&c->cu_q, w->nseq, cq);
        make_list(&c->cu_kv, w->nseq, ckv);
    }
    const int64_t rq = tnd ? c->T1 : s->S1, rkv = tnd ? c->T2 : s->S2;
    c->q = qlike(s, rq, s->N1, s->D);
    c->k = qlike(s, rkv, s->N2, s->D);
    c->v = qlike(s, rkv, s->N2, s->Dv);
    c->dy = qlike(s, rq, s->N1, s->Dv);
    const attnops_dtype od = io_dtype(s);
    c->out = qlike_of(s, od, rq, s->N1, s->Dv);
    c->dq = qlike_of(s, od, rq, s->N1, s->D);
    c->dk = qlike_of(s, od, rkv, s->N2, s->D);
    c->dv = qlike_of(s, od, rkv, s->N2, s->Dv);
    if (s->Dr > 0) {
        c->qr = qlike(s, rq, s->N1, s->Dr), c->kr = qlike(s, rkv, s->N2, s->Dr);
        c->dqr = qlike(s, rq, s->N1, s->Dr), c->dkr = qlike(s, rkv, s->N2, s->Dr);
    }
    int64_t st[4] = {s->B, s->N1, s->S1, 8}, st_tnd[3] = {c->T1, s->N1, 8};
    /* TND statistics hold packed per-batch blocks: contiguous, no padding */
    c->smax = tnd ? tu_tensor_new(ATTNOPS_DTYPE_F32, 3, st_tnd, 0) : tu_tensor_new(ATTNOPS_DTYPE_F32, 4, st, s->pad);
    c->ssum = tnd ? tu_tensor_new(ATTNOPS_DTYPE_F32, 3, st_tnd, 0) : tu_tensor_new(ATTNOPS_DTYPE_F32, 4, st, s->pad);

    tu_rng r = tu_rng_make(seed);
    if (is_fp8(s->dtype)) {
        fill_fp8(s, &c->q, &c->dsq, &r, rq, s->N1, s->D);
        fill_fp8(s, &c->k, &c->dsk, &r, rkv, s->N2, s->D);
        fill_fp8(s, &c->v, &c->dsv, &r, rkv, s->N2, s->Dv);
        fill_fp8(s, &c->dy, &c->dsdy, &r, rq, s->N1, s->Dv);
        /* d_scale_o: the golden passes d_scale_q (spec 6) */
        c->dso = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, c->dsq.view.shape, 0);
        memcpy(c->dso.view.data, c->dsq.view.data, c->dsq.data_bytes);
    } else {
        tu_tensor_randn(&c->q, &r, 1.0);
        tu_tensor_randn(&c->k, &r, 1.0);
        tu_tensor_randn(&c->v, &r, 1.0);
        tu_tensor_randn(&c->dy, &r, 1.0);
    }
    if (s->Dr > 0) { /* drawn after the others, so a case's other inputs do not depend on Dr */
        tu_tensor_randn(&c->qr, &r, 1.0);
        tu_tensor_randn(&c->kr, &r, 1.0);
    }
    tu_tensor *outs[] = {&c->out, &c->smax, &c->ssum, &c->dq, &c->dk, &c->dv, &c->dqr, &c->dkr};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i]->view.data) tu_tensor_poison(outs[i], 0);

    attnops_fa_fwd_args_init(&c->fwd);
    attnops_fa_params *p = &c->fwd.p;
    p->query = &c->q.view, p->key = &c->k.view, p->value = &c->v.view;
    p->head_num = s->N1;
    p->input_layout = s->layout;
    p->scale_value = s->scale > 0 ? s->scale : 1.0 / sqrt((double)(s->D + s->Dr));
    if (s->Dr > 0) p->query_rope = &c->qr.view, p->key_rope = &c->kr.view;
    if (is_fp8(s->dtype)) {
        p->d_scale_q = &c->dsq.view, p->d_scale_k = &c->dsk.view, p->d_scale_v = &c->dsv.view;
        p->d_scale_dy = &c->dsdy.view, p->d_scale_o = &c->dso.view;
        p->out_dtype = s->out_dtype == ATTNOPS_DTYPE_BF16 ? 1 : 0;
    }
    p->sparse_mode = s->sparse_mode;
    p->inner_precise = s->inner_precise;
    if (s->keep_prob > 0.0) p->keep_prob = s->keep_prob, p->seed = s->seed, p->offset = s->offset;
    p->softcap = s->softcap;
    if (s->sink) { /* drawn after the others, so a case's other inputs do not depend on it */
        const int64_t n1 = s->N1;
        c->sink = tu_tensor_new(ATTNOPS_DTYPE_F32, 1, &n1, 0);
        c->dsink = tu_tensor_new(ATTNOPS_DTYPE_F32, 1, &n1, 0);
        p->sink = &c->sink.view;
    }
    if (s->mask != FA_CASE_MASK_NONE) {
        p->pre_tokens = s->pre, p->next_tokens = s->next;
        int64_t prefix[64] = {0};
        if (s->sparse_mode == 5 || s->sparse_mode == 6) {
            for (int64_t b = 0; b < s->B && b < 64; b++) {
                const int64_t s1 = tnd ? s->seq_q[b] : s->S1, s2 = tnd ? s->seq_kv[b] : s->S2;
                const int64_t lo = s1 > s2 ? 0 : s2 - s1;
                prefix[b] = lo + (int64_t)(tu_next(&r) % (uint64_t)(s2 - lo + 1));
                if (b < s->nprefix) prefix[b] = s->prefix[b]; /* given: drawn all the same, so the data match */
            }
            make_list(&c->prefix, s->B, prefix);
            p->prefix = &c->prefix.view;
        }
        make_mask(c, &r, prefix);
        p->atten_mask = &c->mask.view;
    }
    if (s->pse != FA_CASE_PSE_NONE) {
        make_pse(c, &r);
        p->pse = &c->pse.view;
        p->pse_type = s->pse_type;
        if (s->q_start || s->kv_start) {
            make_list(&c->q_start, 1, &s->q_start);
            make_list(&c->kv_start, 1, &s->kv_start);
            p->q_start_idx = &c->q_start.view, p->kv_start_idx = &c->kv_start.view;
        }
    }
    if (tnd) p->actual_seq_qlen = &c->cu_q.view, p->actual_seq_kvlen = &c->cu_kv.view;
    c->fwd.attention_out = &c->out.view;
    c->fwd.softmax_max = &c->smax.view;
    c->fwd.softmax_sum = &c->ssum.view;

    attnops_fa_bwd_args_init(&c->bwd);
    c->bwd.p = *p;
    c->bwd.dy = &c->dy.view;
    c->bwd.attention_in = &c->out.view;
    c->bwd.softmax_max = &c->smax.view;
    c->bwd.softmax_sum = &c->ssum.view;
    c->bwd.dq = &c->dq.view, c->bwd.dk = &c->dk.view, c->bwd.dv = &c->dv.view;
    if (s->Dr > 0) c->bwd.dq_rope = &c->dqr.view, c->bwd.dk_rope = &c->dkr.view;
    if (s->sink) {
        tu_tensor_randn(&c->sink, &r, 2.0); /* about as large as the scores: the sink takes a real share */
        tu_tensor_poison(&c->dsink, 0);
        c->bwd.dsink = &c->dsink.view;
    }
}

void fa_case_free(fa_case *c)
{
    tu_tensor *all[] = {&c->q,  &c->k,  &c->v,  &c->dy,   &c->out,    &c->smax,   &c->ssum, &c->dq,
                        &c->dk, &c->dv, &c->mask, &c->pse, &c->prefix, &c->q_start, &c->kv_start,
                        &c->cu_q, &c->cu_kv, &c->qr, &c->kr, &c->dqr, &c->dkr, &c->sink, &c->dsink,
                        &c->dsq, &c->dsk, &c->dsv, &c->dsdy, &c->dso};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_tensor_free(all[i]);
}

static attnops_status run_fwd(const void *a, void *ws, size_t n) { return attnops_flash_attention_score(a, ws, n); }
static attnops_status run_bwd(const void *a, void *ws, size_t n)
{
    return attnops_flash_attention_score_grad(a, ws, n);
}

attnops_status fa_case_forward(fa_case *c, attnops_impl impl, int threads, int deterministic)
{
    c->fwd.p.impl = impl, c->fwd.p.num_threads = threads, c->fwd.p.deterministic = deterministic;
    size_t bytes = 0;
    attnops_status st = attnops_flash_attention_score_workspace_size(&c->fwd, &bytes);
    return st != ATTNOPS_SUCCESS ? st : tu_run_with_workspace(run_fwd, &c->fwd, bytes, "forward");
}

attnops_status fa_case_backward(fa_case *c, attnops_impl impl, int threads, int deterministic)
{
    c->bwd.p.impl = impl, c->bwd.p.num_threads = threads, c->bwd.p.deterministic = deterministic;
    size_t bytes = 0;
    attnops_status st = attnops_flash_attention_score_grad_workspace_size(&c->bwd, &bytes);
    return st != ATTNOPS_SUCCESS ? st : tu_run_with_workspace(run_bwd, &c->bwd, bytes, "backward");
}

static double tensor_max_abs(const tu_tensor *t)
{
    int64_t n = tu_numel(&t->view);
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tu_tensor_to_f64(t, x);
    double m = tu_max_abs(x, n);
    free(x);
    return m;
}

/* scale < 0: the expected tensor's own max |value|. */
static fa_output_check check_one(const char *name, const char *label, const tu_tensor *actual,
                                 const tu_tensor *expected, attnops_dtype operand_dtype, int64_t reduce_len,
                                 double scale, const char *repro)
{
    int64_t n = tu_numel(&expected->view);
    double *a = malloc(sizeof(double) * (size_t)(n ? n : 1)), *e = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tu_tensor_to_f64(actual, a);
    tu_tensor_to_f64(expected, e);
    char full[384];
    snprintf(full, sizeof full, "%s %s", label, name);
    fa_output_check c = {name, {0}, tu_attention_tolerance(actual->view.dtype, operand_dtype, reduce_len,
                                                           scale < 0 ? tu_max_abs(e, n) : scale)};
    c.result = tu_compare(full, a, e, n, c.tol, expected->view.shape, expected->view.rank, repro);
    free(a);
    free(e);
    return c;
}

static int64_t max3(int64_t a, int64_t b, int64_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

/* The operands the fast kernel rounds: P and dS to bf16 for bf16 inputs.
 * FP8 inputs quantise P and dS to f8 in both implementations, from values
 * that differ by ~u_f32, so a quantisation decision flips only when a value
 * lies that close to a rounding midpoint (probability ~u_f32 / u_f8 per
 * element), costing one f8 step of one term of a sum; every other term is
 * exact in both and summed in fp32.  The bf16 operand allowance,
 * 8 u_bf16 scale = scale / 32, admits one such flip on a term up to half the
 * largest gradient, without admitting wrong block scales (errors of 2x). */
static attnops_dtype operand_dtype(const fa_case_shape *s)
{
    return s->dtype == ATTNOPS_DTYPE_BF16 || is_fp8(s->dtype) ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F32;
}

bool fa_case_check_forward(const fa_case *fast, const fa_case *ref, const char *label, const char *repro,
                           fa_output_check rows[3])
{
    const fa_case_shape *s = &ref->shape;
    const int64_t k = max3(s->S2, s->D + s->Dr, 1);
    rows[0] = check_one("attention_out", label, &fast->out, &ref->out, operand_dtype(s), k, -1.0, repro);
    /* The statistics use no rounded operand (q.k of bf16 inputs is exact in fp32). */
    rows[1] = check_one("softmax_max", label, &fast->smax, &ref->smax, ATTNOPS_DTYPE_F32, k, -1.0, repro);
    rows[2] = check_one("softmax_sum", label, &fast->ssum, &ref->ssum, ATTNOPS_DTYPE_F32, k, -1.0, repro);
    return rows[0].result.pass && rows[1].result.pass && rows[2].result.pass;
}

static bool dual_check(const char *label, const char *name, const tu_tensor *actual, const tu_tensor *expected)
{
    const int64_t n = tu_numel(&expected->view);
    double *a = malloc(sizeof(double) * (size_t)(n ? n : 1)), *e = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tu_tensor_to_f64(actual, a);
    tu_tensor_to_f64(expected, e);
    char full[384];
    snprintf(full, sizeof full, "%s %s (seed criterion)", label, name);
    const bool ok = tu_compare_dual(full, a, e, n).pass;
    free(a);
    free(e);
    return ok;
}

int fa_case_backward_outputs(const fa_case *c) { return c->shape.Dr > 0 ? 5 : 3; }

bool fa_case_check_backward(const fa_case *fast, const fa_case *ref, const char *label, const char *repro,
                            fa_output_check rows[FA_CASE_MAX_BWD_OUTPUTS])
{
    const fa_case_shape *s = &ref->shape;
    const int64_t k = max3(s->S1, s->S2, s->D + s->Dr);
    const struct { const char *name; const tu_tensor *a, *e; } outs[FA_CASE_MAX_BWD_OUTPUTS] = {
        {"dq", &fast->dq, &ref->dq}, {"dk", &fast->dk, &ref->dk}, {"dv", &fast->dv, &ref->dv},
        {"dq_rope", &fast->dqr, &ref->dqr}, {"dk_rope", &fast->dkr, &ref->dkr}};
    const int n = fa_case_backward_outputs(ref);
    /* dS = P (dP - Drow) cancels: a gradient's error follows the size of the
     * terms, not of its result (with S2 = 1, dq and dk are exactly 0).  The
     * problem's largest gradient is that size. */
    double scale = 0.0;
    for (int i = 0; i < n; i++) scale = fmax(scale, tensor_max_abs(outs[i].e));
    bool pass = true;
    for (int i = 0; i < n; i++) {
        rows[i] = check_one(outs[i].name, label, outs[i].a, outs[i].e, operand_dtype(s), k, scale, repro);
        pass &= rows[i].result.pass;
        /* FP8: the bf16-level allowance above cannot see a missing quantisation
         * step (it moves each element by ~1 %, below scale / 32); the seed's
         * per-element criterion (0.5 % relative, at most 0.5 % of elements off)
         * does, while tolerating the rare flips that operand_dtype describes. */
        if (is_fp8(s->dtype)) pass &= dual_check(label, outs[i].name, outs[i].a, outs[i].e);
    }
    return pass;
}

static void copy_tensor(tu_tensor *dst, const tu_tensor *src)
{
    int64_t n = tu_numel(&src->view);
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tu_tensor_to_f64(src, buf);
    tu_tensor_from_f64(dst, buf);
    free(buf);
}

void fa_case_copy_forward(fa_case *dst, const fa_case *src)
{
    copy_tensor(&dst->out, &src->out);
    copy_tensor(&dst->smax, &src->smax);
    copy_tensor(&dst->ssum, &src->ssum);
}
