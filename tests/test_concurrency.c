/* Concurrent use (docs/RELIABILITY.md "Threads"): 16 user
 * threads call the operators at once -- FlashAttention forward + backward
 * (with dropout, TND, MLA rope, a causal mask, deterministic mode), KeyPool
 * and AttnRes chains on the fast kernels and the references -- each thread
 * its own problem with its own OpenMP thread count, ten rounds each; and
 * four threads that make refused calls between good ones, checking that the
 * thread-local sentence is their own (it names a value only that thread
 * used) and is cleared by the next good call.
 *
 * The threads start cold (nothing has run in the process before them, so
 * the ISA choice and the GEMM set-up race too); afterwards every job runs
 * again alone and each round's outputs must be bit for bit the alone run's.
 * The outputs are compared by FNV-1a digests of their bytes, one per output,
 * so a mismatch names the output.
 *
 * The team-size budget itself (src/core/threads.c) is checked by
 * test_team_budget.c; this test checks that sharing it changes no bit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ar_case.h"
#include "fa_case.h"
#include "kp_case.h"
#include "suite.h"

enum { USER_THREADS = 16, ROUNDS = 10, REFUSED_CALLS = 60, MAX_OUTPUTS = 16 };

typedef enum job_kind { JOB_FA, JOB_KP, JOB_AR, JOB_FA_REFUSED, JOB_AR_REFUSED } job_kind;

typedef struct job {
    job_kind kind;
    const char *fa_spec;     /* JOB_FA: fa_case_parse form */
    int deterministic;       /* JOB_FA: the backward's flag */
    kp_case_spec kp;         /* JOB_KP */
    ar_case_spec ar;         /* JOB_AR */
    attnops_impl impl;       /* JOB_KP, JOB_AR (JOB_FA: AUTO forward, CPU backward) */
    int threads;             /* num_threads of every call */
} job;

/* One run's outputs, by digest. */
typedef struct digests {
    int n;
    char name[MAX_OUTPUTS][24];
    uint64_t value[MAX_OUTPUTS];
    char error[256]; /* empty when the run went as planned */
} digests;

static const job JOBS[USER_THREADS] = {
    {JOB_FA, "B=1,N1=2,N2=1,S1=130,S2=200,D=64,Dv=64,dtype=bf16,layout=BSND", 0, .threads = 2},
    {JOB_FA, "B=2,N1=4,N2=2,S1=97,S2=129,D=32,Dv=32,dtype=f16,layout=SBH,pad=3", 0, .threads = 1},
    {JOB_FA, "B=1,N1=1,N2=1,S1=300,S2=300,D=64,Dv=64,dtype=f32,layout=BNSD,mode=2,mask=compressed", 0, .threads = 3},
    {JOB_FA, "B=1,N1=2,N2=1,S1=200,S2=250,D=32,Dv=32,dtype=bf16,layout=BSND,keep=0.5,seed=3,offset=16", 0,
     .threads = 2},
    {JOB_FA, "N1=4,N2=2,D=32,Dv=32,dtype=bf16,layout=TND,seqs=60:0:90:7,kvseqs=40:5:90:0,keep=0.8,seed=5,offset=0",
     0, .threads = 2},
    {JOB_FA, "B=1,N1=2,N2=2,S1=150,S2=150,D=64,Dv=64,rope=32,dtype=bf16,layout=BNSD,mode=3,mask=compressed", 1,
     .threads = 4},
    {JOB_KP, .kp = {.B = 2, .len = {9, 9}, .start = {3, 0}, .cmp_ratio = 4, .block_size = 4, .H = 512, .D = 64,
                    .dtype = ATTNOPS_DTYPE_BF16},
     .impl = ATTNOPS_IMPL_AUTO, .threads = 2},
    {JOB_KP, .kp = {.th = true, .B = 3, .len = {6, 3, 0}, .start = {5, 2, 4}, .cmp_ratio = 8, .block_size = 2,
                    .scramble = true, .norm = true, .H = 512, .D = 64, .dtype = ATTNOPS_DTYPE_F16},
     .impl = ATTNOPS_IMPL_AUTO, .threads = 3},
    {JOB_KP, .kp = {.B = 1, .len = {17}, .start = {16}, .cmp_ratio = 16, .block_size = 8, .norm = true, .H = 256,
                    .D = 32, .dtype = ATTNOPS_DTYPE_BF16},
     .impl = ATTNOPS_IMPL_REFERENCE, .threads = 2},
    {JOB_AR, .ar = {.dtype = ATTNOPS_DTYPE_BF16, .B = 1, .T = 64, .N = 4, .D = 256, .partial = true, .rmsnorm = true,
                    .scale = 1.0, .eps = 1e-6},
     .impl = ATTNOPS_IMPL_AUTO, .threads = 2},
    {JOB_AR, .ar = {.dtype = ATTNOPS_DTYPE_F32, .B = 2, .T = 33, .N = 3, .D = 128, .rmsnorm = true,
                    .random_gamma = true, .scale = 0.5, .eps = 1e-6, .strided = true},
     .impl = ATTNOPS_IMPL_AUTO, .threads = 1},
    {JOB_AR, .ar = {.dtype = ATTNOPS_DTYPE_F16, .B = 1, .T = 40, .N = 5, .D = 64, .partial = true, .scale = 1.0,
                    .eps = 1e-6},
     .impl = ATTNOPS_IMPL_REFERENCE, .threads = 3},
    {JOB_FA_REFUSED, .threads = 2}, {JOB_FA_REFUSED, .threads = 1},
    {JOB_AR_REFUSED, .threads = 2}, {JOB_AR_REFUSED, .threads = 1},
};

