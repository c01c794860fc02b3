/* The attnops command line: the commands of tools/cmd.h and demo,
 * dropout-mask, bench and version here.  Their usage text is usage_to()
 * below, the one copy: `attnops help` prints it and docs/HARNESS.md quotes
 * it (ctest cli_usage_doc checks the quote). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "fa_case.h"
#include "npy.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int usage_to(FILE *out, int status)
{
    fprintf(out,
            "usage: attnops list [--support]\n"
            "           the built-in case suites; --support: operator x implementation x ISA x dtype\n"
            "       attnops run SUITE|FILE... [--filter REGEX] [--impl cpu|reference] [--threads N]\n"
            "                   [--mode only_grad|auto_grad] [--log FILE] [--rows] [--report FILE.html]\n"
            "                   [--save DIR]\n"
            "           the harness: each case through the golden and the kernel chain (and the\n"
            "           benchmark chain for the triple rule), one verdict line per output\n"
            "       attnops golden SUITE|FILE... --out DIR [--filter REGEX] [--threads N]\n"
            "           inputs and golden outputs as .npy + manifest.json, for a device elsewhere\n"
            "       attnops compare --golden DIR --actual DIR [--bench DIR] [--rule RULE]\n"
            "           a device's outputs judged against an attnops golden export\n"
            "       attnops demo [--B n] [--N1 n] [--N2 n] [--S1 n] [--S2 n] [--D n] [--Dv n]\n"
            "                    [--dtype f32|f16|bf16] [--layout BNSD|BSND|BSH|SBH] [--threads n] [--seed n]\n"
            "           one FlashAttention forward + backward through both implementations:\n"
            "           an error table and timings\n"
            "       attnops dropout-mask --keep P [--seed S] [--offset O] --heads N\n"
            "                    (--shape B,S1,S2 | --seqs L0:L1:.. [--kvseqs L0:L1:..]) [--bits] --out FILE.npy\n"
            "           the keep mask the operators apply (u8, 1 = kept; --bits: packed, LSB first);\n"
            "           TND lengths per batch, not cumulative\n"
            "       attnops bench [bench_fa options]\n"
            "           the benchmark program of make bench (bench/README.md)\n"
            "       attnops version | --version | help\n"
            "exit status: 0 all passed, 1 a verdict or a check failed, 2 bad arguments or files\n");
    return status;
}

static int usage(void) { return usage_to(stderr, 2); }

/* attnops bench: the bench_fa program built next to this one (build/bench). */
static int bench(char **argv)
{
    char self[4096], path[4200];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return fprintf(stderr, "attnops bench: cannot locate this program\n"), 2;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(path, sizeof path, "%s/../bench/bench_fa", self);
    argv[0] = path;
    execv(path, argv);
    fprintf(stderr, "attnops bench: cannot run %s (build it: make bench, or cmake --build build)\n", path);
    return 2;
}

/* A u8 .npy file; 0, or 1 with a message. */
static int write_npy_u8(const char *path, const uint8_t *data, const int64_t *shape, int rank)
{
    char err[600];
    if (npy_write(path, ATTNOPS_DTYPE_U8, rank, shape, data, err, sizeof err) == 0) return 0;
    fprintf(stderr, "attnops: %s\n", err);
    return 1;
}

/* "7:0:33" -> lengths; returns the count or -1. */
static int parse_lengths(const char *v, int64_t *out, int max)
{
    int n = 0;
    for (const char *c = v; *c && n < max;) {
        char *end;
        out[n++] = strtoll(c, &end, 10);
        if (end == c || out[n - 1] < 0) return -1;
        c = *end == ':' ? end + 1 : end;
        if (*end && *end != ':') return -1;
    }
    return n;
}

