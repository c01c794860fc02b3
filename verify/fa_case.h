/* One FlashAttention test problem: its tensors (with canaries), filled from
 * a seed, and the forward/backward argument structs that point at them.
 * Shared by the accuracy, determinism and demo programs. */
#ifndef ATTNOPS_FA_CASE_H
#define ATTNOPS_FA_CASE_H

#include "testutil.h"

typedef struct fa_case_shape {
    int64_t B, N1, N2, S1, S2, D, Dv;
    attnops_dtype dtype;
    attnops_layout layout;
    int64_t pad;  /* > 0: every tensor gets row padding (non-contiguous views) */
    double scale; /* 0: 1/sqrt(D) */
} fa_case_shape;

typedef struct fa_case {
    fa_case_shape shape;
    uint64_t seed;
    tu_tensor q, k, v, dy;            /* inputs                               */
    tu_tensor out, smax, ssum;        /* forward outputs (also backward input) */
    tu_tensor dq, dk, dv;             /* backward outputs                     */
    attnops_fa_fwd_args fwd;
    attnops_fa_bwd_args bwd;
} fa_case;

/* Allocates and fills q, k, v, dy from `seed`; outputs are zeroed. */
void fa_case_init(fa_case *c, const fa_case_shape *shape, uint64_t seed);
void fa_case_free(fa_case *c);

/* Runs the forward / backward with the given implementation and thread
 * count, through the two-phase API with a canary-guarded workspace.
 * Returns the status; a broken workspace canary is reported and counted. */
attnops_status fa_case_forward(fa_case *c, attnops_impl impl, int threads, int deterministic);
attnops_status fa_case_backward(fa_case *c, attnops_impl impl, int threads, int deterministic);

/* How the fast kernel's outputs are judged against the reference's (one
 * row per output; the rule is docs/NUMERICS.md "Tolerances"). */
typedef struct fa_output_check {
    const char *name;
    tu_compare_result result;
    tu_tolerance tol;
} fa_output_check;

/* attention_out, softmax_max, softmax_sum of `fast` vs `ref`.  `label`
 * prefixes mismatch reports, `repro` (may be NULL) ends them.  True when all
 * three pass. */
bool fa_case_check_forward(const fa_case *fast, const fa_case *ref, const char *label, const char *repro,
                           fa_output_check rows[3]);
/* dq, dk, dv likewise. */
bool fa_case_check_backward(const fa_case *fast, const fa_case *ref, const char *label, const char *repro,
                            fa_output_check rows[3]);
/* Gives `dst` the forward outputs of `src`, so that two backward chains
 * consume one forward (as a harness feeds a device the golden's). */
void fa_case_copy_forward(fa_case *dst, const fa_case *src);

/* "B=1 N1=2 N2=1 S1=7 S2=9 D=16 Dv=16 dtype=bf16 layout=BSH pad=3" */
void fa_case_describe(const fa_case_shape *s, char *buf, size_t n);

/* Shape of a q-like tensor with head dim d in the case's layout. */
int fa_case_tensor_shape(const fa_case_shape *s, int64_t b, int64_t sq, int64_t n, int64_t d, int64_t *shape);

#endif
