#include "compare.h"

#include <math.h>
#include <string.h>

static const char *const RULE_NAMES[CMP_RULE_COUNT] = {"dual",     "triple",     "isclose",
                                                       "allclose", "thousandth", "ten-thousandth"};

const char *cmp_rule_name(cmp_rule rule) { return rule >= 0 && rule < CMP_RULE_COUNT ? RULE_NAMES[rule] : "?"; }

bool cmp_rule_parse(const char *name, cmp_rule *rule)
{
    for (int r = 0; r < CMP_RULE_COUNT; r++)
        if (name && !strcmp(name, RULE_NAMES[r])) return *rule = (cmp_rule)r, true;
    return false;
}

static void add_metric(cmp_verdict *v, const char *name, double value, double limit, bool at_least)
{
    if (v->n_metrics < CMP_MAX_METRICS) v->metric[v->n_metrics++] = (cmp_metric){name, value, limit, at_least};
}

static bool metrics_hold(const cmp_verdict *v)
{
    for (int i = 0; i < v->n_metrics; i++) {
        const cmp_metric *m = &v->metric[i];
        if (!(m->at_least ? m->value >= m->limit : m->value <= m->limit)) return false; /* NaN fails */
    }
    return true;
}

/* The element test of a per-element rule: a and e finite or equal. */
typedef struct element_rule {
    cmp_rule rule;
    double rtol, atol, floor_abs;
} element_rule;

/* The largest |a - e| a per-element rule allows at (a, e). */
static double element_limit(const element_rule *r, double a, double e)
{
    switch (r->rule) {
    case CMP_DUAL: return fmax(0.005 * fmax(fabs(a), fabs(e)), r->floor_abs);
    case CMP_ISCLOSE:
    case CMP_ALLCLOSE: return r->atol + r->rtol * fabs(e);
    case CMP_THOUSANDTH:
    case CMP_TEN_THOUSANDTH: return r->rtol * fabs(e);
    default: return NAN; /* triple judges whole tensors */
    }
}

/* One pass over the counted elements: counts, max errors, the worst
 * element, and the non-finite actual values where the golden is finite. */
static cmp_verdict scan(const cmp_options *o, const element_rule *r, const double *actual, const double *expected,
                        int64_t n, int64_t *nonfinite)
{
    cmp_verdict v = {.rule = o->rule, .pass = true, .n = n, .worst = -1};
    double worst_diff = 0.0; /* equal tensors have no worst element */
    *nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        if (o->counted && !o->counted[i]) continue;
        v.counted++;
        const double a = actual[i], e = expected[i];
        if (!isfinite(a) && isfinite(e)) ++*nonfinite;
        if (isnan(a) || isnan(e)) {
            if (isnan(a) && isnan(e)) continue; /* equal_nan */
            v.n_nan++, v.n_fail++;
            if (worst_diff < INFINITY) worst_diff = INFINITY, v.worst = i;
            continue;
        }
        const double diff = a == e ? 0.0 : fabs(a - e); /* equal infinities differ by 0 */
        if (diff > v.max_abs) v.max_abs = diff;
        if (e != 0.0 && diff / fabs(e) > v.max_rel) v.max_rel = diff / fabs(e);
        if (diff > worst_diff) worst_diff = diff, v.worst = i;
        if (r && !(diff <= element_limit(r, a, e))) v.n_fail++;
    }
    return v;
}

/* The seed's triple rule for one chain x against the golden g. */
typedef struct triple_metrics {
    double mare, mere, rmse;
    int64_t small_errors;
} triple_metrics;

static triple_metrics triple_of(const cmp_options *o, const double *x, const double *g, int64_t n, double small_thr,
                                double small_err)
{
    triple_metrics t = {0};
    double sum_rel = 0.0, sum_sq = 0.0;
    int64_t large = 0;
    for (int64_t i = 0; i < n; i++) {
        if (o->counted && !o->counted[i]) continue;
        const double d = fabs(x[i] - g[i]);
        if (fabs(g[i]) < small_thr) { /* small values: an absolute count (a NaN in x counts) */
            t.small_errors += !(d <= small_err);
            continue;
        }
        const double rel = d / (fabs(g[i]) + 1e-7);
        t.mare = large == 0 || rel > t.mare || isnan(rel) ? rel : t.mare;
        sum_rel += rel, sum_sq += d * d, large++;
    }
    if (large) t.mere = sum_rel / (double)large, t.rmse = sqrt(sum_sq / (double)large);
    return t;
}

/* actual / benchmark as the seed's precision_compare_triple takes it. */
static double triple_ratio(double actual, double bench, double small_thr)
{
    if (!isfinite(bench)) return 1.0;
    if (!isfinite(actual)) return 1000.0;
    return actual / fmax(bench, small_thr);
}

static void triple_thresholds(attnops_dtype d, double *small_thr, double *small_err)
{
    switch (d) {
    case ATTNOPS_DTYPE_F16: *small_thr = 0x1p-11, *small_err = 0x1p-16; break;
    case ATTNOPS_DTYPE_BF16: *small_thr = 0x1p-8, *small_err = 0x1p-16; break;
    default: *small_thr = 0x1p-14, *small_err = 0x1p-30; break; /* f32: what the seed applies in effect */
    }
}

/* The rule's element test with its defaults filled in; *share_needed: the
 * share of passing elements a share rule requires. */
