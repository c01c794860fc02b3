/* bench_ops — the operators' perf mode: harness cases timed phase by phase
 * through their operator drivers (verify/harness_driver.h), the way ggml's
 * test-backend-ops has a perf mode over its one case list.  One round;
 * bench/run.sh runs the rounds, alternating with the PyTorch peers
 * (bench/peer_keypool.py, bench/peer_attnres.py), and takes the medians.
 *
 * Usage: bench_ops [--threads N] [--json PATH] [--quick] [--calls N] [--op NAME] [--case NAME ...] [--list]
 *                  [CASES.json ...]
 *   CASES.json: harness case files (docs/HARNESS.md), each case benchmarked
 *   under its name; without files, the built-in cases below (--op: only that
 *   operator's; --case, repeatable: only those; --list prints them).
 *
 * Built-in cases (docs/PERFORMANCE.md):
 *   kp_prefill  KeyPool B=1, S=4096 (512 with --quick), H=4096, D=128, R=4, bf16, LayerNorm, start 0
 *   kp_decode   KeyPool B=32, one token per batch at position 4099 after a history of 4096
 *               (each batch pools one group, three rows from the cache); 10x the calls
 *   attnres     AttnRes B=1, T=4096 (512 with --quick), N=25 blocks + the partial one, D=4096, bf16,
 *               RMSNorm; phases fwd (h and the two f32 caches, as training writes them) and bwd
 *               (from the forward's caches)
 *   fia_decode_bf16, _f16, _f32, _paged_bf16, _int8
 *               FusedInferAttentionScore decode step B=4, N1=32, N2=8, D=128, BNSD, 4096 cached keys
 *               (contiguous; paged: blocks of 128, shuffled; int8: per-channel antiquant, bf16
 *               query); 4x the calls
 *   fia_long_bf16     the same step at B=1 over 32768 cached keys
 *   fia_spec4_bf16, fia_spec16_bf16
 *               speculative steps: S1=4 and 16 query rows, bottom-right causal (sparse_mode 3)
 *   fia_mla_bf16      MLA decode (DeepSeek's absorbed form): B=1, N1=128, N2=1, D=512 + rope 64
 *   fia_prompt_bf16   a prompt B=1, N1=N2=8, S1=S2=4096, D=128 (bench_fa's fwd_bf16_B1_N8_S4096_D128 shape)
 *   fia_chunk_paged_bf16  a chunked prefill of that model: S1=512 query rows after 3584 cached keys (S2=4096)
 *               in a paged cache (blocks of 128, shuffled), bottom-right causal (sparse_mode 3): the
 *               split-KV kernel's tile GEMMs, which the FlashAttention forward cannot take (paged)
 *   With --quick every cache is 8x shorter.
 *
 * Per phase (JSON keys <case>_<phase>_..., or <case>_... for a one-phase
 * operator): one untimed call (its rise of the process's peak RSS measured:
 * the driver made the inputs and outputs, the workspace is fresh pages, so
 * the rise is the workspace and whatever else the call touches), then
 * `calls` timed calls, median
 * and min; the bytes the call must read and write (the driver's count, each
 * element once) per second against the machine's copy bandwidth (a parallel
 * memcpy of 256 MiB, read + written bytes, bench_common's copy_gbps) and the
 * read-only bandwidth (a parallel sum, read_gbps) and,
 * for an operator whose GEMMs bound it, GFLOP/s against the tile-GEMM peak
 * of its operand dtype, both measured in the same round.  Peak memory:
 * inputs + outputs + workspace, exact (the library allocates nothing).
 * The machine (ISA, CPU, GEMM backends) heads the output and the JSON. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "bench_common.h"
#include "harness_driver.h"

#define PROG "bench_ops"

/* KeyPool's common fields: the seed's H, D and ratio, bf16, LayerNorm on. */
#define KP "\"op\": \"keypool\", \"layout\": \"BSH\", \"block_size\": 128, \"norm\": true, "
#define KP_DECODE_STARTS                                                                                      \
    "[4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, "      \
    "4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099, 4099]"
