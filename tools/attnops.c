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

static int demo(int argc, char **argv)
{
    fa_case_shape s = {.B = 1, .N1 = 4, .N2 = 2, .S1 = 512, .S2 = 512, .D = 128, .Dv = 128,
                       .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BSND, .pse_type = 1};
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
    fa_output_check rows[6];
    bool ok = fa_case_check_forward(&fast, &ref, "demo", NULL, rows);

    /* Both backward chains consume the reference forward, as a harness would feed a device. */
    fa_case_copy_forward(&fast, &ref);
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

    ok &= fa_case_check_backward(&fast, &ref, "demo", NULL, rows + 3);

    printf("\n  %-14s %12s %12s %12s %12s   %s\n", "cpu vs ref", "max abs err", "max rel err", "atol", "rtol",
           "verdict");
    for (int i = 0; i < 6; i++)
        printf("  %-14s %12.3e %12.3e %12.3e %12.3e   %s\n", rows[i].name, rows[i].result.max_abs,
               rows[i].result.max_rel, rows[i].tol.atol, rows[i].tol.rtol, rows[i].result.pass ? "pass" : "FAIL");
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
