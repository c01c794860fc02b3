/* The operator driver table: one driver per operator, and everything above
 * the library -- the case parser, `attnops run / golden / compare / list
 * --support`, the export's manifest and the benchmarks -- loops over it
 * without naming an operator.  The models: ggml's tests/test-backend-ops.cpp
 * (one case description serves the test, perf and support modes) and
 * oneDNN benchdnn's per-primitive drivers.
 *
 * A driver turns a parsed case into chains -- the golden (the reference),
 * the kernel (the implementation under test) and, for the triple rule, the
 * benchmark (ATTNOPS_IMPL_BENCHMARK) -- each on the same inputs made from
 * the case's data seed, and names the case's tensors with their role in
 * each chain.  Adding an operator is its library code, one driver file
 * (verify/driver_<op>.c), its row in harness_drivers[], its spec in
 * harness_case's union and its tests. */
#ifndef ATTNOPS_VERIFY_HARNESS_DRIVER_H
#define ATTNOPS_VERIFY_HARNESS_DRIVER_H

#include "harness_case.h"
#include "harness_parse.h"

struct cJSON;

typedef enum harness_chain {
    HARNESS_GOLDEN,
    HARNESS_KERNEL,
    HARNESS_BENCH,
    HARNESS_CHAIN_COUNT
} harness_chain;

/* One tensor of a case across its chains. */
typedef struct harness_tensor {
    const char *name; /* its file name in an export (<case>/<name>.npy) */
    const char *role; /* input (golden only) | forward (the backward's input) | output | mask */
    const attnops_tensor *view[HARNESS_CHAIN_COUNT]; /* NULL where that chain did not run or has none */
    /* Optional [numel]: the elements that count (the rest are undefined:
     * not judged, exported as 0); counted_by names the mask tensor that
     * says so in the manifest. */
    const uint8_t *counted;
    const char *counted_by;
    bool judged;          /* attnops run judges it: an output, or a forward its kernel chain computed itself */
    bool summarised;      /* judged into one summary line unless it fails */
    const char *verdict;  /* its name in verdict lines where that differs from name, else NULL */
} harness_tensor;

/* What a run computes. */
typedef struct harness_run_options {
    bool kernel;         /* run the kernel chain ... */
    attnops_impl impl;   /* ... with this implementation */
    bool bench;          /* run the benchmark chain (the triple rule) */
    bool auto_grad;      /* a backward's kernel and benchmark chains run their own forward (the seed's
                            auto_grad); else they consume the golden's (only_grad) */
    int threads;
} harness_run_options;

/* One case's chains, made by driver->run: its tensors[] are valid until
 * harness_run_free. */
typedef struct harness_run {
    const struct harness_driver *driver;
    const harness_case *hc;
    int ntensors, capacity;
    harness_tensor *tensors;
    struct cJSON *attributes; /* the manifest's "attributes": the operator's own, and data_seed */
    void *state;              /* the driver's */
} harness_run;

/* Perf mode (bench/bench_ops.c, the ggml test-backend-ops "perf" mode): a
 * case's inputs and outputs made once for one implementation, then each of
 * the operator's phases ("fwd", "bwd"; a single call: "call") called again
 * and again.  Phases run in order, so a later one may read an earlier one's
 * outputs (a backward reads its forward's caches). */
typedef struct harness_perf {
    void *state; /* the driver's */
    /* set by perf_phase for its phase: */
    double in_bytes, out_bytes; /* what one call must read and write, each element once */
    double flops;               /* its FLOPs (dense-equivalent); 0 where bytes bound it */
    attnops_dtype gemm_dtype;   /* the operand dtype of its GEMMs, whose peak bounds it (0: none) */
    size_t workspace_bytes;
} harness_perf;

typedef struct harness_driver {
    const char *name;  /* as case files and manifests name the operator */
    const char *title; /* the operator's CANN name(s), for people */
    /* What the library runs it with, for `attnops list --support`: per
     * implementation (ATTNOPS_IMPL_REFERENCE, _CPU, _BENCHMARK) the I/O
     * dtypes it takes (0-terminated; NULL: no such implementation), and
     * how the cpu implementation serves them where that is not plainly
     * (NULL: it is).  example: a small case of that dtype (JSON), which
     * test_harness_case runs through every listed implementation, so the
     * list stays true. */
    const attnops_dtype *dtypes[ATTNOPS_IMPL_BENCHMARK + 1];
    const char *cpu_note;
    void (*example)(attnops_dtype dtype, char *json, size_t n);
    /* Its chains run a forward that feeds a backward: `attnops run --mode`
     * (only_grad / auto_grad) applies. */
    bool grad_modes;
    /* The triple rule's thresholds are those of this dtype for every output
     * (AttnRes: f32, as its seed compares f32 copies); 0: each output's own. */
    attnops_dtype triple_dtype;
    /* The case's fields (all but "op" and "name") into h's spec, data_seed
     * and rule; false after a message in p. */
    bool (*parse)(harness_parse *p, const struct cJSON *obj, harness_case *h);
    /* A rough upper bound of the bytes its tensors need (as doubles: the
     * dims are untrusted), checked against memory before anything is made. */
    double (*bytes)(const harness_case *h);
    /* Makes the inputs and runs the chains o asks for, the golden always.
     * On a failing call: that status (attnops_last_error says why) and
     * nothing to free. */
    attnops_status (*run)(const harness_case *hc, const harness_run_options *o, harness_run *r);
    void (*free)(harness_run *r);
    /* Perf mode: phases (NULL-terminated); perf_setup makes the inputs and
     * outputs of impl's calls; perf_phase sets p's work and workspace for
     * phase i; perf_call makes one call of it.  NULL perf_setup: no perf
     * mode. */
    const char *const *phases;
    attnops_status (*perf_setup)(const harness_case *hc, attnops_impl impl, int threads, harness_perf *p);
    attnops_status (*perf_phase)(harness_perf *p, int phase);
    attnops_status (*perf_call)(harness_perf *p, int phase, void *workspace);
    void (*perf_free)(harness_perf *p);
    /* The elements of an output of `shape` that count, from its counted_by
     * tensor's values (as doubles); a malloc'ed 0/1 mask, or NULL when the
     * values do not fit the shape.  NULL hook: no output of this operator
     * has a counted_by tensor. */
    uint8_t *(*counted)(const double *mask_values, int64_t n, int rank, const int64_t *shape);
} harness_driver;

extern const harness_driver driver_flash_attention_grad, driver_keypool, driver_attnres, driver_fia;

/* Indexed by harness_op. */
extern const harness_driver *const harness_drivers[HARNESS_OP_COUNT];

static inline const harness_driver *harness_driver_of(harness_op op) { return harness_drivers[op]; }

/* driver->run, then the attributes' data_seed; r->driver and r->hc set. */
attnops_status harness_run_case(const harness_case *hc, const harness_run_options *o, harness_run *r);
void harness_run_free(harness_run *r);

/* For drivers: appends a tensor (the views of the chains that have it) and
 * returns it for the optional fields. */
harness_tensor *harness_add(harness_run *r, const char *name, const char *role, const attnops_tensor *golden,
                            const attnops_tensor *kernel, const attnops_tensor *bench);

#endif
