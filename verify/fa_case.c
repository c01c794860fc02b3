#include "fa_case.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int fa_case_tensor_shape(const fa_case_shape *s, int64_t b, int64_t sq, int64_t n, int64_t d, int64_t *shape)
{
    switch (s->layout) {
    case ATTNOPS_LAYOUT_BNSD: shape[0] = b, shape[1] = n, shape[2] = sq, shape[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSND: shape[0] = b, shape[1] = sq, shape[2] = n, shape[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSH: shape[0] = b, shape[1] = sq, shape[2] = n * d; return 3;
    default: shape[0] = sq, shape[1] = b, shape[2] = n * d; return 3;
    }
}

static tu_tensor qlike(const fa_case_shape *s, int64_t sq, int64_t n, int64_t d)
{
    int64_t shape[4];
    int rank = fa_case_tensor_shape(s, s->B, sq, n, d, shape);
    return tu_tensor_new(s->dtype, rank, shape, s->pad);
}

void fa_case_init(fa_case *c, const fa_case_shape *shape, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->shape = *shape;
    c->seed = seed;
    const fa_case_shape *s = &c->shape;
    c->q = qlike(s, s->S1, s->N1, s->D);
    c->k = qlike(s, s->S2, s->N2, s->D);
    c->v = qlike(s, s->S2, s->N2, s->Dv);
    c->dy = qlike(s, s->S1, s->N1, s->Dv);
    c->out = qlike(s, s->S1, s->N1, s->Dv);
    c->dq = qlike(s, s->S1, s->N1, s->D);
    c->dk = qlike(s, s->S2, s->N2, s->D);
    c->dv = qlike(s, s->S2, s->N2, s->Dv);
    int64_t st[4] = {s->B, s->N1, s->S1, 8};
    c->smax = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, st, s->pad);
    c->ssum = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, st, s->pad);

    tu_rng r = tu_rng_make(seed);
    tu_tensor_randn(&c->q, &r, 1.0);
    tu_tensor_randn(&c->k, &r, 1.0);
    tu_tensor_randn(&c->v, &r, 1.0);
    tu_tensor_randn(&c->dy, &r, 1.0);
    tu_tensor *outs[] = {&c->out, &c->smax, &c->ssum, &c->dq, &c->dk, &c->dv};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) tu_tensor_poison(outs[i], 0);

    attnops_fa_fwd_args_init(&c->fwd);
    attnops_fa_params *p = &c->fwd.p;
    p->query = &c->q.view, p->key = &c->k.view, p->value = &c->v.view;
    p->head_num = s->N1;
    p->input_layout = s->layout;
    p->scale_value = s->scale > 0 ? s->scale : 1.0 / sqrt((double)s->D);
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
}

void fa_case_free(fa_case *c)
{
    tu_tensor *all[] = {&c->q, &c->k, &c->v, &c->dy, &c->out, &c->smax, &c->ssum, &c->dq, &c->dk, &c->dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_tensor_free(all[i]);
}

/* Workspace with canaries on both sides. */
static attnops_status run_with_workspace(attnops_status (*run)(const void *, void *, size_t), const void *args,
                                         size_t bytes, const char *what)
{
    unsigned char *block = malloc(bytes + 2 * TU_CANARY_BYTES);
    memset(block, TU_CANARY_BYTE, bytes + 2 * TU_CANARY_BYTES);
    attnops_status st = run(args, block + TU_CANARY_BYTES, bytes);
    for (size_t i = 0; i < TU_CANARY_BYTES; i++)
        TU_CHECK(block[i] == TU_CANARY_BYTE && block[TU_CANARY_BYTES + bytes + i] == TU_CANARY_BYTE,
                 "%s wrote outside its %zu-byte workspace", what, bytes);
    free(block);
    return st;
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
    return st != ATTNOPS_SUCCESS ? st : run_with_workspace(run_fwd, &c->fwd, bytes, "forward");
}

attnops_status fa_case_backward(fa_case *c, attnops_impl impl, int threads, int deterministic)
{
    c->bwd.p.impl = impl, c->bwd.p.num_threads = threads, c->bwd.p.deterministic = deterministic;
    size_t bytes = 0;
    attnops_status st = attnops_flash_attention_score_grad_workspace_size(&c->bwd, &bytes);
    return st != ATTNOPS_SUCCESS ? st : run_with_workspace(run_bwd, &c->bwd, bytes, "backward");
}

void fa_case_describe(const fa_case_shape *s, char *buf, size_t n)
{
    snprintf(buf, n, "B=%lld N1=%lld N2=%lld S1=%lld S2=%lld D=%lld Dv=%lld dtype=%s layout=%s pad=%lld",
             (long long)s->B, (long long)s->N1, (long long)s->N2, (long long)s->S1, (long long)s->S2,
             (long long)s->D, (long long)s->Dv, attnops_dtype_name(s->dtype), attnops_layout_name(s->layout),
             (long long)s->pad);
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

/* The operands the fast kernel rounds: P and dS to bf16 for bf16 inputs. */
static attnops_dtype operand_dtype(const fa_case_shape *s)
{
    return s->dtype == ATTNOPS_DTYPE_BF16 ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F32;
}

bool fa_case_check_forward(const fa_case *fast, const fa_case *ref, const char *label, const char *repro,
                           fa_output_check rows[3])
{
    const fa_case_shape *s = &ref->shape;
    const int64_t k = max3(s->S2, s->D, 1);
    rows[0] = check_one("attention_out", label, &fast->out, &ref->out, operand_dtype(s), k, -1.0, repro);
    /* The statistics use no rounded operand (q.k of bf16 inputs is exact in fp32). */
    rows[1] = check_one("softmax_max", label, &fast->smax, &ref->smax, ATTNOPS_DTYPE_F32, k, -1.0, repro);
    rows[2] = check_one("softmax_sum", label, &fast->ssum, &ref->ssum, ATTNOPS_DTYPE_F32, k, -1.0, repro);
    return rows[0].result.pass && rows[1].result.pass && rows[2].result.pass;
}

bool fa_case_check_backward(const fa_case *fast, const fa_case *ref, const char *label, const char *repro,
                            fa_output_check rows[3])
{
    const fa_case_shape *s = &ref->shape;
    const int64_t k = max3(s->S1, s->S2, s->D);
    /* dS = P (dP - Drow) cancels: a gradient's error follows the size of the
     * terms, not of its result (with S2 = 1, dq and dk are exactly 0).  The
     * problem's largest gradient is that size. */
    double scale = fmax(tensor_max_abs(&ref->dq), fmax(tensor_max_abs(&ref->dk), tensor_max_abs(&ref->dv)));
    rows[0] = check_one("dq", label, &fast->dq, &ref->dq, operand_dtype(s), k, scale, repro);
    rows[1] = check_one("dk", label, &fast->dk, &ref->dk, operand_dtype(s), k, scale, repro);
    rows[2] = check_one("dv", label, &fast->dv, &ref->dv, operand_dtype(s), k, scale, repro);
    return rows[0].result.pass && rows[1].result.pass && rows[2].result.pass;
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