static uint64_t fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void add(digests *d, const char *name, const tu_tensor *t)
{
    if (!t->block || d->n == MAX_OUTPUTS) return;
    snprintf(d->name[d->n], sizeof d->name[d->n], "%s", name);
    d->value[d->n++] = fnv1a(t->view.data, t->data_bytes);
}

static void fail(digests *d, const char *what, attnops_status st)
{
    if (!d->error[0])
        snprintf(d->error, sizeof d->error, "%s returned %d: %s", what, (int)st, attnops_last_error());
}

static void run_fa(const job *j, uint64_t seed, digests *d)
{
    fa_case_shape s;
    if (!fa_case_parse(j->fa_spec, &s)) {
        snprintf(d->error, sizeof d->error, "bad spec %s", j->fa_spec);
        return;
    }
    fa_case c;
    fa_case_init(&c, &s, seed);
    attnops_status st = fa_case_forward(&c, ATTNOPS_IMPL_AUTO, j->threads, 0);
    if (st != ATTNOPS_SUCCESS) fail(d, "forward", st);
    st = fa_case_backward(&c, ATTNOPS_IMPL_CPU, j->threads, j->deterministic);
    if (st != ATTNOPS_SUCCESS) fail(d, "backward", st);
    add(d, "attention_out", &c.out), add(d, "softmax_max", &c.smax), add(d, "softmax_sum", &c.ssum);
    add(d, "dq", &c.dq), add(d, "dk", &c.dk), add(d, "dv", &c.dv), add(d, "dq_rope", &c.dqr);
    add(d, "dk_rope", &c.dkr);
    fa_case_free(&c);
}

static void run_kp(const job *j, uint64_t seed, digests *d)
{
    kp_case c;
    kp_case_init(&c, &j->kp, seed);
    tu_tensor pooled;
    const attnops_status st = kp_case_run(&c, ATTNOPS_KEY_POOL_CAPACITY_CURRENT, j->impl, j->threads, &pooled);
    if (st != ATTNOPS_SUCCESS) fail(d, "key_pool", st);
    add(d, "pooled_key", &pooled), add(d, "state_cache", &c.cache);
    tu_tensor_free(&pooled);
    kp_case_free(&c);
}

static void run_ar(const job *j, uint64_t seed, digests *d)
{
    ar_case c;
    ar_case_init(&c, &j->ar, seed);
    ar_chain r;
    const attnops_status st = ar_case_run(&c, j->impl, j->threads, &r);
    if (st != ATTNOPS_SUCCESS) fail(d, "attn_res chain", st);
    ar_output outs[AR_CASE_MAX_OUTPUTS];
    int seed_n;
    const int n = ar_chain_outputs(&c, &r, outs, &seed_n);
    for (int i = 0; i < n; i++) add(d, outs[i].name, outs[i].t);
    ar_chain_free(&r);
    ar_case_free(&c);
}

/* Refused calls, each with a value only this thread uses, between good
 * calls: the sentence must name that value, and a good call clears it. */
