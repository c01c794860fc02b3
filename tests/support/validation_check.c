#include "validation_check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int g_checks;    /* checks made in the normal mode */
static int g_problems;  /* checks failed since vc_begin */
static bool g_inverted; /* a self-test: failed checks are expected */
static char g_label[200];

static bool verbose(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("ATTNOPS_TEST_VERBOSE");
        on = v && *v && *v != '0';
    }
    return on;
}

bool vc_expect_at(const char *file, int line, bool ok, const char *fmt, ...)
{
    if (!g_inverted) g_checks++;
    if (ok) return true;
    g_problems++;
    if (g_inverted && !verbose()) return false;
    va_list ap;
    va_start(ap, fmt);
    if (g_inverted) {
        printf("  checker self-test, detected as intended: [%s] ", g_label);
        vprintf(fmt, ap);
        putchar('\n');
    } else {
        tu_failures++;
        fprintf(stderr, "FAIL %s:%d: [%s] ", file, line, g_label);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
    return false;
}

void vc_label(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_label, sizeof g_label, fmt, ap);
    va_end(ap);
}

const char *vc_label_text(void) { return g_label; }
void vc_begin(void) { g_problems = 0; }
int vc_problems(void) { return g_problems; }
void vc_invert(bool on) { g_inverted = on; }

void vc_expect_detected(int found, const char *what)
{
    g_checks++;
    TU_CHECK(found > 0, "checker self-test: %s was not detected", what);
}

int vc_summary(const char *suite)
{
    if (tu_failures) fprintf(stderr, "seed %llu (ATTNOPS_TEST_SEED)\n", (unsigned long long)tu_suite_seed());
    printf("%s: %d checks, %d failed\n", suite, g_checks, tu_failures);
    return tu_failures ? 1 : 0;
}

/* ---- tensors under check ---- */
static const char *name_of(const vc_tensors *s, int i, char *buf, size_t size)
{
    return s->names ? s->names[i] : s->name(s->ctx, i, buf, size);
}

static void snapshot_free(const vc_tensors *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->snap[i]);
        s->snap[i] = NULL;
    }
}

void vc_tensors_free(const vc_tensors *s)
{
    snapshot_free(s);
    for (int i = 0; i < s->n; i++)
        if (s->t[i].block) tu_tensor_free(&s->t[i]);
}

void vc_snapshot(const vc_tensors *s)
{
    snapshot_free(s);
    for (int i = 0; i < s->n; i++) {
        const tu_tensor *t = &s->t[i];
        if (!t->block || s->role(s->ctx, i) == VC_OUTPUT) continue;
        s->snap[i] = malloc(t->data_bytes ? t->data_bytes : 1);
        memcpy(s->snap[i], vc_storage(t), t->data_bytes);
    }
}

void vc_check_failed_call(const vc_tensors *s)
{
    char buf[64];
    for (int i = 0; i < s->n; i++) {
        const tu_tensor *t = &s->t[i];
        if (!t->block) continue;
        const char *name = name_of(s, i, buf, sizeof buf);
        if (s->role(s->ctx, i) == VC_OUTPUT)
            VC_EXPECT(tu_tensor_untouched(t, VC_POISON), "output '%s' was written although the call failed", name);
        else
            VC_EXPECT(memcmp(s->snap[i], vc_storage(t), t->data_bytes) == 0,
                      "'%s' was modified although the call failed", name);
        VC_EXPECT(tu_canaries_ok(t, name), "canary around '%s' broken", name);
    }
}

bool vc_poisoned(const unsigned char *e, size_t es)
{
    for (size_t k = 0; k < es; k++)
        if (e[k] != VC_POISON) return false;
    return true;
}

int64_t vc_padding_changed(const tu_tensor *t, const unsigned char *before)
{
    const attnops_tensor *v = &t->view;
    const int64_t es = (int64_t)attnops_dtype_size(v->dtype), n = tu_numel(v);
    const unsigned char *now = vc_storage(t);
    bool *logical = calloc(t->data_bytes ? t->data_bytes : 1, 1);
    int64_t idx[ATTNOPS_MAX_RANK] = {0}, changed = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < v->rank; d++) off += idx[d] * v->strides[d];
        memset(logical + off * es, 1, (size_t)es);
        for (int d = v->rank - 1; d >= 0 && ++idx[d] == v->shape[d]; d--) idx[d] = 0;
    }
    for (size_t i = 0; i < t->data_bytes; i++) changed += !logical[i] && now[i] != (before ? before[i] : VC_POISON);
    free(logical);
    return changed;
}

/* ---- calling ---- */
static unsigned char ample_ws[VC_WORKSPACE_BYTES];

static void record_message(vc_outcome *oc, const char *name, attnops_status st, attnops_status want,
                           const char *msg)
{
    if (oc->n == VC_MAX_PHASES) {
        TU_CHECK(0, "vc_record: more than %d phases", VC_MAX_PHASES);
        return;
    }
    vc_phase *p = &oc->ph[oc->n++];
    p->name = name, p->st = st, p->want = want;
    snprintf(p->msg, sizeof p->msg, "%s", msg ? msg : "");
}

