/* The FlashAttention case descriptor (benchdnn's problem descriptors are
 * the model): what one problem is (shapes, dtypes, layout, mask, position
 * bias, dropout, TND lengths) and its one text form,
 *
 *   "B=1,N1=2,N2=1,S1=7,S2=9,D=16,Dv=16,dtype=bf16,layout=BSH,pad=3[,mode=..,mask=..]..."
 *
 * read by the tests, the CLI (harness JSON cases build one), bench_fa and,
 * as JSON written by bench_fa, the Python peers.  No tensors here: the
 * tests' problem with its data is fa_case.h. */
#ifndef ATTNOPS_FA_CASE_SHAPE_H
#define ATTNOPS_FA_CASE_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnops.h"

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
    double softcap;        /* > 0: the scores' soft-capping (include/attnops.h); 0: none */
    bool sink;             /* attention sinks: f32 [N1] logits drawn ~ 2 N(0, 1), and dsink */
    /* dropout (spec 5): keep_prob 0 means 1 (none) */
    double keep_prob;
    int64_t seed, offset;
    /* TND: per-batch lengths (not cumulative, as the seed's tables give
     * them); B = nseq, S1/S2 are set to the longest.  kv lengths default to
     * the query lengths. */
    int nseq;
    int64_t seq_q[32], seq_kv[32];
} fa_case_shape;

/* fa_case_describe writes the text form of every field that differs from
 * "none"; fa_case_parse reads any subset of the keys (the rest take the
 * defaults B = N1 = N2 = S1 = S2 = 1, D = Dv = 16, f32, BNSD, out f16,
 * pse_type 1) and returns false on an unknown key, an unknown name or a
 * number that is not one. */
void fa_case_describe(const fa_case_shape *s, char *buf, size_t n);
bool fa_case_parse(const char *spec, fa_case_shape *s);

/* Shape of a q-like tensor with head dim d in the case's layout (sq = T in
 * TND); returns the rank. */
int fa_case_tensor_shape(const fa_case_shape *s, int64_t b, int64_t sq, int64_t n, int64_t d, int64_t *shape);

#endif
