/* attnops golden: the harness's export for devices elsewhere.
 *
 *   attnops golden SUITE|FILE... --out DIR [--filter REGEX] [--threads N]
 *       Every case's inputs and the reference's outputs as .npy files
 *       (DIR/<case>/<tensor>.npy) with DIR/manifest.json: per case its
 *       operator, attributes, data seed and rule, and per tensor its file,
 *       dtype, shape and role -- "input" (feed the device), "forward" (the
 *       golden forward's outputs, which the device's backward consumes, as
 *       the seed's only_grad mode does), "output" (what the device must
 *       produce; `compare` judges these), "mask" (KeyPool's valid_rows,
 *       which say the rows of pooled_key that count; its entry names them
 *       with "counted") or, for a case judged by the triple rule, "bench"
 *       (the benchmark chain's outputs, <case>/bench_<output>.npy).
 *   (attnops compare, tools/cmd_compare.c, judges a device's outputs against it.)
 * The export is shared with `attnops run --save DIR`, which adds the kernel
 * chain's outputs (role "kernel", files <case>/kernel_<tensor>.npy). */
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "chains.h"
#include "cmd.h"
#include "export.h"
#include "harness_case.h"

/* Each exports one case's golden chain (the reference) and, for the
 * triple rule, its benchmark chain: 0, 1 (a chain failed: *st says how) or
 * 2 (a file could not be written). */
static int golden_kp(export_set *x, const harness_case *hc, int threads, attnops_status *st_out)
{
    kp_case c;
    tu_tensor out;
    kp_case_init(&c, &hc->kp, hc->data_seed);
    const attnops_status st = *st_out = kp_case_run(&c, hc->kp.capacity, ATTNOPS_IMPL_REFERENCE, threads, &out);
    const int rc = st != ATTNOPS_SUCCESS ? 1 : export_kp_case(x, hc, &c, &out, NULL, NULL) != 0 ? 2 : 0;
    tu_tensor_free(&out);
    kp_case_free(&c);
    return rc;
}

static int golden_fa(export_set *x, const harness_case *hc, int threads, attnops_status *st_out)
{
    const bool triple = hc->rule == CMP_TRIPLE;
    fa_case c, bench = {0};
    fa_case_init(&c, &hc->shape, hc->data_seed);
    attnops_status st = fa_case_forward(&c, ATTNOPS_IMPL_REFERENCE, threads, 0);
    if (st == ATTNOPS_SUCCESS) st = fa_case_backward(&c, ATTNOPS_IMPL_REFERENCE, threads, 0);
    if (st == ATTNOPS_SUCCESS && triple) st = fa_bench_chain(hc, false, threads, &c, &bench);
    *st_out = st;
    int rc = st != ATTNOPS_SUCCESS;
    if (!rc && export_fa_case(x, hc, &c, NULL, triple ? &bench : NULL) != 0) rc = 2;
    fa_case_free(&c);
    fa_case_free(&bench);
    return rc;
}

static int golden_ar(export_set *x, const harness_case *hc, int threads, attnops_status *st_out)
{
    const bool triple = hc->rule == CMP_TRIPLE;
    ar_case c;
    ar_chain golden, bench = {0};
    ar_case_init(&c, &hc->ar, hc->data_seed);
    attnops_status st = ar_case_run(&c, ATTNOPS_IMPL_REFERENCE, threads, &golden);
    if (st == ATTNOPS_SUCCESS && triple) st = ar_case_run(&c, ATTNOPS_IMPL_BENCHMARK, threads, &bench);
    *st_out = st;
    int rc = st != ATTNOPS_SUCCESS;
    if (!rc && export_ar_case(x, hc, &c, &golden, NULL, triple ? &bench : NULL) != 0) rc = 2;
    ar_chain_free(&golden);
    ar_chain_free(&bench);
    ar_case_free(&c);
    return rc;
}

static int golden_case(export_set *x, const harness_case *hc, int threads)
{
    attnops_status st = ATTNOPS_SUCCESS;
    const int rc = hc->op == HARNESS_OP_KEYPOOL ? golden_kp(x, hc, threads, &st)
                   : hc->op == HARNESS_OP_ATTNRES ? golden_ar(x, hc, threads, &st)
                                                  : golden_fa(x, hc, threads, &st);
    /* the same "(NAME number)" tail as attnops run's FAIL line */
    if (rc == 1)
        fprintf(stderr, "attnops golden: case %s: %s (%s %d)\n", hc->name, attnops_last_error(),
                attnops_status_string(st), (int)st);
    return rc;
}

int cmd_golden(int argc, char **argv)
{
    const char *out_dir = NULL, *filter = NULL, *sources[64];
    int nsources = 0, threads = 2;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--out") && v) out_dir = v, i++;
        else if (!strcmp(a, "--filter") && v) filter = v, i++;
        else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
        else if (a[0] == '-') return fprintf(stderr, "attnops golden: unknown or incomplete option '%s'\n", a), 2;
        else if (nsources < 64) sources[nsources++] = a;
    }
    if (!out_dir || nsources == 0) return fprintf(stderr, "attnops golden: give SUITE|FILE... and --out DIR\n"), 2;
    harness_case *cases = NULL;
    const int n = harness_load_all(sources, nsources, filter, &cases);
    export_set *x = n >= 0 ? export_open(out_dir) : NULL;
    if (!x) return free(cases), 2;
    /* A case the library refuses is reported and the others still exported
     * (exit 1 at the end); a failure to write the export stops (exit 2). */
    int rc = 0;
    for (int k = 0; k < n && rc < 2; k++) {
        const int r = golden_case(x, &cases[k], threads);
        if (r == 0) printf("golden %s: %s/%s\n", cases[k].name, out_dir, cases[k].name);
        rc = r > rc ? r : rc;
    }
    if (export_close(x) != 0 && rc == 0) rc = 2;
    free(cases);
    return rc;
}
