/* The checker the argument-validation tests share (tests/test_*_validation.c).
 *
 * A validation test breaks one rule of an operator per case, calls the
 * operator's entry points and checks
 *   - the exact status of every call (vc_call records them in a vc_outcome),
 *   - attnops_last_error(): one sentence "<Op>: ... ." naming the argument
 *     and, where the case says so, stating a value (vc_check_outcome),
 *   - that the failed call wrote no output byte (outputs are poisoned with
 *     VC_POISON before it), changed no input byte and broke no canary
 *     (vc_check_failed_call, against the copy vc_snapshot saved).
 * A valid call goes through vc_check_valid_run.
 *
 * Every check is a VC_EXPECT: it is counted, and a failed one is a TU_CHECK
 * failure (tu_failures) prefixed with the current label.  In the inverted
 * mode (vc_invert) failed checks are the point: they count as problems
 * (vc_problems) but not as failures, so that a self-test can prove the
 * checker fails on wrong expectations (vc_self_test).
 * ATTNOPS_TEST_VERBOSE=1 prints every sentence and every intended detection.
 */
#ifndef ATTNOPS_VALIDATION_CHECK_H
#define ATTNOPS_VALIDATION_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "testutil.h"

#define VC_POISON 0xC3               /* outputs are filled with it before a call */
#define VC_WORKSPACE_BYTES (1 << 22) /* the workspace vc_call passes as ample */

/* ---- checks ---- */
#if defined(__GNUC__)
#define VC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define VC_PRINTF(f, a)
#endif

/* VC_EXPECT(cond, fmt, ...): one check; returns cond. */
#define VC_EXPECT(cond, ...) vc_expect_at(__FILE__, __LINE__, (cond), __VA_ARGS__)
bool vc_expect_at(const char *file, int line, bool ok, const char *fmt, ...) VC_PRINTF(4, 5);

/* The label that prefixes what the following checks report, and its text. */
void vc_label(const char *fmt, ...) VC_PRINTF(1, 2);
const char *vc_label_text(void);
/* Starts a verification: vc_problems() counts from 0 again. */
void vc_begin(void);
/* Checks failed since vc_begin (in either mode). */
int vc_problems(void);
/* On: failed checks are expected (a self-test) and neither counted as
 * checks nor as failures; off: the normal mode. */
void vc_invert(bool on);
/* One check, in the normal mode: a self-test found `found` > 0 problems in
 * `what` (a wrong expectation or a tampered call). */
void vc_expect_detected(int found, const char *what);
/* Prints the seed when anything failed and "<suite>: N checks, M failed"
 * (N counts the checks of the normal mode); returns the exit code (1 on any
 * failure). */
int vc_summary(const char *suite);

/* ---- tensors under check ---- */
static inline unsigned char *vc_storage(const tu_tensor *t) { return t->block + TU_CANARY_BYTES; }

typedef enum vc_role {
    VC_INPUT,  /* read only */
    VC_OUTPUT, /* poisoned before a call; written only by a successful run */
    VC_STATE   /* read and updated (a cache): unchanged by a failed call */
} vc_role;

/* The tensors of one call (a test's fixture).  `snap` has n slots:
 * vc_snapshot fills them. */
typedef struct vc_tensors {
    int n;
    tu_tensor *t; /* n tensors; absent ones have block == NULL */
    unsigned char **snap;
    const void *ctx; /* passed to role and name */
    vc_role (*role)(const void *ctx, int i);
    const char *const *names; /* the tensors' names, or NULL: then name() gives them */
    const char *(*name)(const void *ctx, int i, char *buf, size_t size);
} vc_tensors;

/* Saves the storage bytes of every present input and state. */
void vc_snapshot(const vc_tensors *s);
/* Frees the snapshots and every present tensor. */
void vc_tensors_free(const vc_tensors *s);
/* After a failed call: no output byte written, no input or state byte
 * changed, every canary intact. */
