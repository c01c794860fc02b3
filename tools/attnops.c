/* The attnops command line.
 *
 *   attnops demo [--B n] [--N1 n] [--N2 n] [--S1 n] [--S2 n] [--D n] [--Dv n]
 *                [--dtype f32|f16|bf16] [--layout BNSD|BSND|BSH|SBH]
 *                [--threads n] [--seed n]
 *       FlashAttention forward + backward on one problem through both
 *       implementations (the double reference and the fast CPU kernel):
 *       an error table judged by the shared comparator, and timings.
 *       Exit status 0 when every output is within tolerance, 1 otherwise.
 *   attnops version
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fa_case.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int usage(void)
{
    fprintf(stderr, "usage: attnops demo [--B n] [--N1 n] [--N2 n] [--S1 n] [--S2 n] [--D n] [--Dv n]\n"
                    "                    [--dtype f32|f16|bf16] [--layout BNSD|BSND|BSH|SBH] [--threads n] [--seed n]\n"
                    "       attnops version\n");
    return 2;
}

static void copy_tensor(tu_tensor *dst, const tu_tensor *src)
{
    int64_t n = tu_numel(&src->view);
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tu_tensor_to_f64(src, buf);
    tu_tensor_from_f64(dst, buf);
    free(buf);
}

typedef struct row {
    const char *name;
    tu_compare_result r;
    tu_tolerance tol;
} row;

/* Compares one output of the fast kernel with the reference. */
static row compare_output(const char *name, const tu_tensor *fast, const tu_tensor *ref, attnops_dtype gemm,
                          int64_t k, double scale)
{
    int64_t n = tu_numel(&ref->view);
    double *a = malloc(sizeof(double) * (size_t)(n ? n : 1)), *e = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tu_tensor_to_f64(fast, a);
    tu_tensor_to_f64(ref, e);
    tu_tolerance tol = tu_attention_tolerance(fast->view.dtype, gemm, k, scale < 0 ? tu_max_abs(e, n) : scale);
    row out = {name, tu_compare(name, a, e, n, tol, ref->view.shape, ref->view.rank, NULL), tol};
    free(a);
    free(e);
    return out;
}

