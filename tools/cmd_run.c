/* attnops list / attnops run: the verification harness over case suites.
 *
 *   attnops list [--support]
 *   attnops run SUITE|FILE... [--filter REGEX] [--impl cpu|reference] [--threads N]
 *               [--mode only_grad|auto_grad] [--log FILE] [--rows] [--report FILE.html] [--save DIR]
 *
 * For every case: the golden chain (the reference) and the kernel chain
 * (--impl, default the fast CPU kernel) run on the same inputs, generated
 * from the case's data_seed, by the case's operator driver
 * (verify/harness_driver.h; each driver's file says what its chains run and
 * which outputs are judged).  The triple rule adds a third chain, the
 * benchmark (ATTNOPS_IMPL_BENCHMARK), treated as the kernel chain is.
 * --mode applies to operators whose forward feeds a backward
 * (FlashAttention): only_grad (the seed's default), the kernel backward
 * consumes the golden forward's outputs; auto_grad, it runs its own forward,
 * whose outputs are judged too.  Each judged output gets the case's rule
 * (verify/compare.h) and one line (a driver's summarised outputs one
 * summary line, each failing one its own); run_log.txt gets the seed's
 * lines ("<datetime>  <case> <output> diff_max : ..."), appended, for every
 * output.  --rows prints, under a failing output, the rows (every leading
 * index of the tensor) with the most failing elements; --report writes the
 * HTML page of tools/report.h; --save writes every case's inputs and every
 * chain's outputs as .npy with a manifest (the export of attnops golden).
 * list --support: operator x implementation x ISA x dtype, from the drivers.
 * Exit status: 0 all pass, 1 a case failed, 2 bad arguments or files. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "cmd.h"
#include "export.h"
#include "localise.h"
#include "report.h"
#include "suites.h"

/* One row of the support table: the dtypes in CANN's spelling. */
static void support_row(const harness_driver *d, attnops_impl impl, const char *isa, const char *note)
{
    static const char *const IMPL_NAME[] = {"auto", "reference", "cpu", "benchmark"};
    printf("%-22s %-10s %-9s", d->name, IMPL_NAME[impl], isa);
    for (const attnops_dtype *t = d->dtypes[impl]; *t; t++) printf(" %s", attnops_dtype_traits_of(*t)->cann_name);
    printf("%s%s\n", note[0] ? "  " : "", note);
}

/* Operator x implementation x ISA x dtype, from the driver table: the
 * reference and the benchmark chain are plain C on every CPU; the cpu
 * implementation has a row per ISA this build has, marked where it runs. */
static int list_support(void)
{
    printf("operator x implementation x ISA x dtype (this CPU: %s; the cpu implementation runs on %s)\n",
           attnops_cpu_model(), attnops_cpu_isa());
    printf("%-22s %-10s %-9s dtypes\n", "operator", "impl", "isa");
    for (int op = 0; op < HARNESS_OP_COUNT; op++) {
        const harness_driver *d = harness_drivers[op];
        for (attnops_impl impl = ATTNOPS_IMPL_REFERENCE; impl <= ATTNOPS_IMPL_BENCHMARK; impl++) {
            if (!d->dtypes[impl]) continue;
            if (impl != ATTNOPS_IMPL_CPU) {
                support_row(d, impl, "any", "");
                continue;
            }
            bool here = false;
            for (int i = 0; attnops_cpu_isa_at(i, &here); i++) {
                const char *isa = attnops_cpu_isa_at(i, NULL);
                const char *note = !here ? "(not on this CPU)" : !strcmp(isa, attnops_cpu_isa()) ? "(runs here)" : "";
                support_row(d, impl, isa, note);
            }
        }
    }
    printf("notes:\n");
    for (int op = 0; op < HARNESS_OP_COUNT; op++) {
        const harness_driver *d = harness_drivers[op];
        printf("  %s: %s%s%s\n", d->name, d->title, d->cpu_note ? "; cpu: " : "", d->cpu_note ? d->cpu_note : "");
    }
    return 0;
}

