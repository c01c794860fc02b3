/* What the harness and the tests share: seeded random data, tensors with
 * canary guards, the one comparator, the dtype-derived tolerances and the
 * failure counter.  The CLI ships with it (attnops_verify); the pieces only
 * test programs need are in tests/support.  No test carries its own
 * comparator. */
#ifndef ATTNOPS_TESTUTIL_H
#define ATTNOPS_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "attnops.h"

/* ---- random numbers (splitmix64; reproducible from the printed seed) ---- */
typedef struct tu_rng {
    uint64_t state;
} tu_rng;

/* The suite seed: $ATTNOPS_TEST_SEED or a fixed default; printed on failure. */
uint64_t tu_suite_seed(void);
tu_rng tu_rng_make(uint64_t seed);
uint64_t tu_next(tu_rng *r);
double tu_uniform(tu_rng *r); /* [0, 1) */
double tu_randn(tu_rng *r);
int64_t tu_pick(tu_rng *r, const int64_t *choices, int n);

/* ---- tensors owning their memory, with canary bytes around the data ---- */
typedef struct tu_tensor {
    attnops_tensor view;
    unsigned char *block; /* canary | data | canary */
    size_t data_bytes;
} tu_tensor;

#define TU_CANARY_BYTES 64
#define TU_CANARY_BYTE 0xA5

/* A tensor of `shape`.  With `pad` > 0 the innermost extent is stored with
 * `pad` extra elements of row padding, so the view is non-contiguous. */
tu_tensor tu_tensor_new(attnops_dtype dtype, int rank, const int64_t *shape, int64_t pad);
/* (Tests and the CLI cannot go on without it: a size that overflows or
 * memory that cannot be had prints one line and exits with status 2.) */
void tu_tensor_free(tu_tensor *t);
/* Fills every byte of the storage (padding included) with `byte`. */
void tu_tensor_poison(tu_tensor *t, unsigned char byte);
/* Standard-normal values times `scale`, rounded to the dtype. */
void tu_tensor_randn(tu_tensor *t, tu_rng *r, double scale);
/* Copies the logical elements (row-major over the shape) into doubles. */
void tu_tensor_to_f64(const tu_tensor *t, double *out);
void tu_view_to_f64(const attnops_tensor *v, double *out); /* any view, e.g. one over part of a tensor */
void tu_tensor_from_f64(tu_tensor *t, const double *in);
/* One element through the dtype's traits: widened exactly, or rounded once. */
static inline double tu_load_f64(const void *p, attnops_dtype dtype)
{
    double x;
    attnops_dtype_traits_of(dtype)->to_f64(p, &x, 1);
    return x;
}
static inline void tu_store_f64(void *p, attnops_dtype dtype, double x)
{
    attnops_dtype_traits_of(dtype)->from_f64(&x, p, 1);
}
/* True when the canaries are intact; prints what broke otherwise. */
bool tu_canaries_ok(const tu_tensor *t, const char *name);
/* True when the storage is byte-for-byte `byte` (nothing was written). */
bool tu_tensor_untouched(const tu_tensor *t, unsigned char byte);
int64_t tu_numel(const attnops_tensor *t);

/* /proc/self/status's `key` (VmRSS, VmHWM) in bytes; NAN when unreadable. */
double tu_status_bytes(const char *key);
/* The peak RSS over a call: tu_rss_mark resets VmHWM to the current VmRSS
 * (writing 5 to /proc/self/clear_refs) and returns it, NAN when it cannot;
 * after the call, tu_status_bytes("VmHWM") minus that is the rise, whatever
 * peak the process reached before.  Bytes. */
double tu_rss_mark(void);

/* Runs an operator's second phase, run(args, workspace, bytes), with a
 * `bytes` workspace guarded by canaries; a broken canary is a TU_CHECK
 * failure naming `what`.  Returns run's status. */
attnops_status tu_run_with_workspace(attnops_status (*run)(const void *, void *, size_t), const void *args,
                                     size_t bytes, const char *what);

/* ---- the comparator ---- */
typedef struct tu_tolerance {
    double rtol; /* relative to |expected| */
    double atol; /* absolute */
} tu_tolerance;

typedef struct tu_compare_result {
    bool pass;
    int64_t n, n_fail, n_nan, worst;
    double max_abs, max_rel, worst_actual, worst_expected, limit_at_worst;
} tu_compare_result;

/* Element i passes when |a - e| <= atol + rtol |e|.  Any NaN in `actual`
 * fails unless `expected` is NaN at the same place.  On failure prints one
 * line with the label, the counts, the worst element and its coordinates in
 * `shape` (row-major), and the reproduce line (`repro`, may be NULL). */
tu_compare_result tu_compare(const char *label, const double *actual, const double *expected, int64_t n,
                             tu_tolerance tol, const int64_t *shape, int rank, const char *repro);

/* The seed's FAG verdict (rule `dual` of verify/compare.h): the tensor
 * passes when at most 0.5 % of its elements are off by more than
 * max(0.005 max(|a|, |e|), 2.5e-5 in fp16) and max |a - e| <= 0.1.  Prints
 * one line on failure. */
tu_compare_result tu_compare_dual(const char *label, const double *actual, const double *expected, int64_t n);

/* Unit roundoff of a floating dtype: 2^-24 f32, 2^-11 f16, 2^-8 bf16. */
double tu_unit_roundoff(attnops_dtype dtype);

/* Tolerance for an attention output or gradient computed in fp32 (operands
 * of `gemm_dtype` precision: bf16 for bf16 inputs, f32 otherwise) against the
 * double golden, both rounded to `out_dtype`:
 *   rtol = 2 u_out                      (each side rounded once)
 *   atol = 8 (u_gemm + u_f32 sqrt(K)) * scale
 * K = the longest reduction (max of S1, S2, D); scale = max |expected|, since
 * attention gradients cancel and their error follows the magnitude of the
 * terms, not of each result. */
tu_tolerance tu_attention_tolerance(attnops_dtype out_dtype, attnops_dtype gemm_dtype, int64_t reduce_len,
                                    double scale);

double tu_max_abs(const double *x, int64_t n);

/* ---- checks ---- */
extern _Atomic int tu_failures;
#define TU_CHECK(cond, ...)                                                                                        \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            tu_failures++;                                                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                   \
            fprintf(stderr, __VA_ARGS__);                                                                          \
            fputc('\n', stderr);                                                                                   \
        }                                                                                                          \
    } while (0)

#endif