void vc_check_failed_call(const vc_tensors *s);
/* True when no byte of the element e (es bytes) was written. */
bool vc_poisoned(const unsigned char *e, size_t es);
/* Bytes of t's storage outside the logical elements of its view (row
 * padding) that differ from `before` (a copy of the storage), or from
 * VC_POISON when before is NULL. */
int64_t vc_padding_changed(const tu_tensor *t, const unsigned char *before);

/* ---- calling ---- */
/* An operator's two phases on its argument struct (which may be NULL). */
typedef struct vc_op {
    const char *name; /* the subject of its error sentences: "<name>: ... ." */
    attnops_status (*query)(const void *args, size_t *workspace_bytes);
    attnops_status (*run)(const void *args, void *workspace, size_t workspace_bytes);
    /* The sentence of the last failure; NULL: attnops_last_error (another
     * API, e.g. aclnn's aclGetRecentErrMsg, has its own). */
    const char *(*last_error)(void);
} vc_op;

typedef enum vc_call_kind {
    VC_CALL,       /* workspace query, then run with VC_WORKSPACE_BYTES */
    VC_NULL_BYTES, /* workspace query with workspace_bytes == NULL */
    VC_WS_SHORT,   /* valid query, run with one byte less than it returned */
    VC_WS_NULL,    /* valid query, run with a NULL workspace of the queried size */
    VC_QUERY,      /* the workspace query alone (an API whose run only runs what its query accepted) */
    VC_CALL_KINDS  /* a test numbers its own kinds from here */
} vc_call_kind;

typedef struct vc_phase {
    const char *name;        /* "workspace query", "run", ... */
    attnops_status st, want; /* got, expected */
    char msg[512];           /* attnops_last_error() right after the call */
} vc_phase;

#define VC_MAX_PHASES 4
typedef struct vc_outcome {
    int n;
    vc_phase ph[VC_MAX_PHASES];
    bool pre;              /* a workspace query of a valid call came first (VC_WS_*) */
    attnops_status pre_st; /* its status and size */
    size_t pre_bytes;
} vc_outcome;

/* Appends one phase: the status st got (want expected) and attnops' last error. */
void vc_record(vc_outcome *oc, const char *name, attnops_status st, attnops_status want);
/* Clears *oc, then calls op on args as `kind` says, every phase expected to
 * return want. */
void vc_call(vc_outcome *oc, const vc_op *op, const void *args, vc_call_kind kind, attnops_status want);

/* ---- verifying ---- */
/* What a failing call must report. */
typedef struct vc_expect {
    attnops_status st;
    const char *name; /* must appear in the sentence (the argument) */
    const char *also; /* NULL, or more text the sentence must contain (a value) */
} vc_expect;

/* One failure case of a test's table, written as rows
 *   X(id, scope, status, name, also, kind)
 * of an X-macro: enum { CASES(VC_CASE_ENUM) N_CASES } numbers them C_<id>,
 * {CASES(VC_CASE_ROW)} initialises a vc_case array. */
typedef struct vc_case {
    const char *name; /* the id */
    int scope;        /* where the case applies (layouts, directions): the test's own */
    vc_expect e;
    int kind; /* how it calls: a vc_call_kind or one of the test's own */
} vc_case;
#define VC_CASE_ENUM(id, ...) C_##id,
#define VC_CASE_ROW(id, scope, st, name, also, kind) {#id, scope, {st, name, also}, kind},

/* An operator's validation test as the shared drivers see it: its table of
 * failure cases and the few functions that build, break, call, check and
 * free one fixture.  A case runs in every scope (layout, direction, ...) it
 * applies to, each time on a fresh fixture. */
