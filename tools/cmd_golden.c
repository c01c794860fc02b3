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
#include "cmd.h"
#include "export.h"
#include "harness_case.h"

/* One case's golden chain (the reference) and, for the triple rule, its
 * benchmark chain, exported: 0, 1 (a chain failed: said on stderr) or 2
 * (a file could not be written). */
static int golden_case(export_set *x, const harness_case *hc, int threads)
{
    const harness_run_options o = {.bench = hc->rule == CMP_TRIPLE, .threads = threads};
    harness_run r;
    const attnops_status st = harness_run_case(hc, &o, &r);
    /* the same "(NAME number)" tail as attnops run's FAIL line */
    if (st != ATTNOPS_SUCCESS)
        return fprintf(stderr, "attnops golden: case %s: %s (%s %d)\n", hc->name, attnops_last_error(),
                       attnops_status_string(st), (int)st), 1;
    const int rc = export_case(x, &r) != 0 ? 2 : 0;
    harness_run_free(&r);
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
