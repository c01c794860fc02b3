/* Reading a libFuzzer input as a stream of choices, and tensors sized
 * exactly to their views (so AddressSanitizer sees any access outside a
 * view), for the operator targets.  An exhausted input reads as zeros.
 * At most one read per expression where C leaves the order open, so an
 * input means the same call under gcc (the replay tests) and clang (the
 * fuzzer). */
#ifndef ATTNOPS_FUZZ_INPUT_H
#define ATTNOPS_FUZZ_INPUT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnops.h"

/* The oracle's own loops (comparing outputs, looking for NaN) are not the
 * code under test: clang leaves them without coverage instrumentation,
 * which otherwise traced every element's compare.  (gcc builds these files
 * for the corpus replays only, without coverage.) */
#ifdef __clang__
#define FZ_ORACLE __attribute__((no_sanitize("coverage")))
#else
#define FZ_ORACLE
#endif

typedef struct fz {
    const uint8_t *p;
    size_t n;
    uint64_t fill; /* xorshift state for the data itself */
} fz;

static inline uint8_t fz_u8(fz *f)
{
    if (!f->n) return 0;
    f->n--;
    return *f->p++;
}

/* An integer in [lo, hi] (hi - lo < 2^16). */
static inline int64_t fz_range(fz *f, int64_t lo, int64_t hi)
{
    const uint32_t lo8 = fz_u8(f), hi8 = fz_u8(f); /* one read per statement: the order is the same for every compiler */
    const uint32_t x = lo8 | hi8 << 8;
    return lo + (int64_t)(x % (uint32_t)(hi - lo + 1));
}

/* True with probability about 1 / k. */
static inline bool fz_one_in(fz *f, int k) { return fz_u8(f) % k == 0; }

static inline int64_t fz_i64(fz *f)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) x |= (uint64_t)fz_u8(f) << (8 * i);
    return (int64_t)x;
}

/* Mostly a value from `usual`, sometimes one of the edges (0, -1, the
 * extremes, NaN and infinities for doubles), sometimes 8 raw bytes. */
static inline int64_t fz_pick_i64(fz *f, const int64_t *usual, int n)
{
    static const int64_t edges[] = {0, -1, 1, INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1, INT64_MAX, INT64_MIN};
    const uint8_t how = fz_u8(f);
    if (how < 200) return usual[how % n];
    if (how < 240) return edges[how % (sizeof edges / sizeof edges[0])];
    return fz_i64(f);
}

