#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

_Atomic int tu_failures = 0; /* atomic: checks may fail on several threads at once */

uint64_t tu_suite_seed(void)
{
    const char *s = getenv("ATTNOPS_TEST_SEED");
    return s && *s ? strtoull(s, NULL, 0) : UINT64_C(20261129);
}

/* splitmix64: each draw adds TU_GOLDEN to the state, so draw k of a
 * generator is known without the k - 1 before it (tu_tensor_randn). */
#define TU_GOLDEN UINT64_C(0x9E3779B97F4A7C15)

tu_rng tu_rng_make(uint64_t seed) { return (tu_rng){seed * TU_GOLDEN + 1}; }

uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->state += TU_GOLDEN);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

double tu_uniform(tu_rng *r) { return (double)(tu_next(r) >> 11) * 0x1p-53; }

double tu_randn(tu_rng *r)
{
    double u1 = tu_uniform(r), u2 = tu_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int64_t tu_pick(tu_rng *r, const int64_t *choices, int n) { return choices[tu_next(r) % (uint64_t)n]; }

int64_t tu_numel(const attnops_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

tu_tensor tu_tensor_new(attnops_dtype dtype, int rank, const int64_t *shape, int64_t pad)
{
    tu_tensor t;
    memset(&t, 0, sizeof t);
    t.view.dtype = dtype;
    t.view.rank = rank;
    int64_t stride = 1;
    bool overflow = false;
    for (int i = rank - 1; i >= 0; i--) {
        t.view.shape[i] = shape[i];
        t.view.strides[i] = stride;
        int64_t extent = shape[i] + (i == rank - 1 ? pad : 0);
        overflow |= __builtin_mul_overflow(stride, extent > 0 ? extent : 1, &stride);
    }
    size_t esize = attnops_dtype_size(dtype);
    overflow |= __builtin_mul_overflow((size_t)stride, esize, &t.data_bytes);
    /* 64-byte aligned data (the canary is 64 bytes), as a framework's
     * allocator gives: rows that straddle cache lines would make the
     * benchmarks (bench_ops' perf mode) slower than a user's calls */
    const size_t block_bytes = (t.data_bytes + 2 * TU_CANARY_BYTES + 63) / 64 * 64;
    t.block = overflow ? NULL : aligned_alloc(64, block_bytes);
    if (!t.block) { /* the harness and the tests cannot go on; say why instead of crashing */
        if (overflow) fprintf(stderr, "attnops: a %s tensor's size overflows 64 bits\n", attnops_dtype_name(dtype));
        else fprintf(stderr, "attnops: out of memory for a %s tensor of %zu bytes\n", attnops_dtype_name(dtype),
                     t.data_bytes);
        exit(2);
    }
    memset(t.block, TU_CANARY_BYTE, t.data_bytes + 2 * TU_CANARY_BYTES);
    t.view.data = t.block + TU_CANARY_BYTES;
    return t;
}

void tu_tensor_free(tu_tensor *t)
{
    free(t->block);
    memset(t, 0, sizeof *t);
}

void tu_tensor_poison(tu_tensor *t, unsigned char byte) { memset(t->view.data, byte, t->data_bytes); }

/* Calls fn(element pointer, logical index) over the shape, row-major. */
static void for_each(const attnops_tensor *v, void (*fn)(char *, int64_t, void *), void *ctx)
{
    int64_t n = tu_numel(v), idx[ATTNOPS_MAX_RANK] = {0};
    size_t esize = attnops_dtype_size(v->dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < v->rank; d++) off += idx[d] * v->strides[d];
        fn((char *)v->data + off * (int64_t)esize, i, ctx);
        for (int d = v->rank - 1; d >= 0; d--) {
            if (++idx[d] < v->shape[d]) break;
            idx[d] = 0;
        }
    }
}

typedef struct convert_ctx {
    attnops_dtype dtype;
    double *buf;
} convert_ctx;

static void load_one(char *p, int64_t i, void *c)
{
    convert_ctx *f = c;
    f->buf[i] = tu_load_f64(p, f->dtype);
}
static void store_one(char *p, int64_t i, void *c)
{
    convert_ctx *f = c;
    tu_store_f64(p, f->dtype, f->buf[i]);
}

/* Element i (row-major) takes draws 2i and 2i + 1, so blocks of elements
 * fill in parallel from their own starting state, with the values of one
 * sequential pass; r ends where that pass would leave it. */
void tu_tensor_randn(tu_tensor *t, tu_rng *r, double scale)
{
    const attnops_tensor *v = &t->view;
    const int64_t n = tu_numel(v), block = 1 << 14, blocks = (n + block - 1) / block;
    const size_t es = attnops_dtype_size(v->dtype);
    void (*const to_dtype)(const double *, void *, size_t) = attnops_dtype_traits_of(v->dtype)->from_f64;
    const uint64_t start = r->state;
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t k = 0; k < blocks; k++) {
        tu_rng g = {start + (uint64_t)(2 * k * block) * TU_GOLDEN};
        int64_t idx[ATTNOPS_MAX_RANK], rem = k * block;
        for (int d = v->rank - 1; d >= 0; d--) idx[d] = rem % v->shape[d], rem /= v->shape[d];
        for (int64_t i = k * block; i < n && i < (k + 1) * block; i++) {
            int64_t off = 0;
            for (int d = 0; d < v->rank; d++) off += idx[d] * v->strides[d];
            const double x = tu_randn(&g) * scale;
            to_dtype(&x, (char *)v->data + off * (int64_t)es, 1);
            for (int d = v->rank - 1; d >= 0; d--) {
                if (++idx[d] < v->shape[d]) break;
                idx[d] = 0;
            }
        }
    }
    r->state = start + (uint64_t)(2 * n) * TU_GOLDEN;
}

