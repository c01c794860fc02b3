/* The FusedInferAttentionScore driver (harness_driver.h): a case ("op":
 * "fia") has torch_npu's argument names where they exist:
 * B, N1 (num_heads), N2 (num_key_value_heads, default N1), S1, S2, D, D_V
 * (default D), rope_dim (MLA, default 0), dtype (fp16 | bf16 | fp32),
 * input_layout (BSH | BSND | BNSD | TND | BNSD_BSND), block_size (0, the
 * default: contiguous key/value; else a paged cache of shuffled blocks),
 * actual_seq_lengths / actual_seq_lengths_kv (per batch, as the FA cases
 * write them, cumulated for TND here), sparse_mode, pre_tokens, next_tokens,
 * atten_mask (modes 0/1: a random mask; 2-4 always the compressed tile),
 * pse_shift (booleans), softmax_lse_flag (default true), scale (default
 * 1/sqrt(D + rope_dim)), kv_dtype ("int8": an int8 cache with antiquant
 * scales and offsets, key_antiquant_mode / value_antiquant_mode 0-3, default
 * 0; the default: dtype), softcap (default 0, off) and alibi_slopes ("N1" or
 * "B,N1": the attnops extensions), data_seed and compare (default dual;
 * allclose for bf16, as FlashAttention's cases).  TND takes both length
 * lists and sets B from them.
 *
 * Each chain is one call on the same inputs; attention_out and softmax_lse
 * (rows without keys +inf in both) are judged.  There is no benchmark chain
 * (the library refuses one). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fia_case.h"
#include "harness_driver.h"

enum {
    I_B, I_N1, I_N2, I_S1, I_S2, I_D, I_DV, I_DR, I_DTYPE, I_LAYOUT, I_BLOCK, I_QLEN, I_KVLEN, I_MODE, I_PRE, I_NEXT,
    I_MASK, I_PSE, I_LSE, I_SCALE, I_KV_DTYPE, I_KMODE, I_VMODE, I_SOFTCAP, I_ALIBI, I_DATA_SEED, I_COMPARE, I_COUNT
};

static const harness_field FIA_FIELDS[] = {
    {"B", I_B}, {"N1", I_N1}, {"num_heads", I_N1}, {"N2", I_N2}, {"num_key_value_heads", I_N2}, {"S1", I_S1},
    {"S2", I_S2}, {"D", I_D}, {"D_V", I_DV}, {"rope_dim", I_DR}, {"dtype", I_DTYPE}, {"input_layout", I_LAYOUT},
    {"block_size", I_BLOCK}, {"actual_seq_lengths", I_QLEN}, {"actual_seq_lengths_kv", I_KVLEN},
    {"sparse_mode", I_MODE}, {"pre_tokens", I_PRE}, {"next_tokens", I_NEXT}, {"atten_mask", I_MASK},
    {"pse_shift", I_PSE}, {"softmax_lse_flag", I_LSE}, {"scale", I_SCALE}, {"kv_dtype", I_KV_DTYPE},
    {"key_antiquant_mode", I_KMODE}, {"value_antiquant_mode", I_VMODE}, {"softcap", I_SOFTCAP},
    {"alibi_slopes", I_ALIBI}, {"data_seed", I_DATA_SEED},
    {"compare", I_COMPARE}};

typedef struct fia_raw {
    fia_case_spec *s;
    const char *dtype, *layout, *compare, *kv_dtype, *alibi;
    int64_t B, data_seed;
} fia_raw;

static bool fia_read(harness_parse *c, const cJSON *v, int f, void *ctx)
{
    const int64_t big = (int64_t)1 << 40, tok = 2147483647;
    fia_raw *r = ctx;
    fia_case_spec *s = r->s;
    switch (f) {
    case I_B: return hp_int(c, v, 1, FIA_CASE_MAX_B, &r->B);
    case I_N1: return hp_int(c, v, 1, big, &s->N1);
    case I_N2: return hp_int(c, v, 1, big, &s->N2);
    case I_S1: return hp_int(c, v, 1, big, &s->S1);
    case I_S2: return hp_int(c, v, 0, big, &s->S2);
    case I_D: return hp_int(c, v, 1, big, &s->D);
    case I_DV: return hp_int(c, v, 1, big, &s->Dv);
    case I_DR: return hp_int(c, v, 0, big, &s->Dr);
    case I_DTYPE: return hp_str(c, v, &r->dtype);
    case I_LAYOUT: return hp_str(c, v, &r->layout);
    case I_BLOCK: return hp_int(c, v, 0, big, &s->block_size);
    case I_QLEN: return hp_list(c, v, s->q_len, &s->nq);
    case I_KVLEN: return hp_list(c, v, s->kv_len, &s->nkv);
    case I_MODE: return hp_int(c, v, 0, 4, &s->sparse_mode);
    case I_PRE: return hp_int(c, v, -tok, tok, &s->pre_tokens);
    case I_NEXT: return hp_int(c, v, -tok, tok, &s->next_tokens);
    case I_MASK: return hp_bool(c, v, &s->mask);
    case I_PSE: return hp_bool(c, v, &s->pse);
    case I_LSE: return hp_bool(c, v, &s->lse);
    case I_SCALE:
        s->scale = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        return (s->scale > 0.0 && isfinite(s->scale)) || hp_fail(c, v->string, "must be a positive number");
    case I_KV_DTYPE: return hp_str(c, v, &r->kv_dtype);
    case I_KMODE: return hp_int(c, v, 0, 3, &s->key_mode);
    case I_VMODE: return hp_int(c, v, 0, 3, &s->value_mode);
    case I_SOFTCAP:
        s->softcap = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        return (s->softcap >= 0.0 && isfinite(s->softcap)) || hp_fail(c, v->string, "must be a number >= 0");
    case I_ALIBI: return hp_str(c, v, &r->alibi);
    case I_DATA_SEED: return hp_int(c, v, 0, big, &r->data_seed);
    case I_COMPARE: return hp_str(c, v, &r->compare);
    default: return true;
    }
}

/* The layout name, BNSD_BSND included. */
static bool parse_layout(harness_parse *c, const char *name, fia_case_spec *s)
{
    s->out_layout = ATTNOPS_LAYOUT_UNSET;
    if (!strcmp(name, "BNSD_BSND")) return s->layout = ATTNOPS_LAYOUT_BNSD, s->out_layout = ATTNOPS_LAYOUT_BSND, true;
    s->layout = attnops_layout_from_string(name);
    if (s->layout && s->layout != ATTNOPS_LAYOUT_SBH) return true;
    return hp_fail(c, "input_layout", "is '%s'; it must be BSH, BSND, BNSD, TND or BNSD_BSND", name);
}

