/* bench_keypool — KeyPool throughput (one round; bench/run.sh runs the
 * rounds, alternating with bench/peer_keypool.py, and takes the medians).
 *
 * Cases (docs/PERFORMANCE.md):
 *   prefill  B=1, S=4096, H=4096, D=128, R=4, bf16, LayerNorm, start 0:
 *            GFLOP/s of the projections (4 T H D flops) against the bf16
 *            tile-GEMM peak measured in the same round;
 *   decode   B=32, one token per batch at position 4099 after a history of
 *            4096 (so each batch pools one group, three rows from the cache):
 *            calls per second and the bytes a call must touch (weights,
 *            tokens, the cache rows read and written, the output) per second
 *            against the machine's copy bandwidth (memcpy of 256 MiB, read +
 *            written bytes) measured in the same round.
 * Each case: one untimed call, then `calls` timed calls; median and min.
 * --quick: S = 512 and a shorter peak (a smoke run).
 * Usage: bench_keypool [--threads N] [--json PATH] [--quick] [--calls N] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnops.h"
#include "bench_common.h"

#define PROG "bench_keypool"
enum { H = 4096, D = 128, R = 4, BLOCK = 128 };

typedef struct kp_setup {
    int64_t B, S, history, L, block_num;
    uint16_t *hidden, *wk, *gate, *out;
    float *ape, *cache, *norm_w, *norm_b;
    int32_t *table, *start;
    attnops_tensor t_hidden, t_wk, t_gate, t_ape, t_cache, t_table, t_start, t_nw, t_nb, t_out;
    attnops_key_pool_args args;
    void *ws;
    size_t ws_bytes;
} kp_setup;

/* One stream for every input, drawn in setup's order. */
static uint64_t lcg = 0x2545F4914F6CDD1Dull;

/* B batches of S tokens at positions history .. history + S - 1. */
static void setup(kp_setup *k, int64_t B, int64_t S, int64_t history, int threads)
{
    memset(k, 0, sizeof *k);
    k->B = B, k->S = S, k->history = history;
    k->L = (history + S + BLOCK - 1) / BLOCK;
    k->block_num = 1 + B * k->L;
    k->hidden = xmalloc((size_t)(B * S * H) * 2), fill_bf16(k->hidden, B * S * H, 1.0f, &lcg);
    k->wk = xmalloc((size_t)(D * H) * 2), fill_bf16(k->wk, D * H, 0.03f, &lcg);
    k->gate = xmalloc((size_t)(D * H) * 2), fill_bf16(k->gate, D * H, 0.03f, &lcg);
    k->ape = xmalloc((size_t)(R * D) * 4);
    k->norm_w = xmalloc((size_t)D * 4), k->norm_b = xmalloc((size_t)D * 4);
    for (int i = 0; i < R * D; i++) k->ape[i] = 0.1f * lcg_uniform(&lcg);
    for (int i = 0; i < D; i++) k->norm_w[i] = 1.0f + 0.1f * lcg_uniform(&lcg), k->norm_b[i] = 0.1f * lcg_uniform(&lcg);
    k->cache = xmalloc((size_t)(k->block_num * BLOCK * 2 * D) * 4);
    for (int64_t i = 0; i < k->block_num * BLOCK * 2 * D; i++) k->cache[i] = 0.1f * lcg_uniform(&lcg);
    k->table = xmalloc((size_t)(B * k->L) * 4), k->start = xmalloc((size_t)B * 4);
    for (int64_t b = 0; b < B; b++) {
        k->start[b] = (int32_t)history;
        for (int64_t l = 0; l < k->L; l++) k->table[b * k->L + l] = (int32_t)(1 + b * k->L + l);
    }
    const int64_t sh[3] = {B, S, H}, sw[2] = {D, H}, sa[2] = {R, D}, sc[3] = {k->block_num, BLOCK, 2 * D};
    const int64_t st[2] = {B, k->L}, sb[1] = {B}, sd[1] = {D};
    k->t_hidden = attnops_tensor_contiguous(k->hidden, ATTNOPS_DTYPE_BF16, 3, sh);
    k->t_wk = attnops_tensor_contiguous(k->wk, ATTNOPS_DTYPE_BF16, 2, sw);
    k->t_gate = attnops_tensor_contiguous(k->gate, ATTNOPS_DTYPE_BF16, 2, sw);
    k->t_ape = attnops_tensor_contiguous(k->ape, ATTNOPS_DTYPE_F32, 2, sa);
    k->t_cache = attnops_tensor_contiguous(k->cache, ATTNOPS_DTYPE_F32, 3, sc);
    k->t_table = attnops_tensor_contiguous(k->table, ATTNOPS_DTYPE_I32, 2, st);
    k->t_start = attnops_tensor_contiguous(k->start, ATTNOPS_DTYPE_I32, 1, sb);
    k->t_nw = attnops_tensor_contiguous(k->norm_w, ATTNOPS_DTYPE_F32, 1, sd);
    k->t_nb = attnops_tensor_contiguous(k->norm_b, ATTNOPS_DTYPE_F32, 1, sd);
    attnops_key_pool_args *a = &k->args;
    attnops_key_pool_args_init(a);
    a->hidden_states = &k->t_hidden, a->wk = &k->t_wk, a->gate_weight = &k->t_gate, a->ape = &k->t_ape;
    a->state_cache = &k->t_cache, a->cache_block_table = &k->t_table, a->start_pos = &k->t_start;
    a->norm_weight = &k->t_nw, a->norm_bias = &k->t_nb;
    a->cmp_ratio = R;
    a->num_threads = threads;
    int32_t rank;
    int64_t so[3];
    check_ok(PROG, attnops_key_pool_output_shape(a, &rank, so));
    k->out = xmalloc((size_t)(so[0] * so[1] * so[2]) * 2);
    k->t_out = attnops_tensor_contiguous(k->out, ATTNOPS_DTYPE_BF16, rank, so);
    a->pooled_key = &k->t_out;
    check_ok(PROG, attnops_key_pool_workspace_size(a, &k->ws_bytes));
    k->ws = xmalloc(k->ws_bytes);
}