static int dropout_mask(int argc, char **argv)
{
    attnops_dropout_mask_args a = {.seed = 2, .offset = 0, .keep_prob = 0.0};
    const char *out = NULL;
    bool bits = false, tnd = false;
    int64_t q[256], kv[256];
    int nq = 0, nkv = 0;
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--bits")) { bits = true; continue; }
        if (!v) return usage();
        i++;
        if (!strcmp(k, "--keep")) a.keep_prob = atof(v);
        else if (!strcmp(k, "--seed")) a.seed = atoll(v);
        else if (!strcmp(k, "--offset")) a.offset = atoll(v);
        else if (!strcmp(k, "--heads")) a.head_num = atoll(v);
        else if (!strcmp(k, "--out")) out = v;
        else if (!strcmp(k, "--shape")) {
            long long b, s1, s2;
            if (sscanf(v, "%lld,%lld,%lld", &b, &s1, &s2) != 3) return usage();
            a.batch = b, a.seq_q = s1, a.seq_kv = s2;
        } else if (!strcmp(k, "--seqs")) {
            if ((nq = parse_lengths(v, q, 256)) < 1) return usage();
            tnd = true;
        } else if (!strcmp(k, "--kvseqs")) {
            if ((nkv = parse_lengths(v, kv, 256)) < 1) return usage();
        } else return usage();
    }
    if (!out) return usage();
    if (tnd && nkv == 0) memcpy(kv, q, sizeof(int64_t) * (size_t)nq), nkv = nq;
    if (tnd && nkv != nq) {
        fprintf(stderr, "attnops: --seqs and --kvseqs need the same number of batches\n");
        return 2;
    }
    int64_t count = a.batch * a.head_num * a.seq_q * a.seq_kv, n = nq;
    tu_tensor cq = {0}, ckv = {0};
    if (tnd) { /* cumulative lists, as the operators take them */
        cq = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, &n, 0), ckv = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, &n, 0);
        int64_t sq = 0, skv = 0;
        count = 0;
        for (int b = 0; b < nq; b++) {
            sq += q[b], skv += kv[b], count += a.head_num * q[b] * kv[b];
            ((int64_t *)cq.view.data)[b] = sq, ((int64_t *)ckv.view.data)[b] = skv;
        }
        a.actual_seq_qlen = &cq.view, a.actual_seq_kvlen = &ckv.view;
    }
    if (count < 0) count = 0;
    const int64_t nbytes = bits ? (count + 7) / 8 : count;
    tu_tensor mask = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &nbytes, 0);
    if (bits) a.bit_mask = &mask.view;
    else a.byte_mask = &mask.view;
    attnops_status st = attnops_dropout_mask(&a);
    int rc = 1;
    if (st != ATTNOPS_SUCCESS) {
        fprintf(stderr, "attnops: %s (%s %d)\n", attnops_last_error(), attnops_status_string(st), (int)st);
    } else {
        const int64_t shape4[4] = {a.batch, a.head_num, a.seq_q, a.seq_kv};
        rc = (bits || tnd) ? write_npy_u8(out, mask.view.data, &nbytes, 1) : write_npy_u8(out, mask.view.data, shape4, 4);
        if (!rc) printf("attnops: wrote %s (%lld %s)\n", out, (long long)nbytes, bits ? "bytes of packed bits" : "elements");
    }
    tu_tensor_free(&mask);
    tu_tensor_free(&cq);
    tu_tensor_free(&ckv);
    return rc;
}

static int demo(int argc, char **argv)
{
    fa_case_shape s = {.B = 1, .N1 = 4, .N2 = 2, .S1 = 512, .S2 = 512, .D = 128, .Dv = 128,
                       .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BSND, .pse_type = 1};
    int threads = 0;
    uint64_t seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return fprintf(stderr, "attnops demo: option '%s' needs a value\n", a), 2;
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
        else if (!strcmp(a, "--layout")) {
            s.layout = attnops_layout_from_string(v);
            if (s.layout == ATTNOPS_LAYOUT_UNSET || s.layout == ATTNOPS_LAYOUT_TND)
                return fprintf(stderr, "attnops demo: --layout is '%s'; it must be BNSD, BSND, BSH or SBH\n", v), 2;
        } else if (!strcmp(a, "--dtype")) {
            s.dtype = attnops_dtype_from_string(v);
            if (s.dtype != ATTNOPS_DTYPE_F32 && s.dtype != ATTNOPS_DTYPE_F16 && s.dtype != ATTNOPS_DTYPE_BF16)
                return fprintf(stderr, "attnops demo: --dtype is '%s'; it must be f32, f16 or bf16\n", v), 2;
        } else {
            return fprintf(stderr, "attnops demo: unknown option '%s' (attnops help)\n", a), 2;
        }
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
        fprintf(stderr, "attnops: %s (%s %d)\n", attnops_last_error(), attnops_status_string(st), (int)st);
        return 1;
    }
    fa_output_check rows[3 + FA_CASE_MAX_BWD_OUTPUTS];
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
        fprintf(stderr, "attnops: %s (%s %d)\n", attnops_last_error(), attnops_status_string(st), (int)st);
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
    for (int i = 0; i < 3 + fa_case_backward_outputs(&ref); i++)
        printf("  %-14s %12.3e %12.3e %12.3e %12.3e   %s\n", rows[i].name, rows[i].result.max_abs,
               rows[i].result.max_rel, rows[i].tol.atol, rows[i].tol.rtol, rows[i].result.pass ? "pass" : "FAIL");
    printf("\n%s\n", ok ? "demo: every output of the fast kernel is within tolerance of the reference"
                        : "demo: some outputs are out of tolerance");
    fa_case_free(&ref);
    fa_case_free(&fast);
    return ok ? 0 : 1;
}

int attnops_main(int argc, char **argv)
{
    if (argc < 2) return usage();
    if (!strcmp(argv[1], "demo")) return demo(argc - 2, argv + 2);
    if (!strcmp(argv[1], "list")) return cmd_list(argc - 2, argv + 2);
    if (!strcmp(argv[1], "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(argv[1], "golden")) return cmd_golden(argc - 2, argv + 2);
    if (!strcmp(argv[1], "compare")) return cmd_compare(argc - 2, argv + 2);
    if (!strcmp(argv[1], "dropout-mask")) return dropout_mask(argc - 2, argv + 2);
    if (!strcmp(argv[1], "bench")) return bench(argv + 1);
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return usage_to(stdout, 0);
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("attnops %s\nisa: %s\ncpu: %s\ngemm f32: %s\ngemm bf16: %s\n", attnops_version(), attnops_cpu_isa(),
               attnops_cpu_model(), attnops_gemm_backend(ATTNOPS_DTYPE_F32), attnops_gemm_backend(ATTNOPS_DTYPE_BF16));
        return 0;
    }
    return usage();
}