/* The lengths and B: TND from the lists (both required, the same count). */
static bool fia_batches(harness_parse *c, const bool *has, fia_raw *r)
{
    fia_case_spec *s = r->s;
    const char *const names[] = {"N1", "D", "dtype", "input_layout"};
    static const int required[] = {I_N1, I_D, I_DTYPE, I_LAYOUT};
    if (!hp_require(c, has, required, names, 4)) return false;
    if (s->layout == ATTNOPS_LAYOUT_TND) {
        if (!s->nq || !s->nkv) return hp_fail(c, "actual_seq_lengths", "and actual_seq_lengths_kv are required in TND");
        if (s->nq != s->nkv) return hp_fail(c, "actual_seq_lengths_kv", "has %d lengths but actual_seq_lengths %d",
                                            s->nkv, s->nq);
        s->B = s->nq;
        s->S1 = fia_case_rows(s), s->S2 = fia_case_keys(s);
        return true;
    }
    static const int dims[] = {I_B, I_S1, I_S2};
    const char *const dim_names[] = {"B", "S1", "S2"};
    if (!hp_require(c, has, dims, dim_names, 3)) return false;
    s->B = (int)r->B;
    for (int i = 0; i < 2; i++) {
        const int n = i ? s->nkv : s->nq;
        if (n && n != s->B)
            return hp_fail(c, i ? "actual_seq_lengths_kv" : "actual_seq_lengths", "has %d lengths but B is %d", n,
                           s->B);
    }
    return true;
}