int cmd_list(int argc, char **argv)
{
    if (argc == 1 && !strcmp(argv[0], "--support")) return list_support();
    if (argc != 0) {
        fprintf(stderr, "attnops list: takes no arguments but --support\n");
        return 2;
    }
    for (const builtin_suite *s = builtin_suites; s->name; s++) {
        harness_case *cases = NULL;
        char err[512];
        const int n = harness_parse_cases(s->json, s->name, &cases, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "attnops list: built-in suite %s: %s\n", s->name, err);
            return 2;
        }
        printf("%-12s %3d cases:", s->name, n);
        for (int i = 0; i < n; i++) printf(" %s", cases[i].name);
        printf("\n");
        free(cases);
    }
    return 0;
}

typedef struct run_options {
    const char *filter, *log_path, *report_path, *save_dir;
    attnops_impl impl;
    int threads;
    bool auto_grad, rows;
    report *rep;
    export_set *save;
} run_options;

/* The seed's log line: str(datetime.now()) + "  " + text. */
static void log_line(FILE *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(FILE *log, const char *fmt, ...)
{
    if (!log) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(log, "%s.%06ld  ", stamp, (long)tv.tv_usec);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(log, fmt, ap);
    va_end(ap);
    fputc('\n', log);
}

static double *to_f64(const attnops_tensor *t, int64_t *n)
{
    *n = tu_numel(t);
    double *x = malloc(sizeof(double) * (size_t)(*n ? *n : 1));
    tu_view_to_f64(t, x);
    return x;
}

/* The rows (leading indices) of a failing output with the most failing
 * elements, with their coordinates. */
static void print_rows(const localisation *l, const attnops_tensor *v)
{
    int64_t rows[5];
    const int n = loc_worst_rows(l, rows, 5);
    printf("     rows with most failures (of %lld rows of %lld):", (long long)l->rows, (long long)l->row_len);
    for (int i = 0; i < n; i++) {
        int64_t idx[ATTNOPS_MAX_RANK], rem = rows[i];
        for (int d = v->rank - 2; d >= 0; d--) idx[d] = rem % v->shape[d], rem /= v->shape[d];
        printf(" [");
        for (int d = 0; d + 1 < v->rank; d++) printf(d ? ",%lld" : "%lld", (long long)idx[d]);
        printf("] %lld", (long long)l->row_fail[rows[i]]);
    }
    printf("\n");
}

/* One output of one case: the verdict line (when it fails, or always
 * unless `quiet`), the log lines, the report entry.  counted (may be
 * NULL): the elements judged. */
static cmp_verdict judge(const harness_case *hc, const run_options *ro, const char *output,
                         const attnops_tensor *kernel, const attnops_tensor *golden, const attnops_tensor *bench,
                         const uint8_t *counted, bool quiet, FILE *log)
{
    int64_t n;
    double *a = to_f64(kernel, &n), *e = to_f64(golden, &n), *bm = bench ? to_f64(bench, &n) : NULL;
    const cmp_options o = {
        .rule = hc->rule, .dtype = harness_triple_dtype(hc->op, kernel->dtype), .counted = counted};
    const cmp_verdict v = cmp_compare(&o, a, e, bm, n);
    free(bm);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (!counted || counted[i]) sum += fabs(a[i] - e[i]);
    char label[128];
    snprintf(label, sizeof label, "%s %s", hc->name, output);
    if (!quiet || !v.pass) cmp_print(stdout, label, &v, a, e, kernel->shape, kernel->rank);
    if (ro->rep || (ro->rows && !v.pass)) {
        const int64_t row_len = kernel->rank ? kernel->shape[kernel->rank - 1] : 1;
        localisation l = loc_analyse(&o, a, e, n, row_len);
        if (ro->rows && !v.pass) print_rows(&l, kernel);
        if (ro->rep) report_add(ro->rep, hc->name, output, &v, &l);
        loc_free(&l);
    }
    log_line(log, "%s %s diff_max : %.8f", hc->name, output, v.max_abs);
    log_line(log, "%s %s diff_sum : %.6f", hc->name, output, sum);
    log_line(log, "%s %s ratio : %.6f %s", hc->name, output, v.counted ? 1.0 - (double)v.n_fail / (double)v.counted : 1.0,
             v.pass ? "pass" : "case failed");
    free(a);
    free(e);
    return v;
}

/* Verdicts of many outputs in one line: how many pass, and each bounded
 * metric's worst value. */
typedef struct summary {
    int n, passed;
    cmp_verdict worst;
} summary;

static void summary_add(summary *s, const cmp_verdict *v)
{
    if (s->n++ == 0) s->worst = *v;
    s->passed += v->pass;
    for (int m = 0; m < v->n_metrics; m++) {
        cmp_metric *w = &s->worst.metric[m];
        const double x = v->metric[m].value;
        if (w->at_least ? !(x >= w->value) : !(x <= w->value)) w->value = x; /* NaN is the worst */
    }
}

static void summary_print(const summary *s, const harness_case *hc, const char *outputs)
{
    printf("%s %s %s [%s] %d of %d pass; worst", s->passed == s->n ? "PASS" : "FAIL", hc->name, outputs,
           cmp_rule_name(s->worst.rule), s->passed, s->n);
    for (int m = 0; m < s->worst.n_metrics; m++) {
        const cmp_metric *w = &s->worst.metric[m];
        if (isfinite(w->limit)) printf(" %s %.4g (%s %.4g)", w->name, w->value, w->at_least ? ">=" : "<=", w->limit);
    }
    printf("\n");
}

/* A chain that could not run: one FAIL line and a log line. */
static bool chain_failed(const harness_case *hc, attnops_status st, FILE *log)
{
    printf("FAIL %s: %s (%s %d)\n", hc->name, attnops_last_error(), attnops_status_string(st), (int)st);
    log_line(log, "%s error: %s", hc->name, attnops_last_error());
    return false;
}

/* One case: its chains, each judged tensor's verdict (summarised ones in
 * one line unless they fail), the export with --save. */
static bool run_case(const harness_case *hc, const run_options *ro, FILE *log)
{
    const harness_run_options o = {.kernel = true, .impl = ro->impl, .bench = hc->rule == CMP_TRIPLE,
                                   .auto_grad = ro->auto_grad, .threads = ro->threads};
    harness_run r;
    const attnops_status st = harness_run_case(hc, &o, &r);
    if (st != ATTNOPS_SUCCESS) return chain_failed(hc, st, log);
    bool ok = true;
    summary rest = {0};
    const char *first = NULL, *last = NULL;
    for (int i = 0; i < r.ntensors; i++) {
        const harness_tensor *t = &r.tensors[i];
        if (!t->judged) continue;
        const cmp_verdict v = judge(hc, ro, t->verdict ? t->verdict : t->name, t->view[HARNESS_KERNEL],
                                    t->view[HARNESS_GOLDEN], t->view[HARNESS_BENCH], t->counted, t->summarised, log);
        ok &= v.pass;
        if (!t->summarised) continue;
        summary_add(&rest, &v);
        first = first ? first : t->name, last = t->name;
    }
    if (rest.n) {
        char outputs[64];
        if (rest.n > 1) snprintf(outputs, sizeof outputs, "%s..%s", first, last);
        else snprintf(outputs, sizeof outputs, "%s", first);
        summary_print(&rest, hc, outputs);
    }
    if (ro->save && export_case(ro->save, &r) != 0) ok = false;
    harness_run_free(&r);
    return ok;
}

int cmd_run(int argc, char **argv)
{
    run_options ro = {NULL, "run_log.txt", NULL, NULL, ATTNOPS_IMPL_CPU, 2, false, false, NULL, NULL};
    const char *sources[64];
    int nsources = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--filter") && v) ro.filter = v, i++;
        else if (!strcmp(a, "--log") && v) ro.log_path = v, i++;
        else if (!strcmp(a, "--report") && v) ro.report_path = v, i++;
        else if (!strcmp(a, "--rows")) ro.rows = true;
        else if (!strcmp(a, "--save") && v) ro.save_dir = v, i++;
        else if (!strcmp(a, "--threads") && v) ro.threads = atoi(v), i++;
        else if (!strcmp(a, "--impl") && v) {
            if (!strcmp(v, "cpu")) ro.impl = ATTNOPS_IMPL_CPU;
            else if (!strcmp(v, "reference")) ro.impl = ATTNOPS_IMPL_REFERENCE;
            else return fprintf(stderr, "attnops run: --impl is '%s'; it must be cpu or reference\n", v), 2;
            i++;
        } else if (!strcmp(a, "--mode") && v) {
            if (!strcmp(v, "only_grad")) ro.auto_grad = false;
            else if (!strcmp(v, "auto_grad")) ro.auto_grad = true;
            else return fprintf(stderr, "attnops run: --mode is '%s'; it must be only_grad or auto_grad\n", v), 2;
            i++;
        } else if (a[0] == '-') {
            return fprintf(stderr, "attnops run: unknown or incomplete option '%s'\n", a), 2;
        } else if (nsources < 64) {
            sources[nsources++] = a;
        }
    }
    if (nsources == 0) return fprintf(stderr, "attnops run: give a suite (attnops list) or a case file\n"), 2;
    if (ro.threads < 1) return fprintf(stderr, "attnops run: --threads must be >= 1\n"), 2;
    harness_case *all = NULL;
    const int total = harness_load_all(sources, nsources, ro.filter, &all);
    if (total < 0) return 2;
    if (ro.report_path && !(ro.rep = report_open(ro.report_path))) return free(all), 2;
    if (ro.save_dir && !(ro.save = export_open(ro.save_dir))) return free(all), 2;
    FILE *log = strcmp(ro.log_path, "-") ? fopen(ro.log_path, "a") : NULL;
    if (!log && strcmp(ro.log_path, "-")) fprintf(stderr, "attnops run: cannot append to %s; no log\n", ro.log_path);

    const bool tty = isatty(STDERR_FILENO);
    int failed = 0;
    for (int k = 0; k < total; k++) {
        if (tty) fprintf(stderr, "\r[%d/%d] %-24s", k + 1, total, all[k].name);
        if (all[k].note[0]) printf("note %s: %s\n", all[k].name, all[k].note);
        failed += !run_case(&all[k], &ro, log);
        fflush(stdout);
    }
    if (tty) fprintf(stderr, "\r%60s\r", "");
    /* --mode concerns the operators with a forward feeding a backward; name it when some ran */
    bool any_grad = false;
    for (int k = 0; k < total; k++) any_grad |= harness_driver_of(all[k].op)->grad_modes;
    const char *chain = ro.impl == ATTNOPS_IMPL_CPU ? "cpu" : "reference";
    const char *mode = !any_grad ? "" : ro.auto_grad ? ", auto_grad" : ", only_grad";
    printf("%d of %d cases passed (%s chain vs the reference%s)\n", total - failed, total, chain, mode);
    if (log) fclose(log);
    if (ro.save && export_close(ro.save) != 0) failed = failed ? failed : -1;
    if (ro.rep) {
        char title[256];
        snprintf(title, sizeof title, "%d of %d cases passed: the %s chain against the reference%s", total - failed,
                 total, chain, mode);
        if (report_close(ro.rep, title) != 0) failed = failed ? failed : -1;
        else printf("report: %s\n", ro.report_path);
    }
    free(all);
    return failed > 0 ? 1 : (failed < 0 ? 2 : 0);
}
