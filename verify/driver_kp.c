/* The KeyPool driver (harness_driver.h): a case ("op": "keypool") has the
 * seed's precision test's parameters (spec keypool-attnres-pypto A.6):
 * layout (BSH | TH), lens (per batch; all equal in BSH), starts (start_pos
 * per batch, default 0), cmp_ratio (default 4), block_size, scramble, norm
 * (or norm_on; booleans, default false), H (default 4096), D (default 128),
 * dtype (bf16 | fp16, default bf16), capacity (current | fixed, default
 * current), data_seed and compare (default isclose, the seed's rule).
 *
 * Each chain is one call on the same input cache.  pooled_key is judged on
 * its valid rows only (the rest are undefined in CURRENT capacity), the
 * state cache after the call (state_cache_out) as a whole.  KeyPool has no
 * benchmark chain (the library refuses one). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_driver.h"

enum {
    K_LAYOUT, K_LENS, K_STARTS, K_RATIO, K_BLOCK, K_SCRAMBLE, K_NORM, K_H, K_D, K_DTYPE, K_CAPACITY, K_DATA_SEED,
    K_COMPARE, K_COUNT
};

static const harness_field KP_FIELDS[] = {
    {"layout", K_LAYOUT}, {"lens", K_LENS}, {"starts", K_STARTS}, {"cmp_ratio", K_RATIO},
    {"block_size", K_BLOCK}, {"scramble", K_SCRAMBLE}, {"norm", K_NORM}, {"norm_on", K_NORM}, {"H", K_H},
    {"D", K_D}, {"dtype", K_DTYPE}, {"capacity", K_CAPACITY}, {"data_seed", K_DATA_SEED},
    {"compare", K_COMPARE}};

/* The fields as read, before they are combined. */
typedef struct kp_raw {
    kp_case_spec *s;
    const char *layout, *dtype, *capacity, *compare;
    int64_t lens[32], starts[32], data_seed;
    int nlens, nstarts;
} kp_raw;

static bool kp_read(harness_parse *c, const cJSON *v, int f, void *ctx)
{
    const int64_t big = (int64_t)1 << 40;
    kp_raw *r = ctx;
    kp_case_spec *s = r->s;
    switch (f) {
    case K_LAYOUT: return hp_str(c, v, &r->layout);
    case K_LENS: return hp_list(c, v, r->lens, &r->nlens);
    case K_STARTS: return hp_list(c, v, r->starts, &r->nstarts);
    case K_RATIO:
        if (!hp_int(c, v, 2, 128, &s->cmp_ratio)) return false;
        if (s->cmp_ratio & (s->cmp_ratio - 1))
            return hp_fail(c, v->string, "is %lld; it must be 2, 4, 8, 16, 32, 64 or 128", (long long)s->cmp_ratio);
        return true;
    case K_BLOCK: return hp_int(c, v, 1, big, &s->block_size);
    case K_SCRAMBLE: return hp_bool(c, v, &s->scramble);
    case K_NORM: return hp_bool(c, v, &s->norm);
    case K_H: return hp_int(c, v, 1, big, &s->H);
    case K_D: return hp_int(c, v, 1, big, &s->D);
    case K_DTYPE: return hp_str(c, v, &r->dtype);
    case K_CAPACITY: return hp_str(c, v, &r->capacity);
    case K_DATA_SEED: return hp_int(c, v, 0, big, &r->data_seed);
    case K_COMPARE: return hp_str(c, v, &r->compare);
    default: return true;
    }
}