static bool fia_parse(harness_parse *c, const cJSON *obj, harness_case *h)
{
    fia_case_spec *s = &h->fia;
    *s = (fia_case_spec){.pre_tokens = 2147483647, .next_tokens = 2147483647, .lse = true};
    bool has[I_COUNT] = {false};
    fia_raw r = {.s = s, .data_seed = 1};
    if (!hp_read_fields(c, obj, FIA_FIELDS, sizeof FIA_FIELDS / sizeof FIA_FIELDS[0], "FusedInferAttentionScore ",
                        has, fia_read, &r))
        return false;
    if (has[I_LAYOUT] && !parse_layout(c, r.layout, s)) return false;
    if (!fia_batches(c, has, &r)) return false;
    s->dtype = attnops_dtype_from_string(r.dtype);
    if (s->dtype != ATTNOPS_DTYPE_F16 && s->dtype != ATTNOPS_DTYPE_BF16 && s->dtype != ATTNOPS_DTYPE_F32)
        return hp_fail(c, "dtype", "is '%s'; it must be fp16, bf16 or fp32", r.dtype);
    if (r.kv_dtype && strcmp(r.kv_dtype, "int8") && attnops_dtype_from_string(r.kv_dtype) != s->dtype)
        return hp_fail(c, "kv_dtype", "is '%s'; it must be int8 or the query's dtype", r.kv_dtype);
    s->int8_kv = r.kv_dtype && !strcmp(r.kv_dtype, "int8");
    if (!s->int8_kv && (has[I_KMODE] || has[I_VMODE]))
        return hp_fail(c, has[I_KMODE] ? "key_antiquant_mode" : "value_antiquant_mode",
                       "needs an int8 cache (\"kv_dtype\": \"int8\")");
    if (r.alibi && strcmp(r.alibi, "N1") && strcmp(r.alibi, "B,N1"))
        return hp_fail(c, "alibi_slopes", "is '%s'; it must be N1 or B,N1 (the slopes' shape)", r.alibi);
    s->alibi = !r.alibi ? 0 : !strcmp(r.alibi, "N1") ? 1 : 2;
    if (!has[I_N2]) s->N2 = s->N1;
    if (!has[I_DV]) s->Dv = s->D;
    h->data_seed = (uint64_t)r.data_seed;
    h->rule = s->dtype == ATTNOPS_DTYPE_BF16 ? CMP_ALLCLOSE : CMP_DUAL;
    if (r.compare && !hp_rule(c, r.compare, &h->rule)) return false;
    if (h->rule == CMP_TRIPLE)
        return hp_fail(c, "compare", "is 'triple', which needs a benchmark chain; FusedInferAttentionScore has none");
    return true;
}

static double fia_bytes(const harness_case *h)
{
    const fia_case_spec *s = &h->fia;
    const double rows = (double)s->B * (double)s->S1, keys = (double)s->B * (double)s->S2;
    const double d = (double)(s->D + s->Dv + s->Dr);
    const double mask = s->mask || s->pse ? rows * keys * (double)s->N1 : 0.0;
    return 8.0 * (3.0 * rows * (double)s->N1 * d + 2.0 * keys * (double)s->N2 * d + mask) + 2048.0 * 2048.0;
}

/* One case per chain (the same inputs from the data seed). */
typedef struct fia_run {
    fia_case chain[HARNESS_CHAIN_COUNT];
    bool made[HARNESS_CHAIN_COUNT];
} fia_run;

static void fia_free(harness_run *r)
{
    fia_run *s = r->state;
    for (int c = 0; c < HARNESS_CHAIN_COUNT; c++)
        if (s->made[c]) fia_case_free(&s->chain[c]);
    free(s);
}