static inline double fz_pick_f64(fz *f, const double *usual, int n)
{
    static const double edges[] = {0.0, -1.0, 1e300, -1e-300, INFINITY, -INFINITY, NAN, 0.5};
    const uint8_t how = fz_u8(f);
    if (how < 200) return usual[how % n];
    if (how < 240) return edges[how % (sizeof edges / sizeof edges[0])];
    int64_t bits = fz_i64(f);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static inline uint64_t fz_next(fz *f)
{
    f->fill ^= f->fill << 13, f->fill ^= f->fill >> 7, f->fill ^= f->fill << 17;
    return f->fill;
}

/* ---- tensors ----------------------------------------------------------------- */
/* Data: copies from a fixed block of small values at an input-chosen
 * offset (a per-element loop here would be instrumented and dominate the
 * run).  Bytes 0x00..0x3f make small positive numbers in every 16- and
 * 8-bit float dtype; f32 tensors get values in [-2, 2]; masks get 0 / 1
 * mixes either way. */
enum { FZ_NOISE = 1 << 16 };

static inline void fz_fill(fz *f, unsigned char *mem, size_t bytes, attnops_dtype dtype)
{
    static unsigned char noise[2 * FZ_NOISE];
    static float noise_f32[FZ_NOISE / 2];
    static bool ready;
    if (!ready) {
        uint64_t x = 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < sizeof noise; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, noise[i] = (unsigned char)(x & 0x3f);
        for (size_t i = 0; i < FZ_NOISE / 2; i++) noise_f32[i] = (float)((int)(noise[i] | noise[i + 1] << 6) % 2001 - 1000) / 500.0f;
        ready = true;
    }
    const unsigned char *src = dtype == ATTNOPS_DTYPE_F32 ? (const unsigned char *)noise_f32 : noise;
    const size_t span = dtype == ATTNOPS_DTYPE_F32 ? sizeof noise_f32 : FZ_NOISE;
    for (size_t done = 0; done < bytes;) {
        const size_t at = (size_t)(fz_next(f) % (span / 4)) * 4, n = bytes - done < span - at ? bytes - done : span - at;
        memcpy(mem + done, src + at, n);
        done += n;
    }
}

enum { FZ_MAX_TENSORS = 48, FZ_TENSOR_CAP = 4 << 20 };

typedef struct fz_tensor {
    attnops_tensor view;
    unsigned char *mem; /* exactly the bytes the view can touch (at least 1) */
    size_t bytes;
} fz_tensor;

typedef struct fz_pool {
    fz_tensor t[FZ_MAX_TENSORS];
    int n;
    bool too_big; /* a view needed more than FZ_TENSOR_CAP: the input is skipped */
} fz_pool;

static inline size_t fz_dtype_size(attnops_dtype d)
{
    const size_t s = attnops_dtype_size(d);
    return s ? s : 1;
}

/* A view of `shape` in `dtype` with row-major strides (sometimes padded,
 * sometimes perturbed: a dim, the rank, the dtype, a stride), its memory
 * exactly the extent, filled with small values.  NULL: no tensor. */
static inline const attnops_tensor *fz_tensor_new(fz *f, fz_pool *pool, attnops_dtype dtype, int rank,
                                                  const int64_t *shape, bool perturb)
{
    if (pool->n == FZ_MAX_TENSORS || pool->too_big) return NULL;
    fz_tensor *t = &pool->t[pool->n];
    memset(t, 0, sizeof *t);
    attnops_tensor *v = &t->view;
    v->dtype = dtype, v->rank = rank;
    /* the rank asked for may itself come from a perturbed view */
    const int r0 = rank < 0 ? 0 : rank > ATTNOPS_MAX_RANK ? ATTNOPS_MAX_RANK : rank;
    for (int i = 0; i < r0; i++) v->shape[i] = shape[i];
    if (perturb && fz_one_in(f, 24)) {
        switch (fz_u8(f) % 4) {
        case 0: v->rank = (int32_t)fz_range(f, -1, ATTNOPS_MAX_RANK + 1); break;
        case 1:
            if (r0 > 0) {
                const int64_t d = fz_range(f, 0, r0 - 1);
                v->shape[d] = fz_range(f, -2, 12);
            }
            break;
        case 2: v->dtype = (attnops_dtype)fz_range(f, 0, 11); break;
        default: break; /* a stride, below */
        }
    }
    const int r = v->rank < 0 ? 0 : v->rank > ATTNOPS_MAX_RANK ? ATTNOPS_MAX_RANK : v->rank;
    const int64_t pad = fz_one_in(f, 6) ? fz_range(f, 1, 3) : 0;
    int64_t stride = 1, extent = 1;
    bool empty = false;
    for (int i = r - 1; i >= 0; i--) {
        v->strides[i] = stride;
        const int64_t dim = v->shape[i] + (i == r - 1 ? pad : 0);
        empty |= v->shape[i] <= 0;
        if (dim > 0 && stride > FZ_TENSOR_CAP / dim) pool->too_big = true;
        stride *= dim > 0 ? dim : 1;
    }
    if (perturb && r && fz_one_in(f, 24)) {
        const int64_t d = fz_range(f, 0, r - 1);
        v->strides[d] = fz_range(f, -3, 40);
    }
    for (int i = 0; i < r && !empty; i++) { /* the last element's offset + 1 */
        if (v->strides[i] < 0) continue;   /* refused by the library; sized as if 0 */
        if (v->shape[i] > 0 && v->strides[i] > (int64_t)FZ_TENSOR_CAP / v->shape[i]) pool->too_big = true;
        extent += (v->shape[i] - 1) * v->strides[i];
    }
    if (pool->too_big || extent > FZ_TENSOR_CAP) return pool->too_big = true, NULL;
    t->bytes = (empty ? 1 : (size_t)extent) * fz_dtype_size(v->dtype);
    if (t->bytes > FZ_TENSOR_CAP) return pool->too_big = true, NULL;
    t->mem = malloc(t->bytes);
    v->data = t->mem;
    pool->n++;
    fz_fill(f, t->mem, t->bytes, dtype);
    if (perturb && fz_one_in(f, 40)) return NULL;
    return v;
}

/* An integer vector [n] (i64, sometimes i32) of the given values. */
static inline const attnops_tensor *fz_ints(fz *f, fz_pool *pool, const int64_t *values, int64_t n)
{
    const bool i32 = fz_one_in(f, 4);
    const attnops_tensor *v = fz_tensor_new(f, pool, i32 ? ATTNOPS_DTYPE_I32 : ATTNOPS_DTYPE_I64, 1, &n, true);
    if (!v || v->dtype != (i32 ? ATTNOPS_DTYPE_I32 : ATTNOPS_DTYPE_I64) || v->rank != 1 || v->strides[0] < 0)
        return v;
    for (int64_t i = 0; i < n && i < v->shape[0]; i++) {
        const int64_t x = values[i];
        if (i32) {
            const int32_t y = (int32_t)x;
            memcpy((char *)v->data + (size_t)(i * v->strides[0]) * 4, &y, 4);
        } else {
            memcpy((char *)v->data + (size_t)(i * v->strides[0]) * 8, &x, 8);
        }
    }
    return v;
}

/* Poisons the tensors from `first` on (the outputs), to see what a call wrote. */
static inline void fz_poison(fz_pool *pool, int first)
{
    for (int i = first; i < pool->n; i++) memset(pool->t[i].mem, 0xC3, pool->t[i].bytes);
}

/* True when no byte of the tensors from `first` on changed since fz_poison. */
FZ_ORACLE static inline bool fz_untouched(const fz_pool *pool, int first)
{
    for (int i = first; i < pool->n; i++)
        for (size_t b = 0; b < pool->t[i].bytes; b++)
            if (pool->t[i].mem[b] != 0xC3) return false;
    return true;
}

/* Element e (row-major) of an f32 / bf16 / f16 view as a float; NaN for
 * another dtype. */
FZ_ORACLE static inline float fz_element(const attnops_tensor *t, int64_t e)
{
    int64_t off = 0;
    for (int i = t->rank - 1; i >= 0; i--) off += e % t->shape[i] * t->strides[i], e /= t->shape[i];
    float x = NAN;
    if (t->dtype == ATTNOPS_DTYPE_F32) memcpy(&x, (const float *)t->data + off, 4);
    else if (t->dtype == ATTNOPS_DTYPE_BF16) x = attnops_bf16_to_f32(((const uint16_t *)t->data)[off]);
    else if (t->dtype == ATTNOPS_DTYPE_F16) x = attnops_f16_to_f32(((const uint16_t *)t->data)[off]);
    return x;
}

/* The row-major index of the first NaN or infinity of an f32 / bf16 / f16
 * view that nothing explains (its value in *value), -1 when there is none
 * (or the dtype is another).  Explained: with inf_ok, any infinity (the
 * view is the reference's answer: it computes in double and rounds once,
 * so an infinity is the true value overflowing the dtype); with `golden`
 * (the reference's answer to the same call, same shape), an infinity where
 * the golden has the same one or is within a factor 2 of the dtype's
 * largest value (whether f32 arithmetic crosses it there is a matter of the
 * last bits).  A NaN is never explained. */
FZ_ORACLE static inline int64_t fz_first_nonfinite(const attnops_tensor *t, const attnops_tensor *golden, bool inf_ok,
                                                   float *value)
{
    if (!t || (t->dtype != ATTNOPS_DTYPE_F32 && t->dtype != ATTNOPS_DTYPE_BF16 && t->dtype != ATTNOPS_DTYPE_F16))
        return -1;
    const float largest = t->dtype == ATTNOPS_DTYPE_F16 ? 65504.0f : t->dtype == ATTNOPS_DTYPE_BF16 ? 3.3895314e38f
                                                                                                  : 3.4028235e38f;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    for (int64_t e = 0; e < n; e++) {
        const float x = fz_element(t, e);
        if (isfinite(x)) continue;
        bool explained = isinf(x) && inf_ok;
        if (isinf(x) && golden) {
            const float g = fz_element(golden, e);
            explained |= g == x || (isfinite(g) && fabsf(g) >= largest / 2 && signbit(g) == signbit(x));
        }
        if (!explained) return *value = x, e;
    }
    return -1;
}

/* True (after printing which element, its value, the reference's and the
 * call `described`) when `t` has a NaN or infinity that fz_first_nonfinite
 * does not explain. */
static inline bool fz_unexplained_nonfinite(const attnops_tensor *t, const attnops_tensor *golden, bool inf_ok,
                                            const char *what, const char *described)
{
    float x;
    const int64_t e = fz_first_nonfinite(t, golden, inf_ok, &x);
    if (e < 0) return false;
    fprintf(stderr, "a successful call left %s[%lld] = %g (the reference: %g)\n  %s\n", what, (long long)e, x,
            golden ? fz_element(golden, e) : x, described);
    return true;
}

/* Whether any of the n views has a NaN or an infinity: the targets scan
 * once, and only then ask the reference and explain each one. */
static inline bool fz_any_nonfinite(const attnops_tensor *const *views, int64_t n)
{
    float x;
    for (int64_t i = 0; i < n; i++)
        if (fz_first_nonfinite(views[i], NULL, false, &x) >= 0) return true;
    return false;
}

/* The reference refused a call the subject accepted: a contract broken. */
static inline void fz_reference_refused(const char *described)
{
    fprintf(stderr, "the reference refused a call the kernel took\n  %s\n", described);
    abort();
}

/* A tensor with v's view (shape, strides, extent) in fresh memory of
 * `into`, for a second implementation's answer to the same call; NULL
 * when v is NULL or not a tensor of `from`. */
static inline const attnops_tensor *fz_tensor_like(fz_pool *into, const fz_pool *from, const attnops_tensor *v)
{
    for (int i = 0; v && i < from->n && into->n < FZ_MAX_TENSORS; i++) {
        if (&from->t[i].view != v) continue;
        fz_tensor *t = &into->t[into->n++];
        t->bytes = from->t[i].bytes;
        t->mem = malloc(t->bytes);
        t->view = *v;
        t->view.data = t->mem;
        return &t->view;
    }
    return NULL;
}

static inline void fz_pool_free(fz_pool *pool)
{
    for (int i = 0; i < pool->n; i++) free(pool->t[i].mem);
    pool->n = 0;
}

/* The contract every operator call keeps (include/attnops.h): a documented
 * status; a sentence exactly when it failed; on failure no output byte
 * written.  A broken promise aborts, which libFuzzer reports as a crash. */
static inline void fz_check_status(const char *op, attnops_status st, const fz_pool *pool, int first_output)
{
    const char *why = attnops_last_error();
    const bool known = st == ATTNOPS_SUCCESS || st == ATTNOPS_ERR_NULLPTR || st == ATTNOPS_ERR_PARAM_INVALID ||
                       st == ATTNOPS_ERR_UNSUPPORTED || st == ATTNOPS_ERR_OUT_OF_MEMORY;
    if (!known) fprintf(stderr, "%s: undocumented status %d (%s)\n", op, (int)st, why), abort();
    if ((st == ATTNOPS_SUCCESS) != (why[0] == '\0')) fprintf(stderr, "%s: status %d with sentence \"%s\"\n", op, (int)st, why), abort();
    if (st != ATTNOPS_SUCCESS && strncmp(why, op, strlen(op)) != 0)
        fprintf(stderr, "%s: the sentence does not name the op: \"%s\"\n", op, why), abort();
    if (st != ATTNOPS_SUCCESS && !fz_untouched(pool, first_output))
        fprintf(stderr, "%s: failed (%s) but wrote an output\n", op, why), abort();
}

/* After an accepted call: the output-shape query (attnops.h, attnops_output_shape) succeeded with status
 * `st` and gave `t`'s shape, each dimension it takes from query holding query's extent. */
static inline void fz_check_output_shape(const char *op, const char *name, attnops_status st,
                                         const attnops_output_shape *s, const attnops_tensor *t,
                                         const attnops_tensor *query)
{
    if (st != ATTNOPS_SUCCESS)
        fprintf(stderr, "%s: the call accepts its args, the shape query refuses them: %s\n", op,
                attnops_last_error()), abort();
    bool same = s->rank == t->rank;
    for (int i = 0; same && i < s->rank; i++)
        same = s->dims[i].extent == t->shape[i] &&
               (s->dims[i].query_dim < 0 || query->shape[s->dims[i].query_dim] == s->dims[i].extent);
    if (!same) fprintf(stderr, "%s: the shape query's %s differs from the one the call accepted\n", op, name), abort();
}

/* The workspace query `query(args, &bytes)`, then `run(args, ws, bytes)`
 * with an exactly sized workspace, the status in `st`; `skipped` (and no
 * run) when the workspace is too large for a fuzzing run, which proves
 * nothing either way.  (A macro: the ops' functions differ in their
 * argument types.) */
#define FZ_TWO_PHASE(query, run, args, st, skipped)                                                                   \
    do {                                                                                                             \
        size_t bytes_ = 0;                                                                                           \
        (st) = query((args), &bytes_);                                                                               \
        (skipped) = (st) == ATTNOPS_SUCCESS && bytes_ > ((size_t)256 << 20);                                        \
        void *ws_ = (st) == ATTNOPS_SUCCESS && !(skipped) && bytes_ ? malloc(bytes_) : NULL;                         \
        if ((st) == ATTNOPS_SUCCESS && !(skipped)) (st) = run((args), ws_, bytes_);                                  \
        free(ws_);                                                                                                   \
    } while (0)

#endif