#define KP_DECODE_LENS                                                                                        \
    "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"
#define AR "\"op\": \"attnres\", \"B\": 1, \"N\": 25, \"D\": 4096, \"dtype\": \"bf16\", "
/* A decode step of a GQA model (Llama-3-8B's heads): B=4, N1=32, N2=8, D=128, 4096 cached keys. */
#define FIA_GQA "\"op\": \"fia\", \"N1\": 32, \"N2\": 8, \"D\": 128, \"input_layout\": \"BNSD\", "
#define FIA_DECODE FIA_GQA "\"B\": 4, \"S1\": 1, "
#define FIA_PAGED "\"block_size\": 128"
#define FIA_INT8 "\"kv_dtype\": \"int8\""
#define FIA_LONG FIA_GQA "\"B\": 1, \"S1\": 1, \"dtype\": \"bf16\", "
#define FIA_SPEC FIA_GQA "\"B\": 4, \"dtype\": \"bf16\", \"sparse_mode\": 3, "
#define FIA_PROMPT "\"op\": \"fia\", \"B\": 1, \"N1\": 8, \"N2\": 8, \"D\": 128, " \
                   "\"input_layout\": \"BNSD\", \"dtype\": \"bf16\", "
#define FIA_CHUNK FIA_PROMPT "\"S1\": 512, \"sparse_mode\": 3, " FIA_PAGED ", "
/* MLA decode, DeepSeek-V3's absorbed form: 128 heads on one latent kv head of 512 + rope 64. */
#define FIA_MLA "\"op\": \"fia\", \"B\": 1, \"N1\": 128, \"N2\": 1, \"S1\": 1, \"D\": 512, " \
                "\"rope_dim\": 64, \"input_layout\": \"BNSD\", \"dtype\": \"bf16\", "

static const struct builtin {
    const char *name, *json, *quick; /* quick: the --quick case, NULL: the same */
    int calls_factor;
} BUILTIN[] = {
    {"kp_prefill", "{" KP "\"lens\": [4096]}", "{" KP "\"lens\": [512]}", 1},
    {"kp_decode", "{" KP "\"lens\": " KP_DECODE_LENS ", \"starts\": " KP_DECODE_STARTS "}", NULL, 10},
    {"attnres", "{" AR "\"T\": 4096}", "{" AR "\"T\": 512}", 1},
    {"fia_decode_bf16", "{" FIA_DECODE "\"S2\": 4096, \"dtype\": \"bf16\"}",
     "{" FIA_DECODE "\"S2\": 512, \"dtype\": \"bf16\"}", 4},
    {"fia_decode_f16", "{" FIA_DECODE "\"S2\": 4096, \"dtype\": \"fp16\"}",
     "{" FIA_DECODE "\"S2\": 512, \"dtype\": \"fp16\"}", 4},
    {"fia_decode_f32", "{" FIA_DECODE "\"S2\": 4096, \"dtype\": \"fp32\"}",
     "{" FIA_DECODE "\"S2\": 512, \"dtype\": \"fp32\"}", 4},
    {"fia_decode_paged_bf16", "{" FIA_DECODE "\"S2\": 4096, \"dtype\": \"bf16\", " FIA_PAGED "}",
     "{" FIA_DECODE "\"S2\": 512, \"dtype\": \"bf16\", " FIA_PAGED "}", 4},
    {"fia_decode_int8", "{" FIA_DECODE "\"S2\": 4096, \"dtype\": \"bf16\", " FIA_INT8 "}",
     "{" FIA_DECODE "\"S2\": 512, \"dtype\": \"bf16\", " FIA_INT8 "}", 4},
    {"fia_long_bf16", "{" FIA_LONG "\"S2\": 32768}", "{" FIA_LONG "\"S2\": 4096}", 1},
    {"fia_spec4_bf16", "{" FIA_SPEC "\"S1\": 4, \"S2\": 4096}", "{" FIA_SPEC "\"S1\": 4, \"S2\": 512}", 1},
    {"fia_spec16_bf16", "{" FIA_SPEC "\"S1\": 16, \"S2\": 4096}", "{" FIA_SPEC "\"S1\": 16, \"S2\": 512}", 1},
    {"fia_mla_bf16", "{" FIA_MLA "\"S2\": 4096}", "{" FIA_MLA "\"S2\": 512}", 1},
    {"fia_prompt_bf16", "{" FIA_PROMPT "\"S1\": 4096, \"S2\": 4096}", "{" FIA_PROMPT "\"S1\": 512, \"S2\": 512}", 1},
    {"fia_chunk_paged_bf16", "{" FIA_CHUNK "\"S2\": 4096}", "{" FIA_CHUNK "\"S2\": 512}", 1},
};

