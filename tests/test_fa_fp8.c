/* FP8 (spec 6) against an independent golden: tests/tools/fp8_golden.py
 * implements the golden's FP8 forward and backward in numpy float32 with
 * ml_dtypes casts, from the spec alone, and writes its inputs and results.
 * Here:
 *   - attnops_fp8_quantize_blocks on the golden's float32 source reproduces
 *     its f8 bytes and d_scales bit for bit;
 *   - the reference forward (f16 outputs) matches the golden's o, m, l;
 *   - the reference and the fast backward, fed the golden's m, l and its o
 *     rounded to f16 (what a device receives), match its dq, dk, dv
 * under the dtype-derived tolerance and the seed's criterion (which sees a
 * missing quantisation step, verify/fa_case.c).
 * Usage: test_fa_fp8 GOLDEN_DIR (holding one directory per case). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "suite.h"

typedef struct golden {
    int64_t B, N1, N2, S1, S2, D, Dv;
    attnops_dtype fp8;
    double scale;
    char dir[512];
} golden;

static void *read_file(const golden *g, const char *name, size_t bytes)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", g->dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "test_fa_fp8: cannot open %s\n", path);
        exit(2);
    }
    void *buf = malloc(bytes ? bytes : 1);
    const size_t got = fread(buf, 1, bytes, f);
    fclose(f);
    if (got != bytes) {
        fprintf(stderr, "test_fa_fp8: %s has %zu bytes, expected %zu\n", path, got, bytes);
        exit(2);
    }
    return buf;
}

/* A contiguous tensor of `dtype` filled with the file's raw bytes. */
static tu_tensor from_file(const golden *g, const char *name, attnops_dtype dtype, int rank, const int64_t *shape)
{
    tu_tensor t = tu_tensor_new(dtype, rank, shape, 0);
    void *buf = read_file(g, name, t.data_bytes);
    memcpy(t.view.data, buf, t.data_bytes);
    free(buf);
    return t;
}

/* A tensor of `dtype` holding the float32 file's values (rounded once). */
static tu_tensor from_f32_file(const golden *g, const char *name, attnops_dtype dtype, int rank, const int64_t *shape)
{
    tu_tensor t = tu_tensor_new(dtype, rank, shape, 0);
    const int64_t n = tu_numel(&t.view);
    float *f = read_file(g, name, (size_t)n * 4);
    double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
    tu_tensor_from_f64(&t, d);
    free(f);
    free(d);
    return t;
}

/* Statistics [B, N1, S1, 8]: each golden value replicated 8 times. */
static tu_tensor stats_from_file(const golden *g, const char *name)
{
    const int64_t shape[4] = {g->B, g->N1, g->S1, 8}, n = g->B * g->N1 * g->S1;
    tu_tensor t = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, shape, 0);
    float *f = read_file(g, name, (size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
        for (int r = 0; r < 8; r++) ((float *)t.view.data)[i * 8 + r] = f[i];
    free(f);
    return t;
}

/* actual vs the golden's float32 file, by the dtype-derived tolerance and,
 * for outputs and gradients, the seed's criterion too. */
static bool check(const char *label, const tu_tensor *actual, const golden *g, const char *name, double scale,
                  bool dual)
{
    const int64_t n = tu_numel(&actual->view);
    float *f = read_file(g, name, (size_t)n * 4);
    double *e = malloc(sizeof(double) * (size_t)(n ? n : 1)), *a = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) e[i] = f[i];
    tu_tensor_to_f64(actual, a);
    const int64_t K = g->S1 > g->S2 ? (g->S1 > g->D ? g->S1 : g->D) : (g->S2 > g->D ? g->S2 : g->D);
    const bool stat = actual->view.dtype == ATTNOPS_DTYPE_F32;
    const tu_tolerance tol = tu_attention_tolerance(actual->view.dtype, stat ? ATTNOPS_DTYPE_F32 : ATTNOPS_DTYPE_BF16,
                                                    K, scale > 0 ? scale : tu_max_abs(e, n));
    bool ok = tu_compare(label, a, e, n, tol, actual->view.shape, actual->view.rank, NULL).pass;
    if (dual) ok &= tu_compare_dual(label, a, e, n).pass;
    free(f);
    free(e);
    free(a);
    return ok;
}

static double file_max_abs(const golden *g, const char *name, int64_t n)
{
    float *f = read_file(g, name, (size_t)n * 4);
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)f[i]));
    free(f);
    return m;
}