void tu_view_to_f64(const attnops_tensor *v, double *out)
{
    convert_ctx c = {v->dtype, out};
    for_each(v, load_one, &c);
}

void tu_tensor_to_f64(const tu_tensor *t, double *out) { tu_view_to_f64(&t->view, out); }

void tu_tensor_from_f64(tu_tensor *t, const double *in)
{
    convert_ctx c = {t->view.dtype, (double *)in};
    for_each(&t->view, store_one, &c);
}

attnops_status tu_run_with_workspace(attnops_status (*run)(const void *, void *, size_t), const void *args,
                                     size_t bytes, const char *what)
{
    unsigned char *block = malloc(bytes + 2 * TU_CANARY_BYTES);
    memset(block, TU_CANARY_BYTE, bytes + 2 * TU_CANARY_BYTES);
    attnops_status st = run(args, block + TU_CANARY_BYTES, bytes);
    for (size_t i = 0; i < TU_CANARY_BYTES; i++)
        TU_CHECK(block[i] == TU_CANARY_BYTE && block[TU_CANARY_BYTES + bytes + i] == TU_CANARY_BYTE,
                 "%s wrote outside its %zu-byte workspace", what, bytes);
    free(block);
    return st;
}

bool tu_canaries_ok(const tu_tensor *t, const char *name)
{
    const unsigned char *tail = t->block + TU_CANARY_BYTES + t->data_bytes;
    for (int i = 0; i < TU_CANARY_BYTES; i++) {
        if (t->block[i] != TU_CANARY_BYTE || tail[i] != TU_CANARY_BYTE) {
            fprintf(stderr, "canary around '%s' overwritten (%s guard, byte %d)\n", name,
                    t->block[i] != TU_CANARY_BYTE ? "front" : "back", i);
            return false;
        }
    }
    return true;
}

bool tu_tensor_untouched(const tu_tensor *t, unsigned char byte)
{
    const unsigned char *p = t->view.data;
    for (size_t i = 0; i < t->data_bytes; i++)
        if (p[i] != byte) return false;
    return true;
}

