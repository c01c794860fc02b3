/* bench_attnres — Block Attention Residuals throughput (one round;
 * bench/run.sh runs the rounds, alternating with bench/peer_attnres.py, and
 * takes the medians).
 *
 * Cases (docs/PERFORMANCE.md): B=1, T=4096, N=25 blocks plus the partial
 * block (L = 26), D=4096, bf16, RMSNorm on, scale 1, eps 1e-6, impl CPU;
 * every block its own allocation [B,T,D].
 *   fwd  attnops_attn_res, writing h and both f32 caches (rms, alpha), as a
 *        training step does;
 *   bwd  attnops_attn_res_grad from those caches: the L block gradients,
 *        grad_proj_weight and grad_rmsnorm_gamma.
 * Measure: the bytes a call must read and write, per second, against the
 * machine's copy bandwidth (bench_common's copy_gbps: a parallel memcpy of
 * 256 MiB, read + written bytes) measured in the same round.  With
 * e = 2 (bf16 bytes), BTD = B*T*D, BTL = B*T*L:
 *   fwd bytes = (L + 1) BTD e  +  2 BTL 4  +  2 D e
 *               (L rows in, h out; rms and alpha out; proj_weight, gamma in)
 *   bwd bytes = (2 L + 1) BTD e  +  2 BTL 4  +  4 D e
 *               (grad_h and L rows in, L gradients out; rms and alpha in;
 *                proj_weight, gamma in, their gradients out)
 * Each block row is counted once although the backward reads it twice (the
 * second time from cache).
 * Peak memory: inputs + outputs + workspace, exact (the library allocates
 * nothing), and, measured, the rise of the process's peak RSS over the
 * first (untimed) call of each case, whose outputs and workspace are fresh
 * untouched pages: VmHWM reset to VmRSS through /proc/self/clear_refs
 * before the call, VmHWM - VmRSS(before) after it.  That rise is outputs +
 * workspace + whatever else the call touches (thread stacks...).
 * Each case: one untimed call, then `calls` timed calls; median and min.
 * --quick: T = 512 (a smoke run).
 * Usage: bench_attnres [--threads N] [--json PATH] [--quick] [--calls N] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "attnops.h"
#include "bench_common.h"

#define PROG "bench_attnres"
enum { NBLK = 25, L = NBLK + 1, D = 4096 };
#define E 2.0 /* bytes per bf16 element */

/* n bf16 values uniform in [-scale, scale), in parallel chunks of 2^20, each
 * its own LCG seeded from (seed, chunk): deterministic for any thread count. */
static void fill_bf16_par(uint16_t *x, int64_t n, float scale, uint64_t seed)
{
    const int64_t chunk = (int64_t)1 << 20, chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
        uint64_t s = seed * 0x9E3779B97F4A7C15ull + (uint64_t)c * 0xBF58476D1CE4E5B9ull;
        fill_bf16(x + c * chunk, n - c * chunk < chunk ? n - c * chunk : chunk, scale, &s);
    }
}

/* ---- peak RSS over a call: /proc/self/status VmRSS and VmHWM (bytes) ---- */
static double status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double v = NAN;
    const size_t kl = strlen(key);
    if (!f) return NAN;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = 1024.0 * strtod(line + kl + 1, NULL); /* "kB" */
            break;
        }
    fclose(f);
    return v;
}

/* Resets VmHWM to the current VmRSS; returns VmRSS, or NAN when the kernel
 * does not allow it (then no RSS figure is reported). */
static double rss_mark(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return NAN;
    const int ok = fputs("5", f) >= 0;
    if (fclose(f) != 0 || !ok) return NAN;
    return status_bytes("VmRSS");
}

typedef struct ar_setup {
    int64_t T;
    uint16_t *blk[L], *gh, *w, *gamma, *h, *dblk[L], *dw, *dgamma;
    float *rms, *alpha;
    attnops_tensor t_blk[L], t_gh, t_w, t_gamma, t_h, t_rms, t_alpha, t_dblk[L], t_dw, t_dgamma;
    const attnops_tensor *p_blk[NBLK], *p_dblk[NBLK];
    attnops_attn_res_fwd_args fa;
    attnops_attn_res_bwd_args ba;
} ar_setup;