static void run_refused(const job *j, int index, digests *d)
{
    fa_case_shape s;
    fa_case fa;
    ar_case ar;
    const ar_case_spec small_ar = {.dtype = ATTNOPS_DTYPE_BF16, .B = 1, .T = 4, .N = 2, .D = 16, .scale = 1.0,
                                   .eps = 1e-6};
    if (j->kind == JOB_FA_REFUSED) {
        fa_case_parse("B=1,N1=2,N2=1,S1=8,S2=8,D=16,Dv=16,dtype=bf16,layout=BSND", &s);
        fa_case_init(&fa, &s, 7);
    } else {
        ar_case_init(&ar, &small_ar, 7);
    }
    for (int i = 0; i < REFUSED_CALLS && !d->error[0]; i++) {
        const long long mine = 1000 + 100 * index + i; /* unique to this thread and call */
        char expect[32];
        snprintf(expect, sizeof expect, j->kind == JOB_FA_REFUSED ? "head_num is %lld" : "num_threads is -%lld",
                 mine);
        attnops_status st;
        if (j->kind == JOB_FA_REFUSED) {
            fa.fwd.p.head_num = mine;
            size_t bytes;
            st = attnops_flash_attention_score_workspace_size(&fa.fwd, &bytes);
            fa.fwd.p.head_num = s.N1;
        } else {
            ar_chain r;
            st = ar_case_run(&ar, ATTNOPS_IMPL_AUTO, (int)-mine, &r);
            ar_chain_free(&r);
        }
        if (st != ATTNOPS_ERR_PARAM_INVALID || !strstr(attnops_last_error(), expect)) {
            snprintf(d->error, sizeof d->error, "refused call %d: status %d, sentence \"%s\" (wanted \"%s\")", i,
                     (int)st, attnops_last_error(), expect);
            break;
        }
        if (j->kind == JOB_FA_REFUSED) {
            st = fa_case_forward(&fa, ATTNOPS_IMPL_AUTO, j->threads, 0);
        } else {
            ar_chain r;
            st = ar_case_run(&ar, ATTNOPS_IMPL_AUTO, j->threads, &r);
            ar_chain_free(&r);
        }
        if (st != ATTNOPS_SUCCESS || attnops_last_error()[0])
            snprintf(d->error, sizeof d->error, "good call %d after a refused one: status %d, sentence \"%s\"", i,
                     (int)st, attnops_last_error());
    }
    if (j->kind == JOB_FA_REFUSED) fa_case_free(&fa);
    else ar_case_free(&ar);
}

static void run_job(int index, digests *d)
{
    const job *j = &JOBS[index];
    const uint64_t seed = tu_suite_seed() + (uint64_t)index;
    memset(d, 0, sizeof *d);
    switch (j->kind) {
    case JOB_FA: run_fa(j, seed, d); break;
    case JOB_KP: run_kp(j, seed, d); break;
    case JOB_AR: run_ar(j, seed, d); break;
    default: run_refused(j, index, d); break;
    }
}

typedef struct worker {
    int index;
    pthread_barrier_t *start;
    digests rounds[ROUNDS];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int r = 0; r < ROUNDS; r++) run_job(w->index, &w->rounds[r]);
    return NULL;
}

/* The first output whose digest differs, or NULL. */
static const char *first_difference(const digests *a, const digests *b)
{
    if (a->n != b->n) return "the number of outputs";
    for (int i = 0; i < a->n; i++)
        if (a->value[i] != b->value[i]) return a->name[i];
    return NULL;
}

static bool check_job(int index, const worker *w)
{
    digests alone;
    run_job(index, &alone);
    bool ok = true;
    if (alone.error[0]) {
        TU_CHECK(false, "job %d alone: %s", index, alone.error);
        return false;
    }
    for (int r = 0; r < ROUNDS; r++) {
        const digests *d = &w->rounds[r];
        if (d->error[0]) {
            TU_CHECK(false, "job %d, round %d of 16 threads: %s", index, r, d->error);
            ok = false;
            continue;
        }
        const char *diff = first_difference(d, &alone);
        TU_CHECK(!diff, "job %d, round %d of 16 threads: %s differs from the call made alone", index, r, diff);
        ok = ok && !diff;
    }
    return ok;
}

int main(void)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, USER_THREADS);
    static worker workers[USER_THREADS];
    pthread_t ids[USER_THREADS];
    for (int i = 0; i < USER_THREADS; i++) {
        workers[i] = (worker){.index = i, .start = &start};
        if (pthread_create(&ids[i], NULL, work, &workers[i]) != 0) {
            fprintf(stderr, "FAIL: cannot start user thread %d\n", i);
            return 1;
        }
    }
    for (int i = 0; i < USER_THREADS; i++) pthread_join(ids[i], NULL);
    pthread_barrier_destroy(&start);

    int passed = 0;
    for (int i = 0; i < USER_THREADS; i++) {
        const bool ok = check_job(i, &workers[i]);
        printf("%s job %2d (%d outputs, %d OpenMP threads)\n", ok ? "ok  " : "FAIL", i, workers[i].rounds[0].n,
               JOBS[i].threads);
        passed += ok;
    }

    /* The check bites: a changed digest is seen. */
    digests a = workers[0].rounds[0], b = a;
    b.value[0] ^= 1;
    TU_CHECK(first_difference(&a, &b) != NULL, "a changed output digest went unnoticed");
    return tu_finish("test_concurrency", passed);
}