static void release(kp_setup *k)
{
    FREE_ALL(k->hidden, k->wk, k->gate, k->out, k->ape, k->cache, k->norm_w, k->norm_b, k->table, k->start, k->ws);
}

static void key_pool_call(void *k_)
{
    kp_setup *k = k_;
    check_ok(PROG, attnops_key_pool(&k->args, k->ws, k->ws_bytes));
}

/* One untimed call, then `calls` timed calls. */
static call_times run_case(kp_setup *k, int calls)
{
    key_pool_call(k);
    return time_calls(key_pool_call, k, calls);
}

int main(int argc, char **argv)
{
    bench_opts o;
    if (parse_opts(&o, PROG, argc, argv)) return 2;
    print_machine(PROG);
    const int threads = o.threads, quick = o.quick, calls = o.calls;
    json_out j;
    json_open(&j, o.json_path);
    json_machine(&j);
    json_num(&j, "threads", threads);

    /* the peak of the GEMM the bf16 projections run on: bf16, or fp32 where
     * libxsmm has no bf16 kernel and the library widens bf16 */
    (void)attnops_gemm_backend(ATTNOPS_DTYPE_F32); /* libxsmm set up by the library first (its ISA target) */
    gemm_bench g;
    double peak = NAN;
    int peak_bf16 = 1;
    if (gemm_setup(&g, 1, threads) != 0) peak_bf16 = 0;
    if ((peak_bf16 || gemm_setup(&g, 0, threads) == 0) && gemm_check(&g) == 0) {
        gemm_calibrate(&g, quick ? 0.05 : 0.2);
        peak = GEMM_FLOP * (double)g.iters * threads / gemm_run(&g, g.iters) * 1e-9;
        gemm_free(&g);
    }
    const char *peak_kind = peak_bf16 ? "bf16" : "f32";
    const double bw = copy_gbps(threads);
    printf("%s tile-GEMM peak %.1f GFLOP/s, copy bandwidth %.1f GB/s (%d threads)\n", peak_kind, peak, bw, threads);
    json_num(&j, peak_bf16 ? "gemm_peak_bf16_gflops" : "gemm_peak_f32_gflops", peak);
    json_num(&j, "copy_gbps", bw);

    kp_setup k;
    const int64_t S = quick ? 512 : 4096;
    setup(&k, 1, S, 0, threads);
    call_times t = run_case(&k, calls);
    const double gflop = 4.0 * (double)S * H * D * 1e-9, pct_peak = 100.0 * gflop / (t.med_ms * 1e-3) / peak;
    printf("prefill B1 S%lld H%d D%d R%d bf16: %.2f ms (min %.2f), %.1f GFLOP/s, %.1f %% of the %s peak\n",
           (long long)S, H, D, R, t.med_ms, t.min_ms, gflop / (t.med_ms * 1e-3), pct_peak, peak_kind);
    json_times(&j, "kp_prefill", t);
    json_num(&j, "kp_prefill_gflop", gflop);
    json_num(&j, "kp_prefill_pct_peak", pct_peak);
    release(&k);

    setup(&k, 32, 1, 4099, threads);
    t = run_case(&k, calls * 10);
    /* weights + tokens + per batch: 3 cache rows read, 1 output row (the group completes, nothing is cached) */
    const double bytes = 2.0 * D * H * 2 + 32.0 * H * 2 + 32.0 * (3 * 2 * D * 4 + D * 2);
    const double gbps = bytes / (t.med_ms * 1e-3) * 1e-9;
    printf("decode B32 (1 token, history 4096): %.3f ms (min %.3f), %.0f calls/s, %.1f GB/s = %.1f %% of copy\n",
           t.med_ms, t.min_ms, 1e3 / t.med_ms, gbps, 100.0 * gbps / bw);
    json_times(&j, "kp_decode", t);
    json_num(&j, "kp_decode_bytes", bytes);
    json_num(&j, "kp_decode_calls_per_s", 1e3 / t.med_ms);
    json_num(&j, "kp_decode_pct_copy_bw", 100.0 * gbps / bw);
    release(&k);
    json_close(&j);
    return 0;
}
