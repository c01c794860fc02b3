/* attnops compare: a device's outputs against an `attnops golden` export.
 *
 *   attnops compare --golden DIR --actual DIR [--bench DIR] [--rule RULE]
 *       Reads DIR/<case>/<output>.npy of the device (as numpy and ml_dtypes
 *       write them) and judges each against the golden by the case's rule
 *       (or RULE): one verdict line per output, exit 0 all pass, 1 a
 *       failure, 2 missing or malformed files.  The triple rule takes its
 *       benchmark chain from the export's "bench" tensors, or from --bench
 *       DIR (a device's own benchmark outputs, same relative paths as the
 *       outputs), which takes precedence.
 * The manifest and every file it names are untrusted (verify/manifest.h):
 * the paths stay inside the three directories and pass no symbolic link. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "harness_driver.h"
#include "manifest.h"
#include "npy.h"

/* DIR/rel as doubles (the .npy's own dtype, `hint` for a void descr); NULL
 * after a message. */
static double *load_values(const char *dir, const char *rel, attnops_dtype hint, npy_array *a)
{
    char path[1400], err[1600];
    if (manifest_path(dir, rel, path, sizeof path, err, sizeof err) != 0 ||
        npy_read(path, hint, a, err, sizeof err) != 0) {
        fprintf(stderr, "attnops compare: %s\n", err);
        return NULL;
    }
    size_t n = a->bytes / attnops_dtype_size(a->dtype);
    double *x = malloc(sizeof(double) * (n ? n : 1));
    if (!x) {
        fprintf(stderr, "attnops compare: out of memory for %s as doubles\n", path);
        free(a->data);
        a->data = NULL;
        return NULL;
    }
    attnops_dtype_traits_of(a->dtype)->to_f64(a->data, x, n);
    return x;
}

static bool same_shape(const npy_array *a, const npy_array *b)
{
    return a->rank == b->rank && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank);
}

/* The elements of output t that count: all (NULL) unless its entry names a
 * mask tensor (KeyPool's pooled_key: "counted": "valid_rows"), which the
 * case's operator driver reads.  NULL with *bad set after a message when
 * the mask cannot be read or does not fit `g`, the golden output. */
static uint8_t *counted_elements(const char *golden, const manifest_case *mc, const manifest_tensor *t,
                                 const npy_array *g, bool *bad)
{
    *bad = false;
    if (t->counted < 0) return NULL;
    const manifest_tensor *by = &mc->tensors[t->counted];
    const harness_driver *d = harness_driver_of(mc->op);
    *bad = true;
    if (!d->counted)
        return fprintf(stderr, "attnops compare: %s: operator %s has no counted masks\n", t->name, d->name), NULL;
    npy_array r;
    double *values = load_values(golden, by->file, 0, &r);
    if (!values) return NULL;
    const int64_t n = r.rank == 1 ? r.shape[0] : 0;
    uint8_t *mask = d->counted(values, n, g->rank, g->shape);
    if (!mask) fprintf(stderr, "attnops compare: %s/%s does not fit the shape of %s\n", golden, by->file, t->name);
    *bad = mask == NULL;
    free(values);
    free(r.data);
    return mask;
}

/* Output t's benchmark values for the triple rule, as doubles: from --bench
 * DIR (at the output's own relative path) or else the export's
 * bench_<output> tensor.  NULL after a message when there is neither, or it
 * does not load or has another shape than the golden `g`. */
static double *load_bench(const char *golden, const char *bench_dir, const manifest_case *mc,
                          const manifest_tensor *t, const npy_array *g)
{
    char key[HARNESS_NAME_MAX + 8];
    snprintf(key, sizeof key, "bench_%s", t->name);
    const int own = manifest_tensor_index(mc, key);
    if (!bench_dir && own < 0)
        return fprintf(stderr, "attnops compare: %s: the triple rule needs a benchmark chain; the export has no %s "
                               "and no --bench DIR was given\n", t->file, key), NULL;
    npy_array b;
    double *x = bench_dir ? load_values(bench_dir, t->file, t->dtype, &b)
                          : load_values(golden, mc->tensors[own].file, t->dtype, &b);
    if (x && !same_shape(&b, g)) {
        fprintf(stderr, "attnops compare: the benchmark %s: shape differs from the golden's\n", t->file);
        free(x), x = NULL;
    }
    free(b.data);
    return x;
}