/* Inputs filled, outputs allocated but not touched. */
static void setup(ar_setup *s, int64_t T, int threads)
{
    memset(s, 0, sizeof *s);
    s->T = T;
    const int64_t btd = T * D, sh[3] = {1, T, D}, sv[1] = {D}, sr[4] = {1, T, L, 1}, sa[3] = {1, T, L};
    for (int l = 0; l < L; l++) {
        s->blk[l] = xmalloc((size_t)btd * 2), fill_bf16_par(s->blk[l], btd, 1.0f, 100 + (uint64_t)l);
        s->t_blk[l] = attnops_tensor_contiguous(s->blk[l], ATTNOPS_DTYPE_BF16, 3, sh);
        s->dblk[l] = xmalloc((size_t)btd * 2);
        s->t_dblk[l] = attnops_tensor_contiguous(s->dblk[l], ATTNOPS_DTYPE_BF16, 3, sh);
    }
    for (int l = 0; l < NBLK; l++) s->p_blk[l] = &s->t_blk[l], s->p_dblk[l] = &s->t_dblk[l];
    s->gh = xmalloc((size_t)btd * 2), fill_bf16_par(s->gh, btd, 1.0f, 7);
    s->w = xmalloc(D * 2), fill_bf16_par(s->w, D, 1.0f / sqrtf(4.0f * D), 8); /* the seed's randn / sqrt(4 D) scale */
    s->gamma = xmalloc(D * 2);
    {
        uint64_t g = 9;
        for (int d = 0; d < D; d++) s->gamma[d] = attnops_f32_to_bf16(1.0f + 0.1f * lcg_uniform(&g));
    }
    s->h = xmalloc((size_t)btd * 2);
    s->rms = xmalloc((size_t)(T * L) * 4), s->alpha = xmalloc((size_t)(T * L) * 4);
    s->dw = xmalloc(D * 2), s->dgamma = xmalloc(D * 2);
    s->t_gh = attnops_tensor_contiguous(s->gh, ATTNOPS_DTYPE_BF16, 3, sh);
    s->t_w = attnops_tensor_contiguous(s->w, ATTNOPS_DTYPE_BF16, 1, sv);
    s->t_gamma = attnops_tensor_contiguous(s->gamma, ATTNOPS_DTYPE_BF16, 1, sv);
    s->t_h = attnops_tensor_contiguous(s->h, ATTNOPS_DTYPE_BF16, 3, sh);
    s->t_rms = attnops_tensor_contiguous(s->rms, ATTNOPS_DTYPE_F32, 4, sr);
    s->t_alpha = attnops_tensor_contiguous(s->alpha, ATTNOPS_DTYPE_F32, 3, sa);
    s->t_dw = attnops_tensor_contiguous(s->dw, ATTNOPS_DTYPE_BF16, 1, sv);
    s->t_dgamma = attnops_tensor_contiguous(s->dgamma, ATTNOPS_DTYPE_BF16, 1, sv);

    attnops_attn_res_fwd_args *f = &s->fa;
    attnops_attn_res_fwd_args_init(f);
    f->blocks = s->p_blk, f->num_blocks = NBLK, f->partial_block = &s->t_blk[NBLK];
    f->proj_weight = &s->t_w, f->rmsnorm_gamma = &s->t_gamma;
    f->h = &s->t_h, f->rms = &s->t_rms, f->alpha = &s->t_alpha;
    f->impl = ATTNOPS_IMPL_CPU, f->num_threads = threads;

    attnops_attn_res_bwd_args *b = &s->ba;
    attnops_attn_res_bwd_args_init(b);
    b->grad_h = &s->t_gh, b->blocks = s->p_blk, b->num_blocks = NBLK, b->partial_block = &s->t_blk[NBLK];
    b->proj_weight = &s->t_w, b->rmsnorm_gamma = &s->t_gamma, b->alpha = &s->t_alpha, b->rms = &s->t_rms;
    b->grad_blocks = s->p_dblk, b->grad_partial_block = &s->t_dblk[NBLK];
    b->grad_proj_weight = &s->t_dw, b->grad_rmsnorm_gamma = &s->t_dgamma;
    b->impl = ATTNOPS_IMPL_CPU, b->num_threads = threads;
}

static void release(ar_setup *s)
{
    for (int l = 0; l < L; l++) free(s->blk[l]), free(s->dblk[l]);
    FREE_ALL(s->gh, s->w, s->gamma, s->h, s->rms, s->alpha, s->dw, s->dgamma);
}

typedef struct ar_result {
    call_times t;
    double bytes, in_bytes, out_bytes, rss_rise;
    size_t ws;
} ar_result;