static int demo(int argc, char **argv)
{
    fa_case_shape s = {1, 4, 2, 512, 512, 128, 128, ATTNOPS_DTYPE_BF16, ATTNOPS_LAYOUT_BSND, 0, 0.0};
    int threads = 0;
    uint64_t seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage();
        i++;
        if (!strcmp(a, "--B")) s.B = atoll(v);
        else if (!strcmp(a, "--N1")) s.N1 = atoll(v);
        else if (!strcmp(a, "--N2")) s.N2 = atoll(v);
        else if (!strcmp(a, "--S1")) s.S1 = atoll(v);
        else if (!strcmp(a, "--S2")) s.S2 = atoll(v);
        else if (!strcmp(a, "--D")) s.D = atoll(v);
        else if (!strcmp(a, "--Dv")) s.Dv = atoll(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--layout")) s.layout = attnops_layout_from_string(v);
        else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "f32")) s.dtype = ATTNOPS_DTYPE_F32;
            else if (!strcmp(v, "f16")) s.dtype = ATTNOPS_DTYPE_F16;
            else if (!strcmp(v, "bf16")) s.dtype = ATTNOPS_DTYPE_BF16;
            else return usage();
        } else return usage();
    }
    char desc[256];
    fa_case_describe(&s, desc, sizeof desc);
    printf("attnops %s demo: FlashAttention forward + backward, %s, seed %llu, isa %s\n", attnops_version(), desc,
           (unsigned long long)seed, attnops_cpu_isa());

    fa_case ref, fast;
    fa_case_init(&ref, &s, seed);
    fa_case_init(&fast, &s, seed);
    double t0 = now_ms();
    attnops_status st = fa_case_forward(&ref, ATTNOPS_IMPL_REFERENCE, threads, 0);
    double t_ref_fwd = now_ms() - t0;
    if (st == ATTNOPS_SUCCESS) {
        t0 = now_ms();
        st = fa_case_forward(&fast, ATTNOPS_IMPL_CPU, threads, 0);
    }
    double t_cpu_fwd = now_ms() - t0;
    if (st != ATTNOPS_SUCCESS) {
        fprintf(stderr, "attnops: %s (%s)\n", attnops_last_error(), attnops_status_string(st));
        return 1;
    }
    const attnops_dtype gemm = s.dtype == ATTNOPS_DTYPE_BF16 ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F32;
    const int64_t kf = s.S2 > s.D ? s.S2 : s.D, kb = s.S1 > kf ? s.S1 : kf;
    row rows[6];
    rows[0] = compare_output("attention_out", &fast.out, &ref.out, gemm, kf, -1.0);
    /* The statistics use no operand the kernel rounds (q.k of bf16 inputs is exact in fp32). */
    rows[1] = compare_output("softmax_max", &fast.smax, &ref.smax, ATTNOPS_DTYPE_F32, kf, -1.0);
    rows[2] = compare_output("softmax_sum", &fast.ssum, &ref.ssum, ATTNOPS_DTYPE_F32, kf, -1.0);

    /* Both backward chains consume the reference forward, as a harness would feed a device. */
    copy_tensor(&fast.out, &ref.out);
    copy_tensor(&fast.smax, &ref.smax);
    copy_tensor(&fast.ssum, &ref.ssum);
    t0 = now_ms();
    st = fa_case_backward(&ref, ATTNOPS_IMPL_REFERENCE, threads, 0);
    double t_ref_bwd = now_ms() - t0;
    t0 = now_ms();
    if (st == ATTNOPS_SUCCESS) st = fa_case_backward(&fast, ATTNOPS_IMPL_CPU, threads, 0);
    double t_cpu_bwd = now_ms() - t0;
    if (st != ATTNOPS_SUCCESS) {
        fprintf(stderr, "attnops: %s (%s)\n", attnops_last_error(), attnops_status_string(st));
        return 1;
    }

    const double flops = 2.0 * (double)(s.B * s.N1 * s.S1 * s.S2 * (s.D + s.Dv));
    printf("\n  %-10s %14s %12s %10s %14s\n", "pass", "reference ms", "cpu ms", "speedup", "cpu GFLOP/s");
    printf("  %-10s %14.1f %12.1f %9.1fx %14.1f\n", "forward", t_ref_fwd, t_cpu_fwd, t_ref_fwd / t_cpu_fwd,
           flops / t_cpu_fwd * 1e-6);
    printf("  %-10s %14.1f %12.1f %9.1fx %14.1f\n", "backward", t_ref_bwd, t_cpu_bwd, t_ref_bwd / t_cpu_bwd,
           2.5 * flops / t_cpu_bwd * 1e-6);

    double gscale = 0.0;
    const tu_tensor *grads[] = {&ref.dq, &ref.dk, &ref.dv};
    for (int i = 0; i < 3; i++) {
        int64_t n = tu_numel(&grads[i]->view);
        double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
        tu_tensor_to_f64(grads[i], x);
        gscale = fmax(gscale, tu_max_abs(x, n));
        free(x);
    }
    rows[3] = compare_output("dq", &fast.dq, &ref.dq, gemm, kb, gscale);
    rows[4] = compare_output("dk", &fast.dk, &ref.dk, gemm, kb, gscale);
    rows[5] = compare_output("dv", &fast.dv, &ref.dv, gemm, kb, gscale);

    printf("\n  %-14s %12s %12s %12s %12s   %s\n", "cpu vs ref", "max abs err", "max rel err", "atol", "rtol",
           "verdict");
    bool ok = true;
    for (int i = 0; i < 6; i++) {
        printf("  %-14s %12.3e %12.3e %12.3e %12.3e   %s\n", rows[i].name, rows[i].r.max_abs, rows[i].r.max_rel,
               rows[i].tol.atol, rows[i].tol.rtol, rows[i].r.pass ? "pass" : "FAIL");
        ok &= rows[i].r.pass;
    }
    printf("\n%s\n", ok ? "demo: every output of the fast kernel is within tolerance of the reference"
                        : "demo: some outputs are out of tolerance");
    fa_case_free(&ref);
    fa_case_free(&fast);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    if (!strcmp(argv[1], "demo")) return demo(argc - 2, argv + 2);
    if (!strcmp(argv[1], "version")) {
        printf("attnops %s\n", attnops_version());
        return 0;
    }
    return usage();
}