static bool kp_parse(harness_parse *c, const cJSON *obj, harness_case *h)
{
    kp_case_spec *s = &h->kp;
    *s = (kp_case_spec){.cmp_ratio = 4, .H = 4096, .D = 128, .dtype = ATTNOPS_DTYPE_BF16}; /* the seed's H, D, dtype */
    bool has[K_COUNT] = {false};
    kp_raw r = {.s = s, .data_seed = 1};
    if (!hp_read_fields(c, obj, KP_FIELDS, sizeof KP_FIELDS / sizeof KP_FIELDS[0], "KeyPool ", has, kp_read, &r))
        return false;
    static const int required[] = {K_LAYOUT, K_LENS, K_BLOCK};
    static const char *const required_names[] = {"layout", "lens", "block_size"};
    if (!hp_require(c, has, required, required_names, 3)) return false;
    if (strcmp(r.layout, "BSH") && strcmp(r.layout, "TH"))
        return hp_fail(c, "layout", "is '%s'; it must be BSH or TH", r.layout);
    s->th = !strcmp(r.layout, "TH");
    if (has[K_STARTS] && r.nstarts != r.nlens)
        return hp_fail(c, "starts", "has %d values but lens has %d", r.nstarts, r.nlens);
    s->B = r.nlens;
    for (int b = 0; b < r.nlens; b++) {
        if (!s->th && r.lens[b] != r.lens[0])
            return hp_fail(c, "lens", "holds %lld and %lld; in layout BSH every batch has S tokens",
                           (long long)r.lens[0], (long long)r.lens[b]);
        s->len[b] = r.lens[b];
        s->start[b] = has[K_STARTS] ? r.starts[b] : 0;
    }
    if (r.dtype) {
        s->dtype = attnops_dtype_from_string(r.dtype);
        if (s->dtype != ATTNOPS_DTYPE_BF16 && s->dtype != ATTNOPS_DTYPE_F16)
            return hp_fail(c, "dtype", "is '%s'; KeyPool takes bf16 or fp16", r.dtype);
    }
    if (r.capacity) {
        if (!strcmp(r.capacity, "current")) s->capacity = ATTNOPS_KEY_POOL_CAPACITY_CURRENT;
        else if (!strcmp(r.capacity, "fixed")) s->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED;
        else return hp_fail(c, "capacity", "is '%s'; it must be current or fixed", r.capacity);
    }
    h->data_seed = (uint64_t)r.data_seed;
    h->rule = CMP_ISCLOSE;
    if (r.compare && !hp_rule(c, r.compare, &h->rule)) return false;
    if (h->rule == CMP_TRIPLE)
        return hp_fail(c, "compare", "is 'triple', which needs a benchmark chain; KeyPool has none");
    return true;
}

static double kp_bytes(const harness_case *h)
{
    const kp_case_spec *k = &h->kp;
    double tokens = 0.0, blocks = 1.0;
    for (int b = 0; b < k->B; b++) {
        tokens += (double)k->len[b];
        blocks += ceil(((double)k->start[b] + (double)k->len[b]) / (double)k->block_size) + 1.0;
    }
    return 8.0 * ((double)k->H * (tokens + 2.0 * (double)k->D) +
                  blocks * (double)k->block_size * 4.0 * (double)k->D + tokens * (double)k->D);
}

/* The chains' calls, each on its own copy of the inputs (a benchmark chain
 * is asked of the library, which refuses it). */
typedef struct kp_run {
    kp_case chain[HARNESS_CHAIN_COUNT];
    tu_tensor pooled[HARNESS_CHAIN_COUNT];
    bool made[HARNESS_CHAIN_COUNT];
    int64_t B;
    attnops_tensor input_cache, valid_rows;
    uint8_t *valid; /* pooled_key's elements on valid rows (the golden's valid_rows) */
} kp_run;

static void kp_free(harness_run *r)
{
    kp_run *s = r->state;
    for (int c = 0; c < HARNESS_CHAIN_COUNT; c++)
        if (s->made[c]) tu_tensor_free(&s->pooled[c]), kp_case_free(&s->chain[c]);
    free(s->valid);
    free(s);
}

static cJSON *kp_attributes(const kp_case *c)
{
    const attnops_key_pool_args p = kp_case_args(c, c->spec.capacity, ATTNOPS_IMPL_REFERENCE);
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "layout", c->spec.th ? "TH" : "BSH");
    cJSON_AddNumberToObject(a, "cmp_ratio", (double)p.cmp_ratio);
    cJSON_AddNumberToObject(a, "norm_eps", p.norm_eps);
    cJSON_AddNumberToObject(a, "rotary_mode", (double)p.rotary_mode);
    cJSON_AddStringToObject(a, "capacity", p.capacity == ATTNOPS_KEY_POOL_CAPACITY_FIXED ? "fixed" : "current");
    return a;
}