static element_rule rule_of(const cmp_options *o, double *share_needed)
{
    element_rule r = {o->rule, o->rtol, o->atol, 0.0};
    const bool defaults = o->rtol == 0.0 && o->atol == 0.0;
    *share_needed = 0.0;
    switch (o->rule) {
    case CMP_DUAL: /* 2.5e-5 in fp16 = 419 * 2^-24 = 2.4974346160888672e-05 (numpy agrees; spec 7.3's
                    * 2.5033950805664062e-05 is 420 * 2^-24, a slip) */
        r.floor_abs = attnops_f16_to_f32(attnops_f32_to_f16(0.000025f));
        break;
    case CMP_ISCLOSE:
        if (defaults) r.rtol = 0.0078125, r.atol = 1e-4;
        *share_needed = o->min_share > 0.0 ? o->min_share : 0.995;
        break;
    case CMP_ALLCLOSE:
        if (defaults) r.rtol = 1e-2, r.atol = 2e-2;
        break;
    case CMP_THOUSANDTH: r.rtol = 1e-3, *share_needed = 0.999; break;
    case CMP_TEN_THOUSANDTH: r.rtol = 1e-4, *share_needed = 0.9999; break;
    default: break;
    }
    return r;
}

double cmp_element_limit(const cmp_options *o, double a, double e)
{
    double share;
    const element_rule r = rule_of(o, &share);
    return element_limit(&r, a, e);
}

cmp_verdict cmp_compare(const cmp_options *o, const double *actual, const double *expected, const double *bench,
                        int64_t n)
{
    double share_needed;
    const element_rule r = rule_of(o, &share_needed);
    int64_t nonfinite;
    cmp_verdict v = scan(o, o->rule == CMP_TRIPLE ? NULL : &r, actual, expected, n, &nonfinite);
    const double counted = v.counted > 0 ? (double)v.counted : 1.0;
    switch (o->rule) {
    case CMP_DUAL:
        add_metric(&v, "fail_ratio", (double)v.n_fail / counted, 0.005, false);
        add_metric(&v, "max_abs_diff", v.n_nan ? NAN : v.max_abs, 0.1, false);
        break;
    case CMP_ISCLOSE:
    case CMP_THOUSANDTH:
    case CMP_TEN_THOUSANDTH:
        add_metric(&v, "pass_share", 1.0 - (double)v.n_fail / counted, share_needed, true);
        if (o->rule == CMP_ISCLOSE) add_metric(&v, "non_finite", (double)nonfinite, 0.0, false);
        break;
    case CMP_ALLCLOSE: add_metric(&v, "fail_count", (double)v.n_fail, 0.0, false); break;
    case CMP_TRIPLE: {
        double small_thr, small_err;
        triple_thresholds(o->dtype, &small_thr, &small_err);
        const triple_metrics k = triple_of(o, actual, expected, n, small_thr, small_err);
        const triple_metrics b = bench ? triple_of(o, bench, expected, n, small_thr, small_err) : k;
        add_metric(&v, "mare_ratio", triple_ratio(k.mare, b.mare, small_thr), 2.0, false);
        add_metric(&v, "mere_ratio", triple_ratio(k.mere, b.mere, small_thr), 1.2, false);
        add_metric(&v, "rmse_ratio", triple_ratio(k.rmse, b.rmse, small_thr), 1.2, false);
        add_metric(&v, "small_value_ratio",
                   (double)k.small_errors / (double)(b.small_errors > 0 ? b.small_errors : 1), 2.0, false);
        add_metric(&v, "mare", k.mare, INFINITY, false);
        add_metric(&v, "mere", k.mere, INFINITY, false);
        add_metric(&v, "rmse", k.rmse, INFINITY, false);
        if (!bench) v.pass = false; /* the rule needs a benchmark chain */
        break;
    }
    default: v.pass = false; break;
    }
    v.pass = v.pass && metrics_hold(&v);
    return v;
}

void cmp_print(FILE *f, const char *label, const cmp_verdict *v, const double *actual, const double *expected,
               const int64_t *shape, int rank)
{
    fprintf(f, "%s %s [%s]", v->pass ? "PASS" : "FAIL", label, cmp_rule_name(v->rule));
    for (int i = 0; i < v->n_metrics; i++) {
        const cmp_metric *m = &v->metric[i];
        if (isinf(m->limit)) fprintf(f, " %s %.4g", m->name, m->value);
        else fprintf(f, " %s %.4g (%s %.4g)", m->name, m->value, m->at_least ? ">=" : "<=", m->limit);
    }
    fprintf(f, "; %lld of %lld counted elements off (%lld NaN); max abs %.3g, max rel %.3g", (long long)v->n_fail,
            (long long)v->counted, (long long)v->n_nan, v->max_abs, v->max_rel);
    if (v->worst >= 0) {
        fprintf(f, "; worst at ");
        if (shape && rank > 0) {
            int64_t idx[ATTNOPS_MAX_RANK], rem = v->worst;
            for (int d = rank - 1; d >= 0; d--) idx[d] = rem % shape[d], rem /= shape[d];
            for (int d = 0; d < rank; d++) fprintf(f, d ? ",%lld" : "[%lld", (long long)idx[d]);
            fputc(']', f);
        } else {
            fprintf(f, "flat %lld", (long long)v->worst);
        }
        fprintf(f, ": got %.9g expected %.9g", actual[v->worst], expected[v->worst]);
    }
    fputc('\n', f);
}
