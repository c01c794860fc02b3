/* attnops list / attnops run: the verification harness over case suites.
 *
 *   attnops list
 *   attnops run SUITE|FILE... [--filter REGEX] [--impl cpu|reference] [--threads N]
 *               [--mode only_grad|auto_grad] [--log FILE] [--rows] [--report FILE.html] [--save DIR]
 *
 * For every case: the golden chain (the reference) and the kernel chain
 * (--impl, default the fast CPU kernel) run on the same inputs, generated
 * from the case's data_seed.  FlashAttention: only_grad (the seed's
 * default): both backwards consume the golden forward's outputs and dq, dk,
 * dv (and dq_rope, dk_rope) are compared; auto_grad: the kernel chain runs
 * its own forward, whose outputs are compared too.  KeyPool (--mode does
 * not apply): pooled_key on its valid rows and the whole state cache after
 * the call (state_cache_out) are compared.  AttnRes (--mode does not
 * apply): each chain runs its forward and then its backward on that
 * forward's caches (the seed's cascade); h, rms, alpha and every gradient
 * are compared.  The triple rule adds a third chain, the benchmark
 * (ATTNOPS_IMPL_BENCHMARK), treated as the kernel chain is.  Each output
 * is judged by the case's rule (verify/compare.h) and printed as one line
 * (AttnRes's block gradients past grad_block_00, the seed's, as one summary
 * line, each failing one on its own); run_log.txt gets the seed's lines
 * ("<datetime>  <case> <output> diff_max : ..."), appended, for every output.
 * --rows prints, under a failing output, the rows (every leading index of
 * the tensor) with the most failing elements; --report writes the HTML
 * page of tools/report.h; --save writes every case's inputs and every
 * chain's outputs as .npy with a manifest (the export of attnops golden).
 * Exit status: 0 all pass, 1 a case failed, 2 bad
 * arguments or files. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "chains.h"
#include "cmd.h"
#include "export.h"
#include "harness_case.h"
#include "localise.h"
#include "report.h"
#include "suites.h"

int cmd_list(int argc, char **argv)
{
    (void)argv;
    if (argc != 0) {
        fprintf(stderr, "attnops list: takes no arguments\n");
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

static bool run_fa_case(const harness_case *hc, const run_options *ro, FILE *log)
{
    fa_case gold, kern, bench = {0}; /* bench: only the triple rule runs it */
    const bool triple = hc->rule == CMP_TRIPLE;
    fa_case_init(&gold, &hc->shape, hc->data_seed);
    fa_case_init(&kern, &hc->shape, hc->data_seed);
    bool ok = true;
    attnops_status st = fa_case_forward(&gold, ATTNOPS_IMPL_REFERENCE, ro->threads, 0);
    if (st == ATTNOPS_SUCCESS) {
        if (ro->auto_grad) {
            const bool fp8 = hc->shape.dtype == ATTNOPS_DTYPE_F8_E4M3FN || hc->shape.dtype == ATTNOPS_DTYPE_F8_E5M2;
            st = fa_case_forward(&kern, fp8 && ro->impl == ATTNOPS_IMPL_CPU ? ATTNOPS_IMPL_AUTO : ro->impl, ro->threads, 0);
        } else {
            fa_case_copy_forward(&kern, &gold);
        }
    }
    if (st == ATTNOPS_SUCCESS) st = fa_case_backward(&gold, ATTNOPS_IMPL_REFERENCE, ro->threads, 0);
    if (st == ATTNOPS_SUCCESS) st = fa_case_backward(&kern, ro->impl, ro->threads, 0);
    if (st == ATTNOPS_SUCCESS && triple) st = fa_bench_chain(hc, ro->auto_grad, ro->threads, &gold, &bench);
    if (st != ATTNOPS_SUCCESS) {
        ok = chain_failed(hc, st, log);
    } else {
        const struct { const char *name; const tu_tensor *k, *g, *b; } outs[] = {
            {"attention_out", &kern.out, &gold.out, &bench.out}, {"softmax_max", &kern.smax, &gold.smax, &bench.smax},
            {"softmax_sum", &kern.ssum, &gold.ssum, &bench.ssum}, {"dq", &kern.dq, &gold.dq, &bench.dq},
            {"dk", &kern.dk, &gold.dk, &bench.dk}, {"dv", &kern.dv, &gold.dv, &bench.dv},
            {"dq_rope", &kern.dqr, &gold.dqr, &bench.dqr}, {"dk_rope", &kern.dkr, &gold.dkr, &bench.dkr}};
        /* the forward's three only when the kernel chain ran its own forward */
        for (int i = ro->auto_grad ? 0 : 3; i < 3 + fa_case_backward_outputs(&gold); i++)
            ok &= judge(hc, ro, outs[i].name, &outs[i].k->view, &outs[i].g->view, triple ? &outs[i].b->view : NULL,
                        NULL, false, log).pass;
        if (ro->save && export_fa_case(ro->save, hc, &gold, &kern, triple ? &bench : NULL) != 0) ok = false;
    }
    fa_case_free(&gold);
    fa_case_free(&kern);
    fa_case_free(&bench);
    return ok;
}