/* The inputs (the cache as it was before the call), pooled_key (counted:
 * its valid rows) and the cache after the call, and valid_rows (i64 [B]),
 * which `attnops compare` masks pooled_key with. */
static void kp_tensors(harness_run *r, kp_run *s)
{
    const kp_case *g = &s->chain[HARNESS_GOLDEN];
    s->input_cache = kp_case_input_cache(g);
    const struct { const char *name; const attnops_tensor *v; bool present; } inputs[] = {
        {"hidden_states", &g->hidden.view, true}, {"wk", &g->wk.view, true},
        {"gate_weight", &g->gate.view, true},     {"ape", &g->ape.view, true},
        {"state_cache", &s->input_cache, true},   {"cache_block_table", &g->table.view, true},
        {"start_pos", &g->start.view, true},      {"cu_seqlens", &g->cu.view, g->spec.th},
        {"norm_weight", &g->norm_w.view, g->spec.norm}, {"norm_bias", &g->norm_b.view, g->spec.norm}};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        if (inputs[i].present) harness_add(r, inputs[i].name, "input", inputs[i].v, NULL, NULL);
    const bool kern = s->made[HARNESS_KERNEL];
    harness_tensor *pooled = harness_add(r, "pooled_key", "output", &s->pooled[HARNESS_GOLDEN].view,
                                         kern ? &s->pooled[HARNESS_KERNEL].view : NULL, NULL);
    pooled->counted = s->valid, pooled->counted_by = "valid_rows", pooled->judged = true;
    harness_add(r, "state_cache_out", "output", &g->cache_view, kern ? &s->chain[HARNESS_KERNEL].cache_view : NULL,
                NULL)->judged = true;
    harness_add(r, "valid_rows", "mask", &s->valid_rows, NULL, NULL);
}

static attnops_status kp_run_case(const harness_case *hc, const harness_run_options *o, harness_run *r)
{
    kp_run *s = calloc(1, sizeof *s);
    r->state = s;
    const bool want[HARNESS_CHAIN_COUNT] = {true, o->kernel, o->bench};
    const attnops_impl impl[HARNESS_CHAIN_COUNT] = {ATTNOPS_IMPL_REFERENCE, o->impl, ATTNOPS_IMPL_BENCHMARK};
    attnops_status st = ATTNOPS_SUCCESS;
    for (int c = 0; c < HARNESS_CHAIN_COUNT && st == ATTNOPS_SUCCESS; c++) {
        if (!want[c]) continue;
        kp_case_init(&s->chain[c], &hc->kp, hc->data_seed);
        s->made[c] = true;
        st = kp_case_run(&s->chain[c], hc->kp.capacity, impl[c], o->threads, &s->pooled[c]);
    }
    if (st != ATTNOPS_SUCCESS) return st;
    const kp_case *g = &s->chain[HARNESS_GOLDEN];
    s->B = hc->kp.B;
    s->valid_rows = attnops_tensor_contiguous((void *)g->valid_rows, ATTNOPS_DTYPE_I64, 1, &s->B);
    const attnops_tensor *pooled = &s->pooled[HARNESS_GOLDEN].view;
    s->valid = kp_valid_mask(g->valid_rows, s->B, pooled->rank, pooled->shape);
    r->attributes = kp_attributes(g);
    kp_tensors(r, s);
    return st;
}

/* valid_rows (per batch) as pooled_key's element mask. */
static uint8_t *kp_counted(const double *rows, int64_t n, int rank, const int64_t *shape)
{
    int64_t *valid = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    bool fits = valid && n > 0;
    for (int64_t b = 0; fits && b < n; b++) {
        fits = rows[b] >= 0 && rows[b] <= 9.0e15;
        valid[b] = fits ? (int64_t)rows[b] : 0;
    }
    uint8_t *mask = fits ? kp_valid_mask(valid, n, rank, shape) : NULL;
    free(valid);
    return mask;
}

/* Perf mode: one case, its pooled_key, its arguments; the state cache is
 * updated in place call after call, as a serving loop updates it. */
typedef struct kp_perf {
    kp_case c;
    tu_tensor pooled;
    attnops_key_pool_args args;
} kp_perf;