void vc_record(vc_outcome *oc, const char *name, attnops_status st, attnops_status want)
{
    record_message(oc, name, st, want, attnops_last_error());
}

/* One phase of op: its status and its last error right after it. */
static void record_phase(vc_outcome *oc, const vc_op *op, const char *name, attnops_status st, attnops_status want)
{
    record_message(oc, name, st, want, op->last_error ? op->last_error() : attnops_last_error());
}

void vc_call(vc_outcome *oc, const vc_op *op, const void *args, vc_call_kind kind, attnops_status want)
{
    memset(oc, 0, sizeof *oc);
    size_t bytes = 12345;
    switch (kind) {
    case VC_CALL:
        record_phase(oc, op, "workspace query", op->query(args, &bytes), want);
        record_phase(oc, op, "run", op->run(args, ample_ws, sizeof ample_ws), want);
        break;
    case VC_QUERY: record_phase(oc, op, "workspace query", op->query(args, &bytes), want); break;
    case VC_NULL_BYTES: record_phase(oc, op, "workspace query", op->query(args, NULL), want); break;
    case VC_WS_SHORT:
    case VC_WS_NULL:
        oc->pre = true;
        oc->pre_st = op->query(args, &bytes);
        oc->pre_bytes = bytes;
        record_phase(oc, op, "run",
                     kind == VC_WS_SHORT ? op->run(args, ample_ws, bytes - 1) : op->run(args, NULL, bytes), want);
        break;
    default: break;
    }
}

/* ---- verifying ---- */
/* True when m is one sentence "<op>: ... ." */
static bool sentence_of(const char *m, const char *op)
{
    const size_t len = strlen(m), n = strlen(op);
    return strncmp(m, op, n) == 0 && strncmp(m + n, ": ", 2) == 0 && len > n + 3 && m[len - 1] == '.';
}

void vc_check_outcome(const vc_outcome *oc, const vc_expect *e, const char *op, const char *alt_op)
{
    const char *const ops[2] = {op, alt_op};
    vc_check_outcome_any(oc, e, ops, alt_op ? 2 : 1);
}

void vc_check_outcome_any(const vc_outcome *oc, const vc_expect *e, const char *const *ops, int n)
{
    if (oc->pre)
        VC_EXPECT(oc->pre_st == ATTNOPS_SUCCESS && oc->pre_bytes > 0,
                  "the workspace query of a valid call returned %d with %zu bytes", (int)oc->pre_st, oc->pre_bytes);
    for (int k = 0; k < oc->n; k++) {
        const vc_phase *p = &oc->ph[k];
        if (verbose()) printf("[%s] %s -> %d: %s\n", g_label, p->name, (int)p->st, p->msg);
        VC_EXPECT(p->st == p->want, "%s: status %d (%s), expected %d (%s); message: \"%s\"", p->name, (int)p->st,
                  attnops_status_string(p->st), (int)p->want, attnops_status_string(p->want), p->msg);
        if (p->want == ATTNOPS_SUCCESS) {
            VC_EXPECT(p->msg[0] == '\0', "%s: last error after a success is \"%s\"", p->name, p->msg);
            continue;
        }
        bool sentence = false;
        char names[256] = "";
        for (int i = 0; i < n; i++) {
            sentence |= sentence_of(p->msg, ops[i]);
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s: ... .\"", i ? " or " : "", ops[i]);
        }
        VC_EXPECT(sentence, "%s: message is not one sentence %s: \"%s\"", p->name, names, p->msg);
        VC_EXPECT(strstr(p->msg, e->name) != NULL, "%s: message does not name '%s': \"%s\"", p->name, e->name,
                  p->msg);
        if (e->also)
            VC_EXPECT(strstr(p->msg, e->also) != NULL, "%s: message does not state '%s': \"%s\"", p->name, e->also,
                      p->msg);
    }
}

attnops_status vc_check_valid_run(const vc_op *op, const void *args, const vc_tensors *s)
{
    vc_snapshot(s);
    size_t b1 = 1, b2 = 2;
    const attnops_status s1 = op->query(args, &b1), s2 = op->query(args, &b2);
    VC_EXPECT(s1 == 0 && s2 == 0, "workspace query: %d %s", (int)s1, attnops_last_error());
    VC_EXPECT(b1 == b2, "workspace query not deterministic: %zu then %zu", b1, b2);
    VC_EXPECT(op->run(NULL, NULL, 0) == ATTNOPS_ERR_NULLPTR, "NULL args accepted");
    const int64_t n = (int64_t)b1;
    tu_tensor w = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &n, 0);
    const attnops_status st = op->run(args, w.view.data, b1);
    VC_EXPECT(st == ATTNOPS_SUCCESS, "run with exactly %zu bytes: %d %s", b1, (int)st, attnops_last_error());
    VC_EXPECT(attnops_last_error()[0] == '\0', "last error after a success is \"%s\"", attnops_last_error());
    VC_EXPECT(tu_canaries_ok(&w, "workspace"), "the run wrote outside its workspace");
    tu_tensor_free(&w);
    char buf[64];
    for (int i = 0; i < s->n; i++) {
        const tu_tensor *t = &s->t[i];
        if (!t->block) continue;
        const char *name = name_of(s, i, buf, sizeof buf);
        VC_EXPECT(tu_canaries_ok(t, name), "canary around '%s' broken", name);
        if (s->role(s->ctx, i) == VC_INPUT)
            VC_EXPECT(memcmp(s->snap[i], vc_storage(t), t->data_bytes) == 0, "input '%s' modified by a successful run",
                      name);
    }
    return st;
}