typedef struct options {
    int threads, quick, calls, list;
    const char *json_path, *op;
    const char *files[32], *only[32]; /* only: the --case names */
    int nfiles, nonly;
} options;

/* Whether a built-in case is among the --case names (all of them without one). */
static bool chosen(const options *o, const char *name)
{
    for (int i = 0; i < o->nonly; i++)
        if (!strcmp(o->only[i], name)) return true;
    return o->nonly == 0;
}

static int parse_options(options *o, int argc, char **argv)
{
    *o = (options){.threads = omp_get_max_threads(), .calls = 9};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--threads") && v) o->threads = atoi(v), i++;
        else if (!strcmp(a, "--json") && v) o->json_path = v, i++;
        else if (!strcmp(a, "--calls") && v) o->calls = atoi(v), i++;
        else if (!strcmp(a, "--op") && v) o->op = v, i++;
        else if (!strcmp(a, "--case") && v && o->nonly < 32) o->only[o->nonly++] = v, i++;
        else if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--list")) o->list = 1;
        else if (a[0] != '-' && o->nfiles < 32) o->files[o->nfiles++] = a;
        else return fprintf(stderr, "usage: %s [--threads N] [--json PATH] [--quick] [--calls N] [--op NAME] "
                                    "[--case NAME ...] [--list] [CASES.json ...]\n", PROG), 2;
    }
    harness_op op;
    if (o->op && !harness_op_parse(o->op, &op)) {
        char names[256];
        harness_op_names(names, sizeof names);
        return fprintf(stderr, "%s: --op is '%s'; it must be %s\n", PROG, o->op, names), 2;
    }
    if (o->threads < 1 || o->calls < 1) return fprintf(stderr, "%s: --threads and --calls must be >= 1\n", PROG), 2;
    return 0;
}

/* ---- the peaks, measured once a case needs them ---- */
typedef struct machine {
    int threads, quick;
    double copy_gbps, read_gbps;
    int bf16_jit;   /* libxsmm has bf16 tile GEMMs here: -1 not known yet, 0 no, 1 yes */
    double peak[2]; /* GFLOP/s of the f32 and bf16 tile GEMMs; 0: not measured yet */
} machine;

/* The tile-GEMM peak for operands of `dtype`: bf16's, or f32's where
 * libxsmm has no bf16 kernel and the library widens bf16; into the JSON
 * when first measured. */
static double gemm_peak(machine *m, attnops_dtype dtype, json_out *j, const char **kind)
{
    (void)attnops_gemm_backend(ATTNOPS_DTYPE_F32); /* libxsmm set up by the library first (its ISA target) */
    gemm_bench g;
    if (dtype == ATTNOPS_DTYPE_BF16 && m->bf16_jit < 0) {
        m->bf16_jit = gemm_setup(&g, 1, m->threads) == 0;
        if (m->bf16_jit) gemm_free(&g);
    }
    const int bf16 = dtype == ATTNOPS_DTYPE_BF16 && m->bf16_jit;
    *kind = bf16 ? "bf16" : "f32";
    if (m->peak[bf16] == 0.0) {
        m->peak[bf16] = NAN;
        if (gemm_setup(&g, bf16, m->threads) == 0) {
            if (gemm_check(&g) == 0) {
                gemm_calibrate(&g, m->quick ? 0.05 : 0.2);
                m->peak[bf16] = GEMM_FLOP * (double)g.iters * m->threads / gemm_run(&g, g.iters) * 1e-9;
            }
            gemm_free(&g);
        }
        printf("%s tile-GEMM peak %.1f GFLOP/s (%d threads)\n", *kind, m->peak[bf16], m->threads);
        json_num(j, bf16 ? "gemm_peak_bf16_gflops" : "gemm_peak_f32_gflops", m->peak[bf16]);
    }
    return m->peak[bf16];
}