typedef struct ar_call {
    ar_setup *s;
    int bwd;
    void *ws;
    size_t ws_bytes;
} ar_call;

static void call(void *c_)
{
    const ar_call *c = c_;
    ar_setup *s = c->s;
    check_ok(PROG, c->bwd ? attnops_attn_res_grad(&s->ba, c->ws, c->ws_bytes)
                          : attnops_attn_res(&s->fa, c->ws, c->ws_bytes));
}

/* The workspace is allocated here (fresh pages); the first call is untimed
 * and measured for RSS; then `calls` timed calls. */
static ar_result run_case(ar_setup *s, int bwd, int calls)
{
    ar_result r;
    memset(&r, 0, sizeof r);
    check_ok(PROG, bwd ? attnops_attn_res_grad_workspace_size(&s->ba, &r.ws)
                       : attnops_attn_res_workspace_size(&s->fa, &r.ws));
    ar_call c = {s, bwd, r.ws ? xmalloc(r.ws) : NULL, r.ws};
    const double btd = (double)s->T * D, btl = (double)s->T * L;
    if (bwd) {
        r.in_bytes = (L + 1) * btd * E + 2 * btl * 4 + 2 * D * E;
        r.out_bytes = L * btd * E + 2 * D * E;
    } else {
        r.in_bytes = L * btd * E + 2 * D * E;
        r.out_bytes = btd * E + 2 * btl * 4;
    }
    r.bytes = r.in_bytes + r.out_bytes;
    const double before = rss_mark();
    call(&c);
    r.rss_rise = status_bytes("VmHWM") - before; /* NAN when rss_mark could not reset */
    r.t = time_calls(call, &c, calls);
    free(c.ws);
    return r;
}

int main(int argc, char **argv)
{
    bench_opts o;
    if (parse_opts(&o, PROG, argc, argv)) return 2;
    print_machine(PROG);
    const int threads = o.threads;
    omp_set_num_threads(threads); /* the input fill */
    const int64_t T = o.quick ? 512 : 4096;
    json_out j;
    json_open(&j, o.json_path);
    json_num(&j, "threads", threads);
    json_str(&j, "attnops_version", attnops_version());
    json_machine(&j);
    json_num(&j, "attnres_T", (double)T);

    const double bw = copy_gbps(threads);
    printf("copy bandwidth %.1f GB/s (%d threads)\n", bw, threads);
    json_num(&j, "copy_gbps", bw);

    ar_setup s;
    setup(&s, T, threads);
    const double mib = 1024.0 * 1024.0;
    for (int bwd = 0; bwd < 2; bwd++) { /* the backward reads the forward's caches */
        const char *dir = bwd ? "bwd" : "fwd";
        const ar_result r = run_case(&s, bwd, o.calls);
        const double gbps = r.bytes / (r.t.med_ms * 1e-3) * 1e-9, pct = 100.0 * gbps / bw;
        const double peak = r.in_bytes + r.out_bytes + (double)r.ws;
        printf("%s B1 T%lld N%d(+partial) D%d bf16 rms: %.2f ms (min %.2f), %.1f MB moved, %.1f GB/s = %.1f %% of copy;"
               " in %.1f + out %.1f + workspace %.3f MiB = %.1f MiB; RSS rise over the first call %.1f MiB\n",
               dir, (long long)T, NBLK, D, r.t.med_ms, r.t.min_ms, r.bytes * 1e-6, gbps, pct, r.in_bytes / mib,
               r.out_bytes / mib, (double)r.ws / mib, peak / mib, r.rss_rise / mib);
        json_times(&j, bwd ? "attnres_bwd" : "attnres_fwd", r.t);
        json_numf(&j, r.bytes, "attnres_%s_bytes", dir, "");
        json_numf(&j, gbps, "attnres_%s_gbps", dir, "");
        json_numf(&j, pct, "attnres_%s_pct_copy_bw", dir, "");
        json_numf(&j, r.in_bytes, "attnres_%s_input_bytes", dir, "");
        json_numf(&j, r.out_bytes, "attnres_%s_output_bytes", dir, "");
        json_numf(&j, (double)r.ws, "attnres_%s_workspace_bytes", dir, "");
        json_numf(&j, peak, "attnres_%s_peak_bytes", dir, "");
        json_numf(&j, r.rss_rise, "attnres_%s_rss_rise_bytes", dir, "");
    }
    release(&s);
    json_close(&j);
    return 0;
}