/* One output: 0 judged (*failed set), 2 a file missing or malformed. */
static int compare_output(const char *golden, const char *actual, const char *bench, const manifest_case *mc,
                          const manifest_tensor *t, cmp_rule rule, bool *failed)
{
    npy_array ga, aa = {0};
    double *e = load_values(golden, t->file, t->dtype, &ga);
    double *a = e ? load_values(actual, t->file, t->dtype, &aa) : NULL;
    const bool triple = rule == CMP_TRIPLE;
    double *bm = a && triple ? load_bench(golden, bench, mc, t, &ga) : NULL;
    bool bad_mask = false;
    uint8_t *counted = a ? counted_elements(golden, mc, t, &ga, &bad_mask) : NULL;
    char label[2 * HARNESS_NAME_MAX + 4];
    snprintf(label, sizeof label, "%s %s", mc->name, t->name);
    int rc = 0;
    *failed = false;
    if (!e || !a || (triple && !bm) || bad_mask) {
        rc = 2;
    } else if (!same_shape(&aa, &ga)) {
        printf("FAIL %s: shape differs from the golden's\n", label);
        *failed = true;
    } else {
        const int64_t n = (int64_t)(ga.bytes / attnops_dtype_size(ga.dtype));
        const cmp_options o = {.rule = rule, .dtype = harness_triple_dtype(mc->op, ga.dtype), .counted = counted};
        const cmp_verdict v = cmp_compare(&o, a, e, bm, n);
        cmp_print(stdout, label, &v, a, e, ga.shape, ga.rank);
        *failed = !v.pass;
    }
    if (e) free(ga.data);
    free(aa.data);
    free(bm);
    free(counted);
    free(e);
    free(a);
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    const char *golden = NULL, *actual = NULL, *bench = NULL, *rule_name = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--golden") && v) golden = v, i++;
        else if (!strcmp(a, "--actual") && v) actual = v, i++;
        else if (!strcmp(a, "--bench") && v) bench = v, i++;
        else if (!strcmp(a, "--rule") && v) rule_name = v, i++;
        else return fprintf(stderr, "attnops compare: unknown or incomplete argument '%s'\n", a), 2;
    }
    cmp_rule forced = CMP_DUAL;
    if (!golden || !actual) return fprintf(stderr, "attnops compare: give --golden DIR and --actual DIR\n"), 2;
    if (rule_name && !cmp_rule_parse(rule_name, &forced))
        return fprintf(stderr, "attnops compare: --rule '%s' is not a rule (dual, triple, isclose, allclose, "
                               "thousandth, ten-thousandth)\n", rule_name), 2;
    char path[1200], err[1600];
    snprintf(path, sizeof path, "%s/manifest.json", golden);
    char *text = harness_read_text(path, err, sizeof err);
    manifest m;
    if (!text || manifest_parse(text, path, &m, err, sizeof err) != 0) {
        fprintf(stderr, "attnops compare: %s\n", err);
        free(text);
        return 2;
    }
    free(text);
    int total = 0, failed = 0, rc = 0;
    for (int c = 0; c < m.ncases; c++) {
        const manifest_case *mc = &m.cases[c];
        const cmp_rule rule = rule_name ? forced : mc->rule;
        for (int i = 0; i < mc->ntensors; i++) {
            if (strcmp(mc->tensors[i].role, "output")) continue;
            bool bad = false;
            const int r = compare_output(golden, actual, bench, mc, &mc->tensors[i], rule, &bad);
            rc = r > rc ? r : rc;
            failed += bad;
            total++;
        }
    }
    manifest_free(&m);
    if (rc) return rc;
    printf("%d of %d outputs passed\n", total - failed, total);
    return failed ? 1 : 0;
}