typedef struct perf_call_arg {
    const harness_driver *d;
    harness_perf *p;
    int phase;
    void *ws;
} perf_call_arg;

static void perf_call(void *a_)
{
    perf_call_arg *a = a_;
    check_ok(PROG, a->d->perf_call(a->p, a->phase, a->ws));
}

/* One phase of a made case: its line and its JSON keys under `key`. */
static void bench_phase(machine *m, const harness_driver *d, harness_perf *p, int phase, const char *key, int calls,
                        json_out *j)
{
    check_ok(PROG, d->perf_phase(p, phase));
    perf_call_arg a = {d, p, phase, p->workspace_bytes ? xmalloc(p->workspace_bytes) : NULL};
    const double before = tu_rss_mark();
    perf_call(&a);
    const double rss_rise = tu_status_bytes("VmHWM") - before; /* NAN when tu_rss_mark could not reset */
    const call_times t = time_calls(perf_call, &a, calls);
    free(a.ws);
    const double mib = 1024.0 * 1024.0, bytes = p->in_bytes + p->out_bytes, s = t.med_ms * 1e-3;
    const double gbps = bytes / s * 1e-9, pct_bw = 100.0 * gbps / m->copy_gbps;
    const double pct_read = 100.0 * gbps / m->read_gbps;
    const double peak_bytes = bytes + (double)p->workspace_bytes;
    printf("%s: %.3f ms (min %.3f), %.0f calls/s, %.1f MB moved, %.1f GB/s = %.1f %% of copy, %.1f %% of read; in "
           "%.1f + out %.1f + workspace %.3f MiB = %.1f MiB; RSS rise over the first call %.1f MiB\n",
           key, t.med_ms, t.min_ms, 1.0 / s, bytes * 1e-6, gbps, pct_bw, pct_read, p->in_bytes / mib,
           p->out_bytes / mib, (double)p->workspace_bytes / mib, peak_bytes / mib, rss_rise / mib);
    json_times(j, key, t);
    json_numf(j, 1.0 / s, "%s_calls_per_s", key, "");
    json_numf(j, bytes, "%s_bytes", key, "");
    json_numf(j, gbps, "%s_gbps", key, "");
    json_numf(j, pct_bw, "%s_pct_copy_bw", key, "");
    json_numf(j, pct_read, "%s_pct_read_bw", key, "");
    json_numf(j, p->in_bytes, "%s_input_bytes", key, "");
    json_numf(j, p->out_bytes, "%s_output_bytes", key, "");
    json_numf(j, (double)p->workspace_bytes, "%s_workspace_bytes", key, "");
    json_numf(j, peak_bytes, "%s_peak_bytes", key, "");
    json_numf(j, rss_rise, "%s_rss_rise_bytes", key, "");
    if (p->flops > 0.0) {
        const char *kind;
        const double peak = gemm_peak(m, p->gemm_dtype, j, &kind), gflops = p->flops / s * 1e-9;
        printf("%s: %.1f GFLOP/s = %.1f %% of the %s tile-GEMM peak\n", key, gflops, 100.0 * gflops / peak, kind);
        json_numf(j, p->flops * 1e-9, "%s_gflop", key, "");
        json_numf(j, gflops, "%s_gflops", key, "");
        json_numf(j, 100.0 * gflops / peak, "%s_pct_peak", key, "");
    }
}