static int run_case(const char *dir)
{
    golden g;
    snprintf(g.dir, sizeof g.dir, "%s", dir);
    char fp8[32];
    {
        char path[640];
        snprintf(path, sizeof path, "%s/meta.txt", dir);
        FILE *f = fopen(path, "r");
        if (!f || fscanf(f, "%lld %lld %lld %lld %lld %lld %lld %31s %lf", (long long *)&g.B, (long long *)&g.N1,
                         (long long *)&g.N2, (long long *)&g.S1, (long long *)&g.S2, (long long *)&g.D,
                         (long long *)&g.Dv, fp8, &g.scale) != 9) {
            fprintf(stderr, "test_fa_fp8: bad %s\n", path);
            exit(2);
        }
        fclose(f);
    }
    g.fp8 = !strcmp(fp8, "f8_e4m3fn") ? ATTNOPS_DTYPE_F8_E4M3FN : ATTNOPS_DTYPE_F8_E5M2;
    const int before = tu_failures;
    const attnops_dtype f32 = ATTNOPS_DTYPE_F32, f16 = ATTNOPS_DTYPE_F16;
    const int64_t q_shape[4] = {g.B, g.N1, g.S1, g.D}, k_shape[4] = {g.B, g.N2, g.S2, g.D};
    const int64_t v_shape[4] = {g.B, g.N2, g.S2, g.Dv}, o_shape[4] = {g.B, g.N1, g.S1, g.Dv};
    const int64_t dsq_shape[4] = {g.B, g.N1, (g.S1 + 127) / 128, 1}, dsk_shape[4] = {g.B, g.N2, (g.S2 + 127) / 128, 1};

    /* the public quantisation helper against the golden's bytes and scales */
    tu_tensor src = from_f32_file(&g, "src_q.f32", f32, 4, q_shape), mine = tu_tensor_new(g.fp8, 4, q_shape, 0);
    tu_tensor mine_ds = tu_tensor_new(f32, 4, dsq_shape, 0);
    TU_CHECK(attnops_fp8_quantize_blocks(&src.view, ATTNOPS_LAYOUT_BNSD, g.N1, &mine.view, &mine_ds.view) ==
                 ATTNOPS_SUCCESS, "%s: quantize: %s", dir, attnops_last_error());
    tu_tensor q = from_file(&g, "q.u8", g.fp8, 4, q_shape), dsq = from_file(&g, "dsq.f32", f32, 4, dsq_shape);
    TU_CHECK(!memcmp(mine.view.data, q.view.data, q.data_bytes), "%s: quantised bytes differ from the golden's", dir);
    TU_CHECK(!memcmp(mine_ds.view.data, dsq.view.data, dsq.data_bytes), "%s: d_scale differs from the golden's", dir);

    tu_tensor k = from_file(&g, "k.u8", g.fp8, 4, k_shape), v = from_file(&g, "v.u8", g.fp8, 4, v_shape);
    tu_tensor dy = from_file(&g, "dy.u8", g.fp8, 4, o_shape);
    tu_tensor dsk = from_file(&g, "dsk.f32", f32, 4, dsk_shape), dsv = from_file(&g, "dsv.f32", f32, 4, dsk_shape);
    tu_tensor dsdy = from_file(&g, "dsdy.f32", f32, 4, dsq_shape);
    const int64_t st_shape[4] = {g.B, g.N1, g.S1, 8};
    tu_tensor out = tu_tensor_new(f16, 4, o_shape, 0), smax = tu_tensor_new(f32, 4, st_shape, 0);
    tu_tensor ssum = tu_tensor_new(f32, 4, st_shape, 0);

    attnops_fa_fwd_args fa;
    attnops_fa_fwd_args_init(&fa);
    attnops_fa_params *p = &fa.p;
    p->query = &q.view, p->key = &k.view, p->value = &v.view;
    p->d_scale_q = &dsq.view, p->d_scale_k = &dsk.view, p->d_scale_v = &dsv.view;
    p->head_num = g.N1, p->input_layout = ATTNOPS_LAYOUT_BNSD, p->scale_value = g.scale, p->out_dtype = 0;
    p->impl = ATTNOPS_IMPL_REFERENCE, p->num_threads = 2;
    fa.attention_out = &out.view, fa.softmax_max = &smax.view, fa.softmax_sum = &ssum.view;
    size_t bytes = 0;
    TU_CHECK(attnops_flash_attention_score_workspace_size(&fa, &bytes) == ATTNOPS_SUCCESS, "%s fwd ws: %s", dir,
             attnops_last_error());
    void *ws = malloc(bytes ? bytes : 1);
    TU_CHECK(attnops_flash_attention_score(&fa, ws, bytes) == ATTNOPS_SUCCESS, "%s fwd: %s", dir, attnops_last_error());
    free(ws);
    char label[700];
    snprintf(label, sizeof label, "%s forward attention_out", dir);
    TU_CHECK(check(label, &out, &g, "o.f32", -1, true), "%s", label);
    tu_tensor m1 = tu_tensor_new(f32, 3, st_shape, 0), l1 = tu_tensor_new(f32, 3, st_shape, 0);
    for (int64_t i = 0; i < g.B * g.N1 * g.S1; i++)
        ((float *)m1.view.data)[i] = ((float *)smax.view.data)[i * 8], ((float *)l1.view.data)[i] = ((float *)ssum.view.data)[i * 8];
    snprintf(label, sizeof label, "%s forward softmax_max", dir);
    TU_CHECK(check(label, &m1, &g, "m.f32", -1, false), "%s", label);
    snprintf(label, sizeof label, "%s forward softmax_sum", dir);
    TU_CHECK(check(label, &l1, &g, "l.f32", -1, false), "%s", label);

    /* the backward, both implementations, from the golden's statistics and o */
    tu_tensor o_in = from_f32_file(&g, "o.f32", f16, 4, o_shape);
    tu_tensor gm = stats_from_file(&g, "m.f32"), gl = stats_from_file(&g, "l.f32");
    const double gscale = fmax(file_max_abs(&g, "dq.f32", g.B * g.N1 * g.S1 * g.D),
                               fmax(file_max_abs(&g, "dk.f32", g.B * g.N2 * g.S2 * g.D),
                                    file_max_abs(&g, "dv.f32", g.B * g.N2 * g.S2 * g.Dv)));
    for (int impl = ATTNOPS_IMPL_REFERENCE; impl <= ATTNOPS_IMPL_CPU; impl++) {
        tu_tensor dq = tu_tensor_new(f16, 4, q_shape, 0), dk = tu_tensor_new(f16, 4, k_shape, 0);
        tu_tensor dv = tu_tensor_new(f16, 4, v_shape, 0);
        attnops_fa_bwd_args ba;
        attnops_fa_bwd_args_init(&ba);
        ba.p = *p;
        ba.p.d_scale_dy = &dsdy.view, ba.p.d_scale_o = &dsq.view; /* the golden passes d_scale_q as d_scale_o */
        ba.p.impl = (attnops_impl)impl;
        ba.dy = &dy.view, ba.attention_in = &o_in.view, ba.softmax_max = &gm.view, ba.softmax_sum = &gl.view;
        ba.dq = &dq.view, ba.dk = &dk.view, ba.dv = &dv.view;
        const char *which = impl == ATTNOPS_IMPL_REFERENCE ? "reference" : "cpu";
        TU_CHECK(attnops_flash_attention_score_grad_workspace_size(&ba, &bytes) == ATTNOPS_SUCCESS, "%s bwd ws: %s",
                 dir, attnops_last_error());
        ws = malloc(bytes ? bytes : 1);
        TU_CHECK(attnops_flash_attention_score_grad(&ba, ws, bytes) == ATTNOPS_SUCCESS, "%s %s bwd: %s", dir, which,
                 attnops_last_error());
        free(ws);
        const struct { const char *name, *file; tu_tensor *t; } grads[] = {
            {"dq", "dq.f32", &dq}, {"dk", "dk.f32", &dk}, {"dv", "dv.f32", &dv}};
        for (int i = 0; i < 3; i++) {
            snprintf(label, sizeof label, "%s %s backward %s", dir, which, grads[i].name);
            TU_CHECK(check(label, grads[i].t, &g, grads[i].file, gscale, true), "%s", label);
        }
        tu_tensor_free(&dq), tu_tensor_free(&dk), tu_tensor_free(&dv);
    }
    tu_tensor *all[] = {&src, &mine, &mine_ds, &q, &dsq, &k, &v, &dy, &dsk, &dsv, &dsdy, &out, &smax, &ssum,
                        &m1, &l1, &o_in, &gm, &gl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_tensor_free(all[i]);
    if (tu_failures == before) printf("ok   %s (%s, B%lld N1 %lld N2 %lld S1 %lld S2 %lld D %lld Dv %lld)\n", dir, fp8,
                                      (long long)g.B, (long long)g.N1, (long long)g.N2, (long long)g.S1,
                                      (long long)g.S2, (long long)g.D, (long long)g.Dv);
    return tu_failures == before;
}

int main(int argc, char **argv)
{
    tu_require_isa();
    if (argc != 2) {
        fprintf(stderr, "usage: test_fa_fp8 GOLDEN_DIR\n");
        return 2;
    }
    int passed = 0;
    const char *cases[] = {"e4m3", "e5m2"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/%s", argv[1], cases[i]);
        passed += run_case(dir);
    }
    return tu_finish("test_fa_fp8", passed);
}