/* The bytes one call touches: the weights, ape and norm parameters, the
 * tokens; per batch the cache rows of its first group's history when the
 * call completes that group, the cache rows it leaves for an unfinished
 * group, and a pooled row per completed group. */
static void kp_work(const kp_case *c, harness_perf *p)
{
    const kp_case_spec *s = &c->spec;
    const double e = (double)attnops_dtype_size(s->dtype), row = 2.0 * (double)s->D * 4.0, R = (double)s->cmp_ratio;
    double tokens = 0.0, cache_read = 0.0, cache_written = 0.0, pooled = 0.0;
    for (int b = 0; b < s->B; b++) {
        const int64_t st = s->start[b], n = s->len[b], groups = (st + n) / s->cmp_ratio - st / s->cmp_ratio;
        tokens += (double)n;
        cache_read += n > 0 && groups > 0 ? (double)(st % s->cmp_ratio) : 0.0;
        cache_written += groups > 0 ? (double)((st + n) % s->cmp_ratio) : (double)n;
        pooled += (double)groups;
    }
    const double params = 2.0 * (double)s->D * (double)s->H * e + R * (double)s->D * 4.0 +
                          (s->norm ? 2.0 * (double)s->D * 4.0 : 0.0);
    p->in_bytes = params + tokens * (double)s->H * e + cache_read * row;
    p->out_bytes = cache_written * row + pooled * (double)s->D * e;
    p->flops = 4.0 * tokens * (double)s->H * (double)s->D; /* the two projections */
    p->gemm_dtype = s->dtype;
}

static attnops_status kp_perf_setup(const harness_case *hc, attnops_impl impl, int threads, harness_perf *p)
{
    kp_perf *k = calloc(1, sizeof *k);
    p->state = k;
    kp_case_init(&k->c, &hc->kp, hc->data_seed);
    k->args = kp_case_args(&k->c, hc->kp.capacity, impl);
    k->args.num_threads = threads;
    int32_t rank;
    int64_t shape[3];
    const attnops_status st = attnops_key_pool_output_shape(&k->args, &rank, shape);
    if (st != ATTNOPS_SUCCESS) return st;
    k->pooled = tu_tensor_new(hc->kp.dtype, rank, shape, 0);
    k->args.pooled_key = &k->pooled.view;
    return st;
}

static attnops_status kp_perf_phase(harness_perf *p, int phase)
{
    (void)phase;
    kp_perf *k = p->state;
    kp_work(&k->c, p);
    return attnops_key_pool_workspace_size(&k->args, &p->workspace_bytes);
}

static attnops_status kp_perf_call(harness_perf *p, int phase, void *workspace)
{
    (void)phase;
    kp_perf *k = p->state;
    return attnops_key_pool(&k->args, workspace, p->workspace_bytes);
}

static void kp_perf_free(harness_perf *p)
{
    kp_perf *k = p->state;
    tu_tensor_free(&k->pooled);
    kp_case_free(&k->c);
    free(k);
}

static const char *const KP_PHASES[] = {"call", NULL};

static const attnops_dtype KP_DTYPES[] = {ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F16, 0};

static void kp_example(attnops_dtype dtype, char *json, size_t n)
{
    snprintf(json, n, "{\"op\": \"keypool\", \"layout\": \"TH\", \"lens\": [5, 9], \"starts\": [3, 0], "
             "\"block_size\": 4, \"H\": 64, \"D\": 16, \"norm\": true, \"dtype\": \"%s\"}",
             attnops_dtype_traits_of(dtype)->cann_name);
}

const harness_driver driver_keypool = {
    .name = "keypool",
    .title = "KeyPool (key compression into a paged state cache)",
    .dtypes = {[ATTNOPS_IMPL_REFERENCE] = KP_DTYPES, [ATTNOPS_IMPL_CPU] = KP_DTYPES},
    .example = kp_example,
    .parse = kp_parse,
    .bytes = kp_bytes,
    .run = kp_run_case,
    .free = kp_free,
    .counted = kp_counted,
    .phases = KP_PHASES,
    .perf_setup = kp_perf_setup,
    .perf_phase = kp_perf_phase,
    .perf_call = kp_perf_call,
    .perf_free = kp_perf_free,
};