/* Every phase of one case, on one set of inputs. */
static void bench_case(machine *m, const harness_case *hc, const char *name, const char *json, int calls, json_out *j)
{
    const harness_driver *d = harness_driver_of(hc->op);
    if (!d->perf_setup) {
        fprintf(stderr, "%s: case %s: operator %s has no perf mode\n", PROG, name, d->name);
        exit(2);
    }
    printf("== %s (%s): %s\n", name, d->name, json);
    char case_key[HARNESS_NAME_MAX + 8];
    snprintf(case_key, sizeof case_key, "%s_case", name);
    json_str(j, case_key, json); /* the case as given, for the report */
    harness_perf p = {0};
    check_ok(PROG, d->perf_setup(hc, ATTNOPS_IMPL_CPU, m->threads, &p));
    for (int ph = 0; d->phases[ph]; ph++) {
        char key[HARNESS_NAME_MAX + 16];
        if (d->phases[1]) snprintf(key, sizeof key, "%s_%s", name, d->phases[ph]);
        else snprintf(key, sizeof key, "%s", name);
        bench_phase(m, d, &p, ph, key, calls, j);
    }
    d->perf_free(&p);
}

/* A case file's cases, or one built-in; exits 2 on a refused document. */
static int parse_or_exit(const char *json, const char *origin, harness_case **cases)
{
    char err[512];
    const int n = harness_parse_cases(json, origin, cases, err, sizeof err);
    if (n < 0) fprintf(stderr, "%s: %s\n", PROG, err), exit(2);
    return n;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_options(&o, argc, argv)) return 2;
    if (o.list) {
        for (size_t i = 0; i < sizeof BUILTIN / sizeof BUILTIN[0]; i++)
            printf("%-11s %s\n", BUILTIN[i].name, BUILTIN[i].json);
        return 0;
    }
    omp_set_num_threads(o.threads); /* the inputs' fill */
    print_machine(PROG);
    json_out j;
    json_open(&j, o.json_path);
    json_machine(&j);
    json_num(&j, "threads", o.threads);
    json_str(&j, "attnops_version", attnops_version());
    machine m = {.threads = o.threads, .quick = o.quick, .copy_gbps = copy_gbps(o.threads),
                 .read_gbps = read_gbps(o.threads), .bf16_jit = -1};
    printf("copy bandwidth %.1f GB/s, read bandwidth %.1f GB/s (%d threads)\n", m.copy_gbps, m.read_gbps, o.threads);
    json_num(&j, "copy_gbps", m.copy_gbps);
    json_num(&j, "read_gbps", m.read_gbps);

    for (int f = 0; f < o.nfiles; f++) {
        char err[512];
        char *text = harness_read_text(o.files[f], err, sizeof err);
        if (!text) return fprintf(stderr, "%s: %s\n", PROG, err), 2;
        harness_case *cases = NULL;
        const int n = parse_or_exit(text, o.files[f], &cases);
        for (int k = 0; k < n; k++)
            if (!o.op || !strcmp(harness_op_name(cases[k].op), o.op))
                bench_case(&m, &cases[k], cases[k].name, cases[k].name, o.calls, &j);
        free(cases);
        free(text);
    }
    for (size_t i = 0; o.nfiles == 0 && i < sizeof BUILTIN / sizeof BUILTIN[0]; i++) {
        const char *json = o.quick && BUILTIN[i].quick ? BUILTIN[i].quick : BUILTIN[i].json;
        harness_case *cases = NULL;
        parse_or_exit(json, BUILTIN[i].name, &cases);
        if ((!o.op || !strcmp(harness_op_name(cases[0].op), o.op)) && chosen(&o, BUILTIN[i].name))
            bench_case(&m, &cases[0], BUILTIN[i].name, json, o.calls * BUILTIN[i].calls_factor, &j);
        free(cases);
    }
    json_close(&j);
    return 0;
}