static cJSON *fia_attributes(const fia_case *c)
{
    const attnops_fia_args *a = &c->args;
    cJSON *j = cJSON_CreateObject();
    const bool bsnd_out = a->output_layout == ATTNOPS_LAYOUT_BSND && a->input_layout == ATTNOPS_LAYOUT_BNSD;
    cJSON_AddStringToObject(j, "input_layout", bsnd_out ? "BNSD_BSND" : attnops_layout_name(a->input_layout));
    cJSON_AddNumberToObject(j, "num_heads", (double)a->num_heads);
    cJSON_AddNumberToObject(j, "num_key_value_heads", (double)a->num_key_value_heads);
    cJSON_AddNumberToObject(j, "scale", a->scale_value);
    cJSON_AddNumberToObject(j, "pre_tokens", (double)a->pre_tokens);
    cJSON_AddNumberToObject(j, "next_tokens", (double)a->next_tokens);
    cJSON_AddNumberToObject(j, "sparse_mode", (double)a->sparse_mode);
    cJSON_AddNumberToObject(j, "block_size", (double)a->block_size);
    cJSON_AddBoolToObject(j, "softmax_lse_flag", a->softmax_lse_flag);
    if (a->softcap > 0.0) cJSON_AddNumberToObject(j, "softcap", a->softcap);
    if (c->spec.int8_kv) {
        cJSON_AddNumberToObject(j, "key_antiquant_mode", (double)a->key_antiquant_mode);
        cJSON_AddNumberToObject(j, "value_antiquant_mode", (double)a->value_antiquant_mode);
    }
    return j;
}

static void fia_tensors(harness_run *r, const fia_run *s)
{
    const fia_case *g = &s->chain[HARNESS_GOLDEN];
    const struct { const char *name; size_t at; } inputs[] = {
        {"query", offsetof(fia_case, q)}, {"key", offsetof(fia_case, k)}, {"value", offsetof(fia_case, v)},
        {"query_rope", offsetof(fia_case, qr)}, {"key_rope", offsetof(fia_case, kr)},
        {"block_table", offsetof(fia_case, table)}, {"actual_seq_lengths", offsetof(fia_case, q_len)},
        {"actual_seq_lengths_kv", offsetof(fia_case, kv_len)}, {"atten_mask", offsetof(fia_case, mask)},
        {"pse_shift", offsetof(fia_case, pse)}, {"key_antiquant_scale", offsetof(fia_case, k_scale)},
        {"key_antiquant_offset", offsetof(fia_case, k_offset)}, {"value_antiquant_scale", offsetof(fia_case, v_scale)},
        {"value_antiquant_offset", offsetof(fia_case, v_offset)}, {"alibi_slopes", offsetof(fia_case, slopes)}};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        const tu_tensor *t = (const tu_tensor *)((const char *)g + inputs[i].at);
        if (t->block) harness_add(r, inputs[i].name, "input", &t->view, NULL, NULL);
    }
    const struct { const char *name; size_t at; } outputs[] = {
        {"attention_out", offsetof(fia_case, out)}, {"softmax_lse", offsetof(fia_case, lse)}};
    for (size_t i = 0; i < (g->spec.lse ? 2u : 1u); i++) {
        const attnops_tensor *v[HARNESS_CHAIN_COUNT] = {NULL, NULL, NULL};
        for (int c = 0; c < HARNESS_CHAIN_COUNT; c++)
            if (s->made[c]) v[c] = &((const tu_tensor *)((const char *)&s->chain[c] + outputs[i].at))->view;
        harness_add(r, outputs[i].name, "output", v[0], v[1], v[2])->judged = true;
    }
}

static attnops_status fia_run_case(const harness_case *hc, const harness_run_options *o, harness_run *r)
{
    fia_run *s = calloc(1, sizeof *s);
    r->state = s;
    const bool want[HARNESS_CHAIN_COUNT] = {true, o->kernel, o->bench};
    const attnops_impl impl[HARNESS_CHAIN_COUNT] = {ATTNOPS_IMPL_REFERENCE, o->impl, ATTNOPS_IMPL_BENCHMARK};
    attnops_status st = ATTNOPS_SUCCESS;
    for (int c = 0; c < HARNESS_CHAIN_COUNT && st == ATTNOPS_SUCCESS; c++) {
        if (!want[c]) continue;
        fia_case_init(&s->chain[c], &hc->fia, hc->data_seed);
        s->made[c] = true;
        st = fia_case_run(&s->chain[c], impl[c], o->threads);
    }
    if (st != ATTNOPS_SUCCESS) return st;
    r->attributes = fia_attributes(&s->chain[HARNESS_GOLDEN]);
    fia_tensors(r, s);
    return st;
}