void vc_check_workspace_fits(const vc_op *op, const void *args)
{
    size_t bytes = 0;
    const attnops_status st = op->query(args, &bytes);
    VC_EXPECT(st == ATTNOPS_SUCCESS && bytes > 0 && bytes <= VC_WORKSPACE_BYTES,
              "workspace query: %d, %zu bytes (%d available): %s", (int)st, bytes, VC_WORKSPACE_BYTES,
              attnops_last_error());
}

/* ---- the checker must be able to fail ---- */
/* One check: `found` problems in `what`, which must be detected.  Returns
 * whether it was. */
static bool detected(int found, const char *what)
{
    vc_expect_detected(found, what);
    return found > 0;
}

/* The subject's call and check: its suite's, or its own. */
static void subject_call(const vc_subject *s, const vc_expect *e)
{
    if (s->suite) s->suite->call(s->ctx, e);
    else s->call(s->ctx, e);
}

static int subject_verify(const vc_subject *s, const vc_expect *e)
{
    return s->suite ? s->suite->verify(s->ctx, e) : s->verify(s->ctx, e);
}

static bool detect(const vc_subject *s, const vc_expect *e, const char *what)
{
    vc_label("self-test %s", what);
    return detected(subject_verify(s, e), what);
}

/* The sentence rule on a made-up failed phase with message m. */
static bool detect_sentence(const char *m, const char *what)
{
    vc_outcome oc = {.n = 1};
    oc.ph[0] = (vc_phase){"run", ATTNOPS_ERR_NULLPTR, ATTNOPS_ERR_NULLPTR, ""};
    snprintf(oc.ph[0].msg, sizeof oc.ph[0].msg, "%s", m);
    vc_label("self-test %s", what);
    vc_begin();
    vc_check_outcome(&oc, &(vc_expect){ATTNOPS_ERR_NULLPTR, "'x'", NULL}, "Op", "AltOp");
    return detected(vc_problems(), what);
}

int vc_self_test_wrong(const vc_subject *s, const vc_expect *wrong, const char *what)
{
    const bool was = g_inverted;
    g_inverted = true;
    subject_call(s, wrong);
    const bool found = detect(s, wrong, what);
    g_inverted = was;
    return found;
}

int vc_self_test(const vc_subject *s)
{
    const bool was = g_inverted;
    g_inverted = true;
    subject_call(s, &s->right);
    vc_label("self-test right expectation");
    const int clean = subject_verify(s, &s->right);

    vc_expect wrong = s->right;
    wrong.st = s->wrong_st;
    int passed = vc_self_test_wrong(s, &wrong, "a wrong expected status");

    subject_call(s, &s->right);
    wrong = s->right, wrong.name = s->wrong_name;
    passed += detect(s, &wrong, "a wrong expected argument name");
    wrong = s->right, wrong.also = s->wrong_also;
    passed += detect(s, &wrong, "a missing expected text");

    for (int k = 0; k < VC_MAX_TAMPERS && s->tamper[k].byte; k++) {
        const vc_tamper *t = &s->tamper[k];
        if (t->note) fprintf(stderr, "checker self-test: %s\n", t->note);
        *t->byte ^= t->flip;
        passed += detect(s, &s->right, t->what);
        *t->byte ^= t->flip;
    }
    passed += detect_sentence("Other: 'x' is NULL.", "a sentence of another operator");
    passed += detect_sentence("Op: 'x' is NULL", "a sentence without its final period");
    passed += detect_sentence("Op 'x' is NULL.", "a sentence without the colon");
    g_inverted = was;
    g_checks++;
    TU_CHECK(clean == 0, "checker self-test: the right expectation reported %d problems", clean);
    return passed + (clean == 0);
}

int vc_run_failure_cases(const vc_suite *s)
{
    int passed = 0, ran = 0;
    for (int scope = 0; scope < s->n_scopes; scope++)
        for (int c = 0; c < s->n_cases; c++) {
            if (!s->applies(&s->cases[c], scope)) continue;
            vc_expect e = s->cases[c].e;
            s->init(s->fixture, scope, tu_suite_seed() + (uint64_t)c);
            vc_label("%s %s", s->scope_names[scope], s->cases[c].name);
            if (s->apply(s->fixture, c, &e)) {
                s->call(s->fixture, &e);
                ran++;
                if (s->verify(s->fixture, &e) == 0) passed++;
            }
            s->free(s->fixture);
        }
    printf("%s: %d of %d as expected\n", s->title ? s->title : "failure cases", passed, ran);
    return passed;
}
