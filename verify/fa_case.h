/* One FlashAttention test problem: its tensors (with canaries), filled from
 * a seed, and the forward/backward argument structs that point at them.
 * Shared by the accuracy, determinism and demo programs. */
#ifndef ATTNOPS_FA_CASE_H
#define ATTNOPS_FA_CASE_H

#include "fa_case_shape.h"
#include "testutil.h"

/* The golden's mask, built independently of the library from the triu/tril
 * offsets of spec 3.2/3.3: 1 = masked.  prefix is used by modes 5/6. */
bool fa_case_golden_masked(int64_t mode, int64_t S1, int64_t S2, int64_t pre, int64_t next, int64_t prefix,
                           int64_t i, int64_t j);

typedef struct fa_case {
    fa_case_shape shape;
    uint64_t seed;
    tu_tensor q, k, v, dy;            /* inputs                               */
    tu_tensor out, smax, ssum;        /* forward outputs (also backward input) */
    tu_tensor dq, dk, dv;             /* backward outputs                     */
    tu_tensor qr, kr, dqr, dkr;       /* MLA rope inputs and their gradients  */
    tu_tensor dsq, dsk, dsv, dsdy, dso; /* FP8 de-quantisation scales        */
    tu_tensor mask, pse, prefix, q_start, kv_start; /* optional inputs      */
    tu_tensor cu_q, cu_kv;            /* TND cumulative lengths               */
    tu_tensor sink, dsink;            /* attention sinks f32 [N1], gradient  */
    int64_t T1, T2;                   /* TND total rows                       */
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
/* dq, dk, dv (and dq_rope, dk_rope with rope) likewise: fills
 * fa_case_backward_outputs(fast) rows. */
#define FA_CASE_MAX_BWD_OUTPUTS 5
int fa_case_backward_outputs(const fa_case *c);
bool fa_case_check_backward(const fa_case *fast, const fa_case *ref, const char *label, const char *repro,
                            fa_output_check rows[FA_CASE_MAX_BWD_OUTPUTS]);
/* Gives `dst` the forward outputs of `src`, so that two backward chains
 * consume one forward (as a harness feeds a device the golden's). */
void fa_case_copy_forward(fa_case *dst, const fa_case *src);

#endif
