/* bench_tiny_call: the fixed cost of a FlashAttention call, on a problem so
 * small (B1 S1 = S2 = 16 N1 = N2 = 1 D16 f32 BSND, scale 0.25, no mask)
 * that the call is almost all of it: validation, planning, the parallel
 * region, the kernels' set-up.  Rounds of 1000 forward calls, then 1000
 * backward calls; prints each direction's median microseconds per call over
 * the rounds and a checksum of every output (the same bits before and after
 * a change that should keep them).
 *
 *   bench_tiny_call [--threads T] [--rounds R] [--run-only]
 *
 * Each call is the two-phase call (workspace query + run), or with
 * --run-only the run alone on a workspace known to be large enough, as the
 * torch binding makes it (python/csrc/binding.h).  Linked against the shared
 * library, so that two builds can be compared by LD_LIBRARY_PATH, alternating
 * (docs/PERFORMANCE.md "The fixed cost of a call"). */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnops.h"

enum { S = 16, D = 16, CALLS = 1000, MAX_ROUNDS = 1000 };

static float q[S * D], k[S * D], v[S * D], out[S * D], dy[S * D], dq[S * D], dk[S * D], dv[S * D];
static float smax[S * 8], ssum[S * 8];
static unsigned char workspace[1 << 20];

typedef struct tiny_call {
    attnops_fa_fwd_args fwd;
    attnops_fa_bwd_args bwd;
    bool run_only;
} tiny_call;

/* Self-contained (bench_common links libxsmm, which the shared library keeps to itself). */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fill(float *x, unsigned *seed)
{
    for (int i = 0; i < S * D; i++) x[i] = (float)rand_r(seed) / (float)RAND_MAX - 0.5f;
}

static attnops_status forward(const tiny_call *c)
{
    size_t bytes = sizeof workspace;
    if (!c->run_only) {
        const attnops_status st = attnops_flash_attention_score_workspace_size(&c->fwd, &bytes);
        if (st != ATTNOPS_SUCCESS) return st;
    }
    return attnops_flash_attention_score(&c->fwd, workspace, bytes);
}

static attnops_status backward(const tiny_call *c)
{
    size_t bytes = sizeof workspace;
    if (!c->run_only) {
        const attnops_status st = attnops_flash_attention_score_grad_workspace_size(&c->bwd, &bytes);
        if (st != ATTNOPS_SUCCESS) return st;
    }
    return attnops_flash_attention_score_grad(&c->bwd, workspace, bytes);
}

/* Microseconds per call of a round of CALLS calls. */
static double round_us(attnops_status (*call)(const tiny_call *), const tiny_call *c)
{
    const double t0 = now_s();
    for (int i = 0; i < CALLS; i++)
        if (call(c) != ATTNOPS_SUCCESS) {
            fprintf(stderr, "bench_tiny_call: %s\n", attnops_last_error());
            exit(1);
        }
    return (now_s() - t0) / CALLS * 1e6;
}

int main(int argc, char **argv)
{
    int threads = 1, rounds = 20;
    bool run_only = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--run-only")) run_only = true;
        else {
            fprintf(stderr, "usage: bench_tiny_call [--threads T] [--rounds R] [--run-only]\n");
            return 2;
        }
    }
    if (threads < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "bench_tiny_call: --threads must be >= 1 and --rounds 1 to %d\n", MAX_ROUNDS);
        return 2;
    }
    unsigned seed = 1;
    fill(q, &seed), fill(k, &seed), fill(v, &seed), fill(dy, &seed);
    const int64_t qkv_shape[4] = {1, S, 1, D}, stat_shape[4] = {1, 1, S, 8};
    const attnops_tensor tq = attnops_tensor_contiguous(q, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tk = attnops_tensor_contiguous(k, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tv = attnops_tensor_contiguous(v, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tout = attnops_tensor_contiguous(out, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tdy = attnops_tensor_contiguous(dy, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tdq = attnops_tensor_contiguous(dq, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tdk = attnops_tensor_contiguous(dk, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tdv = attnops_tensor_contiguous(dv, ATTNOPS_DTYPE_F32, 4, qkv_shape),
                         tmax = attnops_tensor_contiguous(smax, ATTNOPS_DTYPE_F32, 4, stat_shape),
                         tsum = attnops_tensor_contiguous(ssum, ATTNOPS_DTYPE_F32, 4, stat_shape);
    tiny_call c = {.run_only = run_only};
    attnops_fa_params_init(&c.fwd.p);
    c.fwd.p.query = &tq, c.fwd.p.key = &tk, c.fwd.p.value = &tv;
    c.fwd.p.scale_value = 0.25, c.fwd.p.head_num = 1, c.fwd.p.input_layout = ATTNOPS_LAYOUT_BSND;
    c.fwd.p.num_threads = threads;
    c.fwd.softmax_max = &tmax, c.fwd.softmax_sum = &tsum, c.fwd.attention_out = &tout;
    c.bwd.p = c.fwd.p;
    c.bwd.dy = &tdy, c.bwd.attention_in = &tout, c.bwd.softmax_max = &tmax, c.bwd.softmax_sum = &tsum;
    c.bwd.dq = &tdq, c.bwd.dk = &tdk, c.bwd.dv = &tdv;

    static double fwd_us[MAX_ROUNDS], bwd_us[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) fwd_us[r] = round_us(forward, &c), bwd_us[r] = round_us(backward, &c);
    double checksum = 0;
    for (int i = 0; i < S * D; i++) checksum += out[i] * (i + 1) + dq[i] * (i + 3) + dk[i] * (i + 5) + dv[i] * (i + 7);
    printf("bench_tiny_call: %s, %d thread(s), isa %s: forward %.3f us, backward %.3f us per call (median of %d "
           "rounds of %d); checksum %.17g\n", run_only ? "run only" : "query + run", threads,
           attnops_cpu_isa(), median(fwd_us, rounds), median(bwd_us, rounds), rounds, CALLS, checksum);
    return 0;
}
