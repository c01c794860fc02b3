/* The comparison rules of the verification harness, in one module: how an
 * operator developer's outputs (actual) are judged against the golden
 * (expected), each rule as the seeds and their repositories define it,
 * made a real verdict.  Values arrive widened to double.
 *
 *   dual            the seed's FAG rule (spec flash-attention 7.3): element i fails when
 *                   |a - e| > max(0.005 max(|a|, |e|), 2.5e-5 rounded to fp16, which is
 *                   2.4974346160888672e-05, not the spec's 2.5034e-05); pass when at
 *                   most 0.5 % of the elements fail and max |a - e| <= 0.1
 *   triple          AttnRes (spec keypool-attnres-pypto B.3): MARE / MERE / RMSE of actual and
 *                   of a benchmark chain against the golden on the large elements, and the
 *                   count of small elements off by more than small_err; pass when the ratios
 *                   actual / benchmark are <= (2, 1.2, 1.2) and the count ratio <= 2
 *   isclose         KeyPool (spec A.6): torch.isclose(a, e, rtol, atol, equal_nan) per element,
 *                   pass when the close share of the counted elements is >= min_share (99.5 %)
 *                   and no counted actual value is non-finite where the golden is finite
 *   allclose        PyPTO FAG (spec C.5): numpy assert_allclose, |a - e| <= atol + rtol |e| on
 *                   every counted element (rtol 1e-2, atol 2e-2 by default)
 *   thousandth      CANN's "double thousandth": |a - e| <= 1e-3 |e| for at least 99.9 % of
 *   ten-thousandth  the elements (1e-4 and 99.99 %); a zero golden value needs an exact zero
 *
 * NaN: a NaN where the golden has one is equal (every rule); any other NaN
 * is a failing element (and fails dual outright, as a diff of NaN). */
#ifndef ATTNOPS_VERIFY_COMPARE_H
#define ATTNOPS_VERIFY_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "attnops.h"

typedef enum cmp_rule {
    CMP_DUAL,
    CMP_TRIPLE,
    CMP_ISCLOSE,
    CMP_ALLCLOSE,
    CMP_THOUSANDTH,
    CMP_TEN_THOUSANDTH,
    CMP_RULE_COUNT
} cmp_rule;

const char *cmp_rule_name(cmp_rule rule);
/* "dual", "triple", ...; false for an unknown name. */
bool cmp_rule_parse(const char *name, cmp_rule *rule);

typedef struct cmp_options {
    cmp_rule rule;
    double rtol, atol;      /* isclose / allclose; both 0: the rule's defaults */
    double min_share;       /* isclose: share of close elements required; 0: 0.995 */
    attnops_dtype dtype;    /* triple: whose small-value thresholds apply (f16, bf16, f32) */
    const uint8_t *counted; /* optional [n]: 1 = the element counts (e.g. valid rows only) */
} cmp_options;

#define CMP_MAX_METRICS 8

typedef struct cmp_metric {
    const char *name;
    double value, limit; /* the rule's figure and its bound */
    bool at_least;       /* pass needs value >= limit (shares); else value <= limit */
} cmp_metric;

typedef struct cmp_verdict {
    cmp_rule rule;
    bool pass;
    int64_t n, counted, n_fail, n_nan; /* n_fail: counted elements outside the rule's element test */
    double max_abs, max_rel;           /* over counted, comparable elements */
    int64_t worst;                     /* flat index of the largest |a - e| (a NaN mismatch first); -1: all equal */
    int n_metrics;
    cmp_metric metric[CMP_MAX_METRICS];
} cmp_verdict;

/* bench: the benchmark chain's values (triple only; NULL otherwise). */
cmp_verdict cmp_compare(const cmp_options *o, const double *actual, const double *expected, const double *bench,
                        int64_t n);

/* The largest |a - e| the rule's element test allows at (a, e); NaN for
 * triple, which judges whole tensors. */
double cmp_element_limit(const cmp_options *o, double a, double e);

/* One line: label, rule, verdict, metrics, fail count, max errors and the
 * worst element with its coordinates in `shape` (row-major; rank 0: flat). */
void cmp_print(FILE *f, const char *label, const cmp_verdict *v, const double *actual, const double *expected,
               const int64_t *shape, int rank);

#endif