/* Perf mode: one case, its call. */
static attnops_status fia_perf_setup(const harness_case *hc, attnops_impl impl, int threads, harness_perf *p)
{
    fia_case *c = calloc(1, sizeof *c);
    p->state = c;
    fia_case_init(c, &hc->fia, hc->data_seed);
    c->args.impl = impl, c->args.num_threads = threads;
    return ATTNOPS_SUCCESS;
}

/* What a call must read and write, each element once: the query rows, the
 * keys and values (and rope keys) each batch's length reaches, the outputs;
 * FLOPs 2 (D + Dr + Dv) per query row, head and key. */
static attnops_status fia_perf_phase(harness_perf *p, int phase)
{
    (void)phase;
    const fia_case *c = p->state;
    const fia_case_spec *s = &c->spec;
    const double e = (double)attnops_dtype_size(s->dtype), ekv = s->int8_kv ? 1.0 : e;
    double rows = 0.0, keys = 0.0, pairs = 0.0;
    for (int b = 0; b < s->B; b++) {
        const double l1 = (double)(s->nq ? s->q_len[b] : s->S1), l2 = (double)(s->nkv ? s->kv_len[b] : s->S2);
        rows += l1, keys += l2, pairs += l1 * l2;
    }
    p->in_bytes = rows * (double)s->N1 * (double)(s->D + s->Dr) * e +
                  keys * (double)s->N2 * ((double)(s->D + s->Dv) * ekv + (double)s->Dr * e);
    p->out_bytes = rows * (double)s->N1 * ((double)s->Dv * e + (s->lse ? 4.0 : 0.0));
    p->flops = 2.0 * pairs * (double)s->N1 * (double)(s->D + s->Dr + s->Dv);
    p->gemm_dtype = ATTNOPS_DTYPE_F32;
    return attnops_fused_infer_attention_score_workspace_size(&c->args, &p->workspace_bytes);
}

static attnops_status fia_perf_call(harness_perf *p, int phase, void *workspace)
{
    (void)phase;
    const fia_case *c = p->state;
    return attnops_fused_infer_attention_score(&c->args, workspace, p->workspace_bytes);
}

static void fia_perf_free(harness_perf *p)
{
    fia_case_free(p->state);
    free(p->state);
}

static const char *const FIA_PHASES[] = {"call", NULL};
static const attnops_dtype FIA_DTYPES[] = {ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F32, 0};

static void fia_example(attnops_dtype dtype, char *json, size_t n)
{
    snprintf(json, n, "{\"op\": \"fia\", \"B\": 2, \"N1\": 4, \"N2\": 2, \"S1\": 1, \"S2\": 40, \"D\": 16, "
             "\"dtype\": \"%s\", \"input_layout\": \"BNSD\", \"block_size\": 16, \"actual_seq_lengths_kv\": [40, 7]}",
             attnops_dtype_traits_of(dtype)->cann_name);
}

const harness_driver driver_fia = {
    .name = "fia",
    .title = "FusedInferAttentionScore (decode and prompt, contiguous or paged KV)",
    .dtypes = {[ATTNOPS_IMPL_REFERENCE] = FIA_DTYPES, [ATTNOPS_IMPL_CPU] = FIA_DTYPES},
    .example = fia_example,
    .parse = fia_parse,
    .bytes = fia_bytes,
    .run = fia_run_case,
    .free = fia_free,
    .phases = FIA_PHASES,
    .perf_setup = fia_perf_setup,
    .perf_phase = fia_perf_phase,
    .perf_call = fia_perf_call,
    .perf_free = fia_perf_free,
};