typedef struct vc_suite {
    const vc_case *cases;
    int n_cases;
    int n_scopes;
    const char *const *scope_names; /* the labels' first words */
    bool (*applies)(const vc_case *c, int scope);
    void *fixture; /* the test's fixture, reused case after case */
    void (*init)(void *fx, int scope, uint64_t seed);
    /* Breaks case c's rule in a fresh fixture; *e starts as the row's
     * expectation, which a case that names another argument in this scope
     * corrects.  False: the case cannot be made here (it is not counted). */
    bool (*apply)(void *fx, int c, vc_expect *e);
    void (*call)(void *fx, const vc_expect *e);  /* calls as the case says (vc_case.kind), expecting e->st */
    int (*verify)(void *fx, const vc_expect *e); /* checks the last call; returns the problems */
    void (*free)(void *fx);
    const char *title; /* the summary line's words; NULL: "failure cases" */
} vc_suite;

/* Every case of the suite in every scope it applies to (seeded from the
 * suite seed and the case's index): one label "<scope> <case>" each.
 * Prints "<title>: N of M as expected"; returns N. */
int vc_run_failure_cases(const vc_suite *s);

/* Checks every phase of oc: the status it had to return; after a success an
 * empty last error; after a failure one sentence "<op>: ... ." (or, when
 * alt_op is not NULL, "<alt_op>: ... .") containing e->name and e->also.  A
 * preparatory workspace query must have succeeded with a positive size. */
void vc_check_outcome(const vc_outcome *oc, const vc_expect *e, const char *op, const char *alt_op);
/* The same with n accepted operators ops[0..n-1]. */
void vc_check_outcome_any(const vc_outcome *oc, const vc_expect *e, const char *const *ops, int n);

/* A valid call: snapshots s, queries the workspace twice (status 0, the same
 * size), fails once (NULL args, so that the run has an error to clear), runs
 * in exactly the queried workspace guarded by canaries (status 0, an empty
 * last error, nothing written outside it), then checks every canary of s and
 * every input unchanged.  Outputs and states are the caller's to check.
 * Returns the run's status. */
attnops_status vc_check_valid_run(const vc_op *op, const void *args, const vc_tensors *s);
/* One check: the workspace query of a valid call succeeds with a size in
 * (0, VC_WORKSPACE_BYTES], so that vc_call's workspace is ample for it. */
void vc_check_workspace_fits(const vc_op *op, const void *args);

/* ---- the checker must be able to fail ---- */
/* One byte flipped behind the checker's back, checked, flipped back. */
typedef struct vc_tamper {
    unsigned char *byte;
    unsigned char flip; /* xor mask */
    const char *what;   /* "a written pooled_key byte" */
    const char *note;   /* NULL, or a line for stderr first (a complaint that follows is intended) */
} vc_tamper;

#define VC_MAX_TAMPERS 4
/* A failing call the self-test knows the right expectation of: a suite's
 * fixture (suite set: its call and verify are used) or a context with its
 * own call and verify. */
typedef struct vc_subject {
    const vc_suite *suite;
    void *ctx;
    void (*call)(void *ctx, const vc_expect *e);  /* calls again, expecting e */
    int (*verify)(void *ctx, const vc_expect *e); /* checks the last call against e; returns the problems */
    vc_expect right;
    attnops_status wrong_st;          /* a status the call does not return */
    const char *wrong_name;           /* an argument the sentence does not name */
    const char *wrong_also;           /* a text it does not contain */
    vc_tamper tamper[VC_MAX_TAMPERS]; /* those with byte != NULL */
} vc_subject;

/* Runs the subject's call with the right expectation (no problem may be
 * found), then with one wrong expectation at a time (status, name, text) and
 * under each tampering, and checks made-up messages that break the sentence
 * rule (another operator, no colon, no final period): every one must be
 * detected.  One check each; returns how many passed. */
int vc_self_test(const vc_subject *s);
/* One more wrong expectation for the subject's call (only suite, ctx, call
 * and verify are used): calls it expecting `wrong`; a problem must be found.
 * One check; returns 1 when it passed. */
int vc_self_test_wrong(const vc_subject *s, const vc_expect *wrong, const char *what);
/* The byte `k` past the end of t's data: in its back canary. */
static inline unsigned char *vc_canary_byte(const tu_tensor *t, size_t k)
{
    return t->block + TU_CANARY_BYTES + t->data_bytes + k;
}

#endif
