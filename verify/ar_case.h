/* One Block Attention Residuals test problem: its inputs, generated from a
 * seed the way the seed's _make_inputs builds them (spec
 * keypool-attnres-pypto B.3), and one chain through a chosen
 * implementation: the forward, then the backward fed with that forward's
 * own caches (the seed's cascade).  Shared by tests/test_attnres.c and the
 * harness (`attnops run` / `golden`). */
#ifndef ATTNOPS_AR_CASE_H
#define ATTNOPS_AR_CASE_H

#include "testutil.h"

#define AR_CASE_MAX_L 128 /* 127 blocks and the partial block */
/* A chain's outputs: h, rms, alpha, L gradients of rows, dw, dgamma. */
#define AR_CASE_MAX_OUTPUTS (AR_CASE_MAX_L + 5)

typedef struct ar_case_spec {
    attnops_dtype dtype; /* bf16, f16 or f32: activations, proj_weight, gamma */
    int64_t B, T, N, D;
    bool partial;        /* a partial block (L = N + 1) */
    bool rmsnorm;        /* enable_rmsnorm */
    bool random_gamma;   /* gamma standard normal; false: ones, the seed's */
    double scale;
    double eps;          /* rmsnorm_eps (the API's default: 1e-6) */
    /* storage knob of the tests (false: dense): every input and output with
     * element stride 2 and padded rows */
    bool strided;
} ar_case_spec;

typedef struct ar_case {
    ar_case_spec spec;
    int64_t L;
    tu_tensor v[AR_CASE_MAX_L]; /* the blocks, then the partial block */
    tu_tensor grad_h, w, gamma; /* w: proj_weight */
} ar_case;

/* One chain's outputs: its forward (rms only with RMSNorm), then its
 * backward (dv[l]: the gradient of v[l]; dgamma only with RMSNorm). */
typedef struct ar_chain {
    tu_tensor h, rms, alpha, dv[AR_CASE_MAX_L], dw, dgamma;
} ar_chain;

/* The seed's _make_inputs from `seed`: the blocks, the partial block and
 * grad_h standard normal in the dtype, proj_weight randn / sqrt(4D) (the
 * division in f32, the result in the dtype), gamma ones (or standard normal
 * with random_gamma).  The large tensors are filled in parallel slices with
 * their own streams, so the values do not depend on the thread count. */
void ar_case_init(ar_case *c, const ar_case_spec *spec, uint64_t seed);
void ar_case_free(ar_case *c);

/* One chain with `impl` into a fresh *out (ar_chain_free it, whatever the
 * status): the forward, then the backward consuming the forward's rms and
 * alpha.  Workspace and output canaries are TU_CHECKed. */
attnops_status ar_case_run(const ar_case *c, attnops_impl impl, int threads, ar_chain *out);
void ar_chain_free(ar_chain *r);

/* A chain's outputs allocated (untouched) into a fresh *r, and its two
 * calls' arguments over c's inputs and r's outputs (the argument structs
 * point into k: keep it in place).  ar_case_run uses them; so does the
 * harness's perf mode, which times the calls. */
typedef struct ar_case_calls {
    const attnops_tensor *blocks[AR_CASE_MAX_L], *grads[AR_CASE_MAX_L];
    attnops_attn_res_fwd_args fwd;
    attnops_attn_res_bwd_args bwd;
} ar_case_calls;
void ar_chain_alloc(const ar_case *c, ar_chain *r);
void ar_case_calls_init(const ar_case *c, ar_chain *r, attnops_impl impl, int threads, ar_case_calls *k);

/* An output of a chain with the harness's name for it. */
typedef struct ar_output {
    char name[24];
    tu_tensor *t;
} ar_output;

/* The outputs of chain r, the seed's compared ones first in its order --
 * h, rms, alpha, grad_partial_block, grad_block_00, grad_proj_weight,
 * grad_rmsnorm_gamma (those present; *seed_n of them) -- then every other
 * block's gradient, grad_block_01 ...  Returns the count. */
int ar_chain_outputs(const ar_case *c, ar_chain *r, ar_output *out, int *seed_n);

#endif
