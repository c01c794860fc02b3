/* One FlashAttention test problem: its tensors (with canaries), filled from
 * a seed, and the forward/backward argument structs that point at them.
 * Shared by the accuracy, determinism and demo programs. */
#ifndef ATTNOPS_FA_CASE_H
#define ATTNOPS_FA_CASE_H

#include "testutil.h"

/* The atten_mask tensor a case passes. */
typedef enum fa_case_mask {
    FA_CASE_MASK_NONE = 0,
    FA_CASE_MASK_SS,          /* [S1, S2]                */
    FA_CASE_MASK_11SS,        /* [1, 1, S1, S2]          */
    FA_CASE_MASK_B1SS,        /* [B, 1, S1, S2]          */
    FA_CASE_MASK_BNSS,        /* [B, N1, S1, S2]         */
    FA_CASE_MASK_COMPRESSED   /* 2048 x 2048 (3072 x 2048 for mode 6) */
} fa_case_mask;

/* The pse tensor a case passes. */
typedef enum fa_case_pse {
    FA_CASE_PSE_NONE = 0,
    FA_CASE_PSE_BNSS, FA_CASE_PSE_BN1S, FA_CASE_PSE_1NSS,
    FA_CASE_PSE_BNHS, FA_CASE_PSE_1NHS,  /* compressed ALiBi: needs S1 = S2 > 1024 and a causal mask */
    FA_CASE_PSE_SLOPES_N, FA_CASE_PSE_SLOPES_BN   /* pse_type 2/3 */
} fa_case_pse;

typedef struct fa_case_shape {
    int64_t B, N1, N2, S1, S2, D, Dv;
    attnops_dtype dtype;      /* q, k, v, dy; f8_e4m3fn / f8_e5m2: FP8 inputs (spec 6) */
    attnops_dtype out_dtype;  /* FP8: attention_out, dq, dk, dv, pse (f16 or bf16); else = dtype */
    attnops_layout layout;
    int64_t pad;  /* > 0: every tensor gets row padding (non-contiguous views) */
    int64_t Dr;   /* > 0: MLA, query_rope/key_rope with head dim Dr after D */
    double scale; /* 0: 1/sqrt(D + Dr) */
    /* masks (spec 3); mode 1 draws a random mask with some fully masked rows */
    int64_t sparse_mode;
    fa_case_mask mask;
    attnops_dtype mask_dtype; /* bool or u8; 0: u8 for f16 inputs, bool otherwise */
    int64_t pre, next;     /* as given; modes 0 and 4 */
    int nprefix;           /* modes 5/6: > 0 gives prefix[b]; 0 draws them */
    int64_t prefix[32];
    int64_t inner_precise;
    /* position bias (spec 4) */
    fa_case_pse pse;
    int64_t pse_type;      /* ignored without pse */
    int64_t q_start, kv_start;
    /* dropout (spec 5): keep_prob 0 means 1 (none) */
    double keep_prob;
    int64_t seed, offset;
    /* TND: per-batch lengths (not cumulative, as the seed's tables give
     * them); B = nseq, S1/S2 are set to the longest.  kv lengths default to
     * the query lengths. */
    int nseq;
    int64_t seq_q[32], seq_kv[32];
} fa_case_shape;

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

/* "B=1,N1=2,N2=1,S1=7,S2=9,D=16,Dv=16,dtype=bf16,layout=BSH,pad=3[,mode=..,mask=..]..."
 * fa_case_parse reads the same form (any subset; the rest defaults). */
void fa_case_describe(const fa_case_shape *s, char *buf, size_t n);
bool fa_case_parse(const char *spec, fa_case_shape *s);

/* Shape of a q-like tensor with head dim d in the case's layout. */
int fa_case_tensor_shape(const fa_case_shape *s, int64_t b, int64_t sq, int64_t n, int64_t d, int64_t *shape);

#endif