/* KeyPool: the kernel chain and the golden on the same input cache;
 * pooled_key is judged on its valid rows only (the rest are undefined in
 * CURRENT capacity), the state cache after the call as a whole. */
static bool run_kp_case(const harness_case *hc, const run_options *ro, FILE *log)
{
    kp_case gold, kern;
    tu_tensor gold_out = {0}, kern_out = {0};
    kp_case_init(&gold, &hc->kp, hc->data_seed);
    kp_case_init(&kern, &hc->kp, hc->data_seed);
    bool ok = true;
    attnops_status st = kp_case_run(&gold, hc->kp.capacity, ATTNOPS_IMPL_REFERENCE, ro->threads, &gold_out);
    if (st == ATTNOPS_SUCCESS) st = kp_case_run(&kern, hc->kp.capacity, ro->impl, ro->threads, &kern_out);
    if (st != ATTNOPS_SUCCESS) {
        ok = chain_failed(hc, st, log);
    } else {
        uint8_t *valid = kp_valid_mask(gold.valid_rows, hc->kp.B, gold_out.view.rank, gold_out.view.shape);
        ok &= judge(hc, ro, "pooled_key", &kern_out.view, &gold_out.view, NULL, valid, false, log).pass;
        ok &= judge(hc, ro, "state_cache_out", &kern.cache_view, &gold.cache_view, NULL, NULL, false, log).pass;
        free(valid);
        if (ro->save && export_kp_case(ro->save, hc, &gold, &gold_out, &kern, &kern_out) != 0) ok = false;
    }
    tu_tensor_free(&gold_out);
    tu_tensor_free(&kern_out);
    kp_case_free(&gold);
    kp_case_free(&kern);
    return ok;
}

/* AttnRes: the golden, kernel and (triple) benchmark chains on the same
 * inputs, each its forward and then its backward on that forward's caches.
 * The seed's outputs get a verdict line each; the other blocks' gradients
 * are judged one by one too, summarised in one line. */
static bool run_ar_case(const harness_case *hc, const run_options *ro, FILE *log)
{
    const bool triple = hc->rule == CMP_TRIPLE;
    ar_case c;
    ar_chain gold, kern = {0}, bench = {0};
    ar_case_init(&c, &hc->ar, hc->data_seed);
    bool ok = true;
    attnops_status st = ar_case_run(&c, ATTNOPS_IMPL_REFERENCE, ro->threads, &gold);
    if (st == ATTNOPS_SUCCESS) st = ar_case_run(&c, ro->impl, ro->threads, &kern);
    if (st == ATTNOPS_SUCCESS && triple) st = ar_case_run(&c, ATTNOPS_IMPL_BENCHMARK, ro->threads, &bench);
    if (st != ATTNOPS_SUCCESS) {
        ok = chain_failed(hc, st, log);
    } else {
        ar_output g[AR_CASE_MAX_OUTPUTS], k[AR_CASE_MAX_OUTPUTS], b[AR_CASE_MAX_OUTPUTS];
        int seed_n;
        const int n = ar_chain_outputs(&c, &gold, g, &seed_n);
        ar_chain_outputs(&c, &kern, k, &seed_n);
        if (triple) ar_chain_outputs(&c, &bench, b, &seed_n);
        summary blocks = {0};
        for (int i = 0; i < n; i++) {
            const cmp_verdict v = judge(hc, ro, g[i].name, &k[i].t->view, &g[i].t->view,
                                        triple ? &b[i].t->view : NULL, NULL, i >= seed_n, log);
            ok &= v.pass;
            if (i >= seed_n) summary_add(&blocks, &v);
        }
        if (blocks.n) {
            char outputs[64];
            if (blocks.n > 1) snprintf(outputs, sizeof outputs, "%s..%s", g[seed_n].name, g[n - 1].name);
            else snprintf(outputs, sizeof outputs, "%s", g[seed_n].name);
            summary_print(&blocks, hc, outputs);
        }
        if (ro->save && export_ar_case(ro->save, hc, &c, &gold, &kern, triple ? &bench : NULL) != 0) ok = false;
    }
    ar_chain_free(&gold);
    ar_chain_free(&kern);
    ar_chain_free(&bench);
    ar_case_free(&c);
    return ok;
}

static bool run_case(const harness_case *hc, const run_options *ro, FILE *log)
{
    switch (hc->op) {
    case HARNESS_OP_KEYPOOL: return run_kp_case(hc, ro, log);
    case HARNESS_OP_ATTNRES: return run_ar_case(hc, ro, log);
    default: return run_fa_case(hc, ro, log);
    }
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
    /* --mode concerns FlashAttention cases only; name it when some ran */
    bool any_fa = false;
    for (int k = 0; k < total; k++) any_fa |= all[k].op == HARNESS_OP_FA_GRAD;
    const char *chain = ro.impl == ATTNOPS_IMPL_CPU ? "cpu" : "reference";
    const char *mode = !any_fa ? "" : ro.auto_grad ? ", auto_grad" : ", only_grad";
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