double tu_max_abs(const double *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

tu_compare_result tu_compare(const char *label, const double *actual, const double *expected, int64_t n,
                             tu_tolerance tol, const int64_t *shape, int rank, const char *repro)
{
    tu_compare_result r = {.pass = true, .n = n, .worst = -1};
    double worst_excess = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double a = actual[i], e = expected[i];
        if (isnan(a) || isnan(e)) {
            if (isnan(a) && isnan(e)) continue;
            r.n_nan++;
            r.n_fail++;
            if (worst_excess < INFINITY) worst_excess = INFINITY, r.worst = i;
            continue;
        }
        double diff = fabs(a - e), limit = tol.atol + tol.rtol * fabs(e);
        if (a == e) diff = 0.0; /* equal infinities */
        if (diff > r.max_abs) r.max_abs = diff;
        if (e != 0.0 && diff / fabs(e) > r.max_rel) r.max_rel = diff / fabs(e);
        if (diff > limit) r.n_fail++;
        if (diff - limit > worst_excess) worst_excess = diff - limit, r.worst = i;
    }
    r.pass = r.n_fail == 0;
    if (r.worst >= 0) {
        r.worst_actual = actual[r.worst];
        r.worst_expected = expected[r.worst];
        r.limit_at_worst = tol.atol + tol.rtol * fabs(expected[r.worst]);
    }
    if (!r.pass) {
        char coord[128] = "";
        int64_t rem = r.worst;
        size_t used = 0;
        if (shape && rank > 0) {
            int64_t idx[ATTNOPS_MAX_RANK];
            for (int d = rank - 1; d >= 0; d--) idx[d] = rem % shape[d], rem /= shape[d];
            used += (size_t)snprintf(coord + used, sizeof coord - used, "[");
            for (int d = 0; d < rank && used < sizeof coord; d++)
                used += (size_t)snprintf(coord + used, sizeof coord - used, d ? ",%lld" : "%lld", (long long)idx[d]);
            if (used < sizeof coord) snprintf(coord + used, sizeof coord - used, "]");
        }
        fprintf(stderr,
                "MISMATCH %s: %lld of %lld elements out of tolerance (%lld NaN); max abs %.3g, max rel %.3g; "
                "worst at %s flat %lld: got %.9g expected %.9g limit %.3g (rtol %.3g atol %.3g)%s%s\n",
                label, (long long)r.n_fail, (long long)n, (long long)r.n_nan, r.max_abs, r.max_rel, coord,
                (long long)r.worst, r.worst_actual, r.worst_expected, r.limit_at_worst, tol.rtol, tol.atol,
                repro ? "\n  reproduce: " : "", repro ? repro : "");
    }
    return r;
}

tu_compare_result tu_compare_dual(const char *label, const double *actual, const double *expected, int64_t n)
{
    const cmp_options o = {.rule = CMP_DUAL};
    const cmp_verdict v = cmp_compare(&o, actual, expected, NULL, n);
    tu_compare_result r = {.pass = v.pass, .n = n, .n_fail = v.n_fail, .n_nan = v.n_nan, .worst = v.worst,
                           .max_abs = v.max_abs, .max_rel = v.max_rel};
    if (!v.pass) cmp_print(stderr, label, &v, actual, expected, NULL, 0);
    return r;
}

double tu_unit_roundoff(attnops_dtype dtype)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F16: return 0x1p-11;
    case ATTNOPS_DTYPE_BF16: return 0x1p-8;
    case ATTNOPS_DTYPE_F8_E4M3FN: return 0x1p-4;
    case ATTNOPS_DTYPE_F8_E5M2: return 0x1p-3;
    default: return 0x1p-24;
    }
}

tu_tolerance tu_attention_tolerance(attnops_dtype out_dtype, attnops_dtype gemm_dtype, int64_t reduce_len,
                                    double scale)
{
    double u_out = tu_unit_roundoff(out_dtype), u_gemm = tu_unit_roundoff(gemm_dtype);
    double u_acc = 0x1p-24 * sqrt((double)(reduce_len > 1 ? reduce_len : 1));
    return (tu_tolerance){2.0 * u_out, 8.0 * (u_gemm + u_acc) * scale};
}

double tu_status_bytes(const char *key)
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

double tu_rss_mark(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return NAN;
    const int ok = fputs("5", f) >= 0;
    if (fclose(f) != 0 || !ok) return NAN;
    return tu_status_bytes("VmRSS");
}
