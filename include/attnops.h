/*
 * attnops — the attention operators of CANN ops-transformer on ordinary CPUs.
 *
 * One public header.  Every operator is a two-phase call:
 *
 *     size_t bytes;
 *     st = attnops_flash_attention_score_workspace_size(&args, &bytes);
 *     void *ws = malloc(bytes);                       // bytes may be 0
 *     st = attnops_flash_attention_score(&args, ws, bytes);
 *
 * The workspace query returns the exact number of bytes the run needs for the
 * same arguments and the same thread count.  A run never allocates memory of
 * its own; every scratch buffer lives in the workspace.
 *
 * Errors: every call returns an attnops_status.  On failure nothing has been
 * written to any output tensor, and attnops_last_error() returns one sentence
 * (thread-local) naming the operator, the argument and the offending value.
 * The library never aborts or exits.
 *
 * Thread safety: calls are re-entrant; distinct calls may run concurrently on
 * distinct outputs.  Each call uses OpenMP threads internally: num_threads
 * of them (0: OpenMP's default) when it runs alone; calls in flight at once
 * share omp_get_num_procs() threads, each getting at least one, and a call
 * inside an OpenMP parallel region runs on one.  The team size never
 * changes a result (docs/RELIABILITY.md, "Threads").
 */
#ifndef ATTNOPS_H
#define ATTNOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNOPS_VERSION_MAJOR 0
#define ATTNOPS_VERSION_MINOR 1
#define ATTNOPS_VERSION_PATCH 0

#if defined(_WIN32)
#define ATTNOPS_API
#else
#define ATTNOPS_API __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Status codes.  The first two match aclnn (ACLNN_ERR_PARAM_NULLPTR/INVALID) */
/* so that harnesses written for CANN read them unchanged.                   */
/* ------------------------------------------------------------------------ */
typedef enum attnops_status {
    ATTNOPS_SUCCESS = 0,
    ATTNOPS_ERR_NULLPTR = 161001,       /* a required pointer is NULL            */
    ATTNOPS_ERR_PARAM_INVALID = 161002, /* bad dtype, shape, layout, attribute,  */
                                        /* workspace too small, overlapping outs */
    ATTNOPS_ERR_UNSUPPORTED = 161003,   /* a valid request this version does not */
                                        /* implement (yet)                       */
    ATTNOPS_ERR_OUT_OF_MEMORY = 361001, /* an allocation failed (library helpers)*/
    ATTNOPS_ERR_INTERNAL = 561001       /* a bug: please report the sentence     */
} attnops_status;

/* The sentence describing the last failure on this thread ("" after a success). */
ATTNOPS_API const char *attnops_last_error(void);
/* A fixed name for a status code ("ATTNOPS_ERR_PARAM_INVALID", ...). */
ATTNOPS_API const char *attnops_status_string(attnops_status status);
/* "0.1.0" */
ATTNOPS_API const char *attnops_version(void);

/* Where CANN's host tiling logs a warning and falls back instead of failing
 * (docs/NUMERICS.md, "The device's fallbacks"), attnops falls back the same
 * way and reports it once per process for each kind of fallback: one sentence
 * naming the op, the argument and what is done instead, handed to the
 * handler.  The default handler (also restored by NULL) prints
 * "attnops: warning: <sentence>" on stderr.  The handler may be called from
 * any thread that runs an op, during the op's validation. */
typedef void (*attnops_warning_handler)(const char *sentence, void *user);
ATTNOPS_API void attnops_set_warning_handler(attnops_warning_handler handler, void *user);

/* ------------------------------------------------------------------------ */
/* Element types                                                             */
/* ------------------------------------------------------------------------ */
typedef enum attnops_dtype {
    ATTNOPS_DTYPE_UNSET = 0, /* no dtype: what attnops_dtype_from_string returns for an unknown name */
    ATTNOPS_DTYPE_F32,
    ATTNOPS_DTYPE_F16,
    ATTNOPS_DTYPE_BF16,
    ATTNOPS_DTYPE_F8_E4M3FN,
    ATTNOPS_DTYPE_F8_E5M2,
    ATTNOPS_DTYPE_U8,
    ATTNOPS_DTYPE_BOOL,
    ATTNOPS_DTYPE_I32,
    ATTNOPS_DTYPE_I64,
    ATTNOPS_DTYPE_I8,    /* int8 key/value caches (FusedInferAttentionScore's antiquant) */
    ATTNOPS_DTYPE_COUNT /* one past the last dtype */
} attnops_dtype;

/* What the library knows of a dtype, one row per dtype (as ggml's
 * type_traits): read it instead of keeping a list of dtypes. */
typedef struct attnops_dtype_traits {
    const char *name;       /* "f32", "f16", "bf16", "f8_e4m3fn", "f8_e5m2", "u8", "bool", "i32", "i64" */
    const char *cann_name;  /* CANN's case tables' spelling: "fp32", "fp16", "bf16", "fp8_e4m3fn", ... */
    const char *torch_name; /* torch's (and numpy / ml_dtypes'): "float32", "bfloat16", "float8_e5m2", ... */
    size_t size;            /* bytes per element */
    bool is_float;          /* a floating-point format (f32 through f8_e5m2) */
    /* dst[i] = element i of the packed src, widened exactly (the integer
     * dtypes as their values, i64 rounded to the nearest double; a NaN
     * stays a NaN of its sign, quietened) */
    void (*to_f64)(const void *src, double *dst, size_t n);
    /* element i of the packed dst = src[i] rounded once, to nearest even
     * (the conversions above; e4m3fn has no infinity: overflow is NaN); the
     * integer dtypes take src[i] converted as C converts, in range only */
    void (*from_f64)(const double *src, void *dst, size_t n);
} attnops_dtype_traits;

/* The row of dtype; NULL for a value that is no dtype. */
ATTNOPS_API const attnops_dtype_traits *attnops_dtype_traits_of(attnops_dtype dtype);
/* Any of a row's three spellings ("f32", "fp32", "float32") -> its dtype;
 * ATTNOPS_DTYPE_UNSET for anything else, NULL included. */
ATTNOPS_API attnops_dtype attnops_dtype_from_string(const char *name);
/* Bytes per element; 0 for an unknown dtype. */
ATTNOPS_API size_t attnops_dtype_size(attnops_dtype dtype);
/* The row's name ("f32", ...); "?" for an unknown dtype. */
ATTNOPS_API const char *attnops_dtype_name(attnops_dtype dtype);

/* Exact conversions, bit-identical to PyTorch / ml_dtypes (round to nearest
 * even; NaN stays NaN; overflow: f16/bf16/e5m2 -> inf, e4m3fn -> NaN since the
 * format has no infinity).  Encodings are passed as raw bits. */
ATTNOPS_API float attnops_f16_to_f32(uint16_t bits);
ATTNOPS_API uint16_t attnops_f32_to_f16(float value);
ATTNOPS_API float attnops_bf16_to_f32(uint16_t bits);
ATTNOPS_API uint16_t attnops_f32_to_bf16(float value);
ATTNOPS_API float attnops_f8_e4m3fn_to_f32(uint8_t bits);
ATTNOPS_API uint8_t attnops_f32_to_f8_e4m3fn(float value);
ATTNOPS_API float attnops_f8_e5m2_to_f32(uint8_t bits);
ATTNOPS_API uint8_t attnops_f32_to_f8_e5m2(float value);

/* ------------------------------------------------------------------------ */
/* Strided tensor views                                                      */
/* ------------------------------------------------------------------------ */
#define ATTNOPS_MAX_RANK 8

/* A view of memory the caller owns.  Element (i0, i1, ...) lives at
 * data + (i0*strides[0] + i1*strides[1] + ...) * dtype_size.  Strides are in
 * elements, may be any non-negative value (non-contiguous views are fine) and
 * must not make two elements of an *output* alias.  An absent optional tensor
 * is passed as a NULL view pointer. */
typedef struct attnops_tensor {
    void *data;
    attnops_dtype dtype;
    int32_t rank;
    int64_t shape[ATTNOPS_MAX_RANK];
    int64_t strides[ATTNOPS_MAX_RANK];
} attnops_tensor;

/* A contiguous row-major view of `data` with the given shape. */
ATTNOPS_API attnops_tensor attnops_tensor_contiguous(void *data, attnops_dtype dtype, int32_t rank,
                                                     const int64_t *shape);

/* ------------------------------------------------------------------------ */
/* FlashAttentionScore (forward) and FlashAttentionScoreGrad (backward)      */
/* ------------------------------------------------------------------------ */

/* Which implementation runs a call.  AUTO picks the fast CPU kernel.
 * REFERENCE is the golden: double accumulation, outputs rounded once. */
typedef enum attnops_impl {
    ATTNOPS_IMPL_AUTO = 0,
    ATTNOPS_IMPL_REFERENCE = 1,
    ATTNOPS_IMPL_CPU = 2,
    /* The benchmark chain of the triple rule: the reference's computation
     * with every intermediate rounded to the I/O dtype, as unfused small
     * operators (PyTorch ops on a device) compute it.  Not for FP8. */
    ATTNOPS_IMPL_BENCHMARK = 3
} attnops_impl;

/* input_layout.  0 is "not set" and is rejected, so a forgotten field is an
 * error rather than a silent default.  Shapes (N1 query heads, N2 kv heads):
 *   BNSD q [B,N1,S1,D]   k [B,N2,S2,D]   v [B,N2,S2,Dv]
 *   BSND q [B,S1,N1,D]   k [B,S2,N2,D]   v [B,S2,N2,Dv]
 *   BSH  q [B,S1,N1*D]   k [B,S2,N2*D]   v [B,S2,N2*Dv]
 *   SBH  q [S1,B,N1*D]   k [S2,B,N2*D]   v [S2,B,N2*Dv]
 *   TND  q [T1,N1,D]     k [T2,N2,D]     v [T2,N2,Dv]    (variable length)
 * attention_out / dy / attention_in have q's shape with D replaced by Dv. */
typedef enum attnops_layout {
    ATTNOPS_LAYOUT_UNSET = 0,
    ATTNOPS_LAYOUT_BNSD,
    ATTNOPS_LAYOUT_BSND,
    ATTNOPS_LAYOUT_BSH,
    ATTNOPS_LAYOUT_SBH,
    ATTNOPS_LAYOUT_TND
} attnops_layout;

/* "BNSD" -> ATTNOPS_LAYOUT_BNSD, ...; ATTNOPS_LAYOUT_UNSET for anything else. */
ATTNOPS_API attnops_layout attnops_layout_from_string(const char *name);
ATTNOPS_API const char *attnops_layout_name(attnops_layout layout);

/* Layout of softmax_max / softmax_sum in TND, for the forward's outputs and
 * the backward's inputs alike (aclnn's softmaxOutLayout / softmaxInLayout:
 * "" or "same_as_input"; torch_npu's softmax_layout "" or "TND").  Both are
 * declared [T,N1,8]; they differ in the memory order.  Ignored by the padded
 * layouts. */
typedef enum attnops_softmax_layout {
    ATTNOPS_SOFTMAX_LAYOUT_DEFAULT = 0,      /* contiguous per-batch [N1,S_b,8] blocks */
    ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT = 1 /* a true [T,N1,8] array, any strides */
} attnops_softmax_layout;

/* Everything the forward and the backward share: inputs, attributes (CANN
 * names and defaults) and execution options.  Fill it with
 * attnops_fa_params_init() and then set what you need.  Each field says its
 * form; docs/FLASH_ATTENTION_API.md has the rules (masks and the sentinel
 * rows, the position bias, MLA rope, FP8 blocks, the dropout block of a split
 * call). */
typedef struct attnops_fa_params {
    /* required inputs */
    const attnops_tensor *query;
    const attnops_tensor *key;
    const attnops_tensor *value;

    /* optional inputs (NULL = absent) */
    /* query's dtype: [B,N1,S1,S2], [1,N1,S1,S2], [B,N1,1,S2] or the compressed
     * ALiBi [B|1,N1,1024,S2] (pse_type 0/1); f32 slopes [N1] or [B,N1] (2/3) */
    const attnops_tensor *pse;
    const attnops_tensor *drop_mask;       /* u8 [>= ceil(count/8)]: packed keep bits, LSB first, used */
                                           /* instead of the generated mask (keep_prob < 1 required)  */
    const attnops_tensor *padding_mask;    /* reserved by CANN, must be NULL                           */
    /* bool/u8, 1 = masked out: [S1,S2], [1,1,S1,S2], [B,1,S1,S2] or [B,N1,S1,S2]
     * (modes 0, 1, 5); the compressed 2048x2048 (modes 2, 3, 4, 7, 8) or
     * 3072x2048 (mode 6) mask.  NULL: nothing is masked, whatever sparse_mode. */
    const attnops_tensor *atten_mask;
    const attnops_tensor *prefix;          /* i64 (or i32) [B], sparse modes 5/6                       */
    const attnops_tensor *actual_seq_qlen; /* i64 (or i32) [B], cumulative (no leading 0), TND        */
    const attnops_tensor *actual_seq_kvlen;/* i64 (or i32) [B], cumulative, TND                        */
    const attnops_tensor *q_start_idx;     /* i64 (or i32) [0 or 1]; used by pse_type 2/3 only         */
    const attnops_tensor *kv_start_idx;    /* i64 (or i32) [0 or 1]; used by pse_type 2/3 only         */
    const attnops_tensor *query_rope;      /* MLA: Q = [query | query_rope] on the head dim (Dr <= D)  */
    const attnops_tensor *key_rope;        /* MLA: K = [key | key_rope]; both or neither               */
    /* FP8 block de-scales (1 / scale), f32: q, dy, o [B,N1,ceil(S1/128),1],
     * k, v [B,N2,ceil(S2/128),1]; all five in the backward, q/k/v's in the
     * forward (d_scale_o is checked, not used) */
    const attnops_tensor *d_scale_q;
    const attnops_tensor *d_scale_k;
    const attnops_tensor *d_scale_v;
    const attnops_tensor *d_scale_dy;
    const attnops_tensor *d_scale_o;
    /* The dropout block of a split call (an attnops extension, for context
     * parallelism; NULL = the call is whole): i64 (or i32) [1] (padded) or
     * [B] cumulative (TND) lengths of the whole call, [1] or [B] starts */
    const attnops_tensor *dropout_seq_qlen;
    const attnops_tensor *dropout_seq_kvlen;
    const attnops_tensor *dropout_q_start;
    const attnops_tensor *dropout_kv_start;
    /* Attention sinks (torch_npu's `sink`, GPT-OSS's learnable sinks): f32
     * [N1], one extra logit per head in every row's softmax that attends to
     * nothing: m = max(max_j s_j, sink[h]), l = sum_j e^(s_j - m) + e^(sink[h] - m);
     * softmax_max / softmax_sum hold that m and l (docs/NUMERICS.md, "Attention
     * sinks").  Not with FP8 inputs (161003). */
    const attnops_tensor *sink;

    /* attributes (CANN defaults set by attnops_fa_params_init) */
    double scale_value;    /* 1.0                                       */
    double keep_prob;      /* 1.0; < 1: dropout with the Ascend 950      */
                           /* in-kernel Philox mask (docs/NUMERICS.md)  */
    double softcap;        /* 0 = off; > 0: the q.k term of every score */
                           /* becomes softcap * tanh(scale q.k / softcap) */
                           /* before the position bias and the mask: an */
                           /* attnops extension (flash-attn's softcap,  */
                           /* Gemma 2; docs/NUMERICS.md "Soft-capping") */
    int64_t pre_tokens;    /* INT32_MAX ("pre_tockens" in CANN)         */
    int64_t next_tokens;   /* INT32_MAX                                 */
    int64_t head_num;      /* N1; required, no default                  */
    attnops_layout input_layout; /* required, no default                */
    int64_t inner_precise; /* 0; 0 and 1 (CANN: high precision / high  */
                           /* performance) compute the same here; 2     */
                           /* forces the invalid-row sentinels          */
    int64_t sparse_mode;   /* 0                                         */
    int64_t pse_type;      /* 1: (q.k + pse) * scale; 0: q.k * scale + pse; */
                           /* 2/3: generated ALiBi (|delta|, sqrt|delta|) */
    int64_t seed;          /* 2                                         */
    int64_t offset;        /* 0                                         */
    int64_t dropout_head_num;   /* 0: the call is whole (the dropout block) */
    int64_t dropout_head_start; /* 0                                         */
    int64_t out_dtype;     /* 0; FP8 inputs: 0 = f16 outputs, 1 = bf16  */
    attnops_softmax_layout softmax_in_layout; /* DEFAULT                */

    /* execution options */
    attnops_impl impl;     /* AUTO                                                  */
    int32_t deterministic; /* 0; 1 = bitwise identical results for any thread count */
    int32_t num_threads;   /* 0 = OpenMP's default (OMP_NUM_THREADS)                */
} attnops_fa_params;

ATTNOPS_API void attnops_fa_params_init(attnops_fa_params *params);

/* Forward outputs.  softmax_max / softmax_sum: f32 [B,N1,S1,8] (each value
 * replicated 8 times, as CANN stores it).  softmax_out is reserved by CANN
 * and may be NULL (it is never written).  attention_out: q's dtype and shape
 * with D -> Dv. */
typedef struct attnops_fa_fwd_args {
    attnops_fa_params p;
    const attnops_tensor *softmax_max;
    const attnops_tensor *softmax_sum;
    const attnops_tensor *softmax_out;
    const attnops_tensor *attention_out;
} attnops_fa_fwd_args;

/* Backward.  Takes exactly what FlashAttentionScoreGrad takes: dy,
 * attention_in (the forward's output) and the forward's softmax_max /
 * softmax_sum, so any forward's results (ours or a device's) can be fed in.
 * P is recomputed as exp(s - softmax_max) / softmax_sum and the softmax
 * gradient row term is rowsum(dy * attention_in).  dq/dk/dv have the shapes
 * and dtypes of q/k/v; dk and dv are summed over the G query heads of each kv
 * head.  dpse is reserved (CANN never writes it) and may be NULL; dq_rope /
 * dk_rope are required when rope inputs are given. */
typedef struct attnops_fa_bwd_args {
    attnops_fa_params p;
    const attnops_tensor *dy;
    const attnops_tensor *attention_in;
    const attnops_tensor *softmax_max;
    const attnops_tensor *softmax_sum;
    const attnops_tensor *softmax_in; /* reserved, must be NULL */
    const attnops_tensor *dq;
    const attnops_tensor *dk;
    const attnops_tensor *dv;
    const attnops_tensor *dpse;
    const attnops_tensor *dq_rope;
    const attnops_tensor *dk_rope;
    /* f32 [N1] with p.sink (may be NULL: not wanted):
     * dsink[h] = -sum_{b, i} e^(sink[h] - m_i) / l_i * (dy_i . attention_in_i) */
    const attnops_tensor *dsink;
} attnops_fa_bwd_args;

/* The shape an output takes for given inputs (XNNPACK's reshape step: the
 * library, not each binding, knows it).  Each dimension is one of query's
 * (query_dim >= 0, its index; extent is query's size there) or an extent of
 * its own (query_dim = -1), so a framework can keep query's dimensions
 * symbolic (torch's SymInts under torch.compile).  The shape functions read
 * the inputs' ranks and head dims, the layouts and head counts only: no data
 * (NULL is fine: a framework's meta tensors) and no output; query's other
 * extents are taken by reference and not compared with key's.  A shape they
 * cannot derive gets the call's status and a sentence. */
typedef struct attnops_output_dim {
    int32_t query_dim;
    int64_t extent;
} attnops_output_dim;

typedef struct attnops_output_shape {
    int32_t rank;
    attnops_output_dim dims[ATTNOPS_MAX_RANK];
} attnops_output_shape;

/* Zero the struct and apply attnops_fa_params_init to .p. */
ATTNOPS_API void attnops_fa_fwd_args_init(attnops_fa_fwd_args *args);

/* attention_out's shape and that of softmax_max / softmax_sum (one shape for
 * both): query's with the head dim Dv, and [B, N1, S1, 8] or, in TND,
 * [T1, N1, 8].  The backward's gradients take their inputs' shapes. */
ATTNOPS_API attnops_status attnops_flash_attention_score_output_shapes(const attnops_fa_fwd_args *args,
                                                                       attnops_output_shape *attention_out,
                                                                       attnops_output_shape *softmax_stats);
ATTNOPS_API void attnops_fa_bwd_args_init(attnops_fa_bwd_args *args);

ATTNOPS_API attnops_status attnops_flash_attention_score_workspace_size(const attnops_fa_fwd_args *args,
                                                                        size_t *workspace_bytes);
ATTNOPS_API attnops_status attnops_flash_attention_score(const attnops_fa_fwd_args *args, void *workspace,
                                                         size_t workspace_bytes);

ATTNOPS_API attnops_status attnops_flash_attention_score_grad_workspace_size(const attnops_fa_bwd_args *args,
                                                                             size_t *workspace_bytes);
ATTNOPS_API attnops_status attnops_flash_attention_score_grad(const attnops_fa_bwd_args *args, void *workspace,
                                                              size_t workspace_bytes);

/* Variable-length batches (layout TND), with the parameter sets of
 * aclnnFlashAttentionVarLenScore and aclnnFlashAttentionUnpaddingScoreGradV2
 * (spec 8.1): the same argument structs, with input_layout TND (anything else
 * is refused, 161002) and p.actual_seq_qlen / p.actual_seq_kvlen holding the
 * cumulative lengths without a leading 0 (real lengths [2,2,0,2] are passed
 * as [2,4,4,6]); trailing batches whose query and key lengths are both 0 are
 * dropped, and B (for prefix [B] and slopes [B,N1]) counts the rest.  q [T1,N1,D], k [T2,N2,D], v [T2,N2,Dv]; softmax_max/sum are
 * declared [T1,N1,8] and hold per-batch [N1,S_b,8] blocks (contiguous), or
 * with softmax_in_layout SAME_AS_INPUT are a true [T1,N1,8] array.  Masks in TND: modes 0/1
 * take one [max S1, max S2] mask read per batch from its top-left corner;
 * modes 2/3/4/6/7/8 the compressed mask; mode 5 is not defined for TND.
 * A fully masked row keeps m = -40000, l = S2 but gets output 0 and no
 * gradient (the golden zeroes masked P in TND).  pse in TND: pse_type 2/3
 * slopes, or pse_type 0/1 in the compressed ALiBi form [B|1,N1,1024,max S2]
 * under a causal mask with S1 = S2 in every batch (the 1-D TND forms are
 * not supported: 161003).  The general entry points accept TND too. */
ATTNOPS_API attnops_status attnops_flash_attention_varlen_score_workspace_size(const attnops_fa_fwd_args *args,
                                                                               size_t *workspace_bytes);
ATTNOPS_API attnops_status attnops_flash_attention_varlen_score(const attnops_fa_fwd_args *args, void *workspace,
                                                                size_t workspace_bytes);
ATTNOPS_API attnops_status attnops_flash_attention_unpadding_score_grad_workspace_size(const attnops_fa_bwd_args *args,
                                                                                       size_t *workspace_bytes);
ATTNOPS_API attnops_status attnops_flash_attention_unpadding_score_grad(const attnops_fa_bwd_args *args,
                                                                        void *workspace, size_t workspace_bytes);

/* The dropout keep mask FlashAttentionScore(Grad) applies for keep_prob < 1
 * (the Ascend 950 in-kernel Philox mask, spec 5), so a device's mask can be
 * diffed with ours.  Elements are in the order [B, N1, S1, S2] (padded
 * layouts: give batch, head_num, seq_q, seq_kv) or, in TND, per batch
 * [N1, S1_b, S2_b] blocks (give head_num and the cumulative
 * actual_seq_qlen / actual_seq_kvlen as for the TND operators); count =
 * B*N1*S1*S2 or N1 * sum S1_b*S2_b.  Outputs (at least one):
 *   byte_mask  u8 [count], 1 = kept
 *   bit_mask   u8 [>= ceil(count/8)], element e in bit e % 8 (LSB first) of
 *              byte e / 8 -- the packed form CANN's drop_mask input takes;
 *              bytes past the last element are zeroed. */
typedef struct attnops_dropout_mask_args {
    int64_t seed, offset;   /* CANN defaults 2 and 0 */
    double keep_prob;       /* (0, 1] */
    int64_t batch, head_num, seq_q, seq_kv;
    const attnops_tensor *actual_seq_qlen, *actual_seq_kvlen; /* TND instead of batch/seq_q/seq_kv */
    const attnops_tensor *byte_mask;
    const attnops_tensor *bit_mask;
} attnops_dropout_mask_args;

ATTNOPS_API attnops_status attnops_dropout_mask(const attnops_dropout_mask_args *args);

/* The keep mask of Ascend A2/A3 (910B/910C), where FlashAttentionScore(Grad)
 * take the mask as an input that op-plugin draws beforehand with
 * aclnnDropoutGenMaskV2(shape [count], prob, seed, offset, prob_dtype) --
 * one flat stream over the call's elements, read in the drop_mask order
 * above ([B, N1, S1, S2], TND per-batch [N1, S1_b, S2_b] blocks back to back).
 * Element e takes word e % 4 of Philox-4x32-10 block e / 4 (TensorFlow's
 * stateless uniform: key = seed, counter = (0, offset) as two 64-bit words,
 * the block index added to the lower), draws u = (word & (2^m - 1)) / 2^m
 * with m = 23 (f32), 10 (f16) or 7 (bf16), and is kept iff u >= prob
 * rounded to prob_dtype (docs/NUMERICS.md, "Dropout on A2/A3").  For the
 * FlashAttention operators op-plugin passes prob = (float)1 - (float)keep_prob
 * and the query's dtype.
 *   bit_mask  u8 [>= ceil(count / 8)], element e in bit e % 8 of byte e / 8
 *             (LSB first); bytes past the last element are zeroed.  CANN
 *             allocates ceil(count / 128) * 16 bytes. */
typedef struct attnops_dropout_gen_mask_args {
    int64_t seed, offset;
    double prob;              /* the drop probability, [0, 1] */
    attnops_dtype prob_dtype; /* f32, f16 or bf16 */
    int64_t count;            /* the elements (>= 0) */
    const attnops_tensor *bit_mask;
} attnops_dropout_gen_mask_args;

ATTNOPS_API attnops_status attnops_dropout_gen_mask(const attnops_dropout_gen_mask_args *args);

/* The standard ALiBi slopes for n heads (get_slopes of spec 4.2): with
 * p = 2^floor(log2 n), base = 2^(-8/p): base^1 .. base^p, then, if p < n,
 * (2^(-4/p))^k for k = 1, 3, 5, ...; in float, as the golden computes them.
 * Writes n floats. */
ATTNOPS_API attnops_status attnops_alibi_slopes(int64_t n, float *slopes);

/* FP8 block quantisation the way the golden prepares device inputs (spec 6):
 * for every head of every batch and every block of 128 rows along S (the
 * last may be shorter), over all head-dim columns,
 *   scale = FP8_MAX / max|x|  (448 for f8_e4m3fn, 57344 for f8_e5m2)
 *   out   = f8(x * scale)     (round to nearest even, computed in double)
 *   d_scale = (float)(1 / scale)
 * so x ~ out * d_scale, and out / d_scale are the FlashAttention FP8 inputs
 * (query with d_scale_q, ...).  src: f32, f16 or bf16 in `layout` (BNSD,
 * BSND, BSH or SBH; head_num splits BSH/SBH hidden sizes); out: src's shape
 * in f8_e4m3fn or f8_e5m2; d_scale: f32 [B, N, ceil(S/128), 1].  A block of
 * zeros gets zeros and d_scale 1 (the golden would divide by zero); a
 * non-finite src value is an error.  Nothing is written on failure. */
ATTNOPS_API attnops_status attnops_fp8_quantize_blocks(const attnops_tensor *src, attnops_layout layout,
                                                       int64_t head_num, const attnops_tensor *out,
                                                       const attnops_tensor *d_scale);

/* ------------------------------------------------------------------------ */
/* KeyPool: key compression into a paged state cache (inference)             */
/* ------------------------------------------------------------------------ */

/* Per batch b, tokens x_0 .. x_{len-1} at logical positions st = start_pos[b]
 * .. end - 1, R = cmp_ratio (docs/KEYPOOL.md has the full contract):
 *   K_t = round(x_t . wk^T), G_t = round(x_t . gate_weight^T)   (D each)
 *   K_t = LayerNorm(K_t) in f32 when norm_weight / norm_bias are given
 *   the current tokens of the trailing incomplete group (end % R of them)
 *     are written to the state cache: columns [0,D) K, [D,2D) G (no ape)
 *   for every group q in [floor(st/R), floor(end/R)): rows p = qR .. qR+R-1
 *     come from this call (st <= p) or from the cache (p < st); per channel d
 *     w = round(softmax_r(G[r][d] + ape[r][d])), out = round(sum_r w K)
 * where round() is to the activation dtype (bf16 or f16).  The cache is
 * written (all batches) before any group is pooled, as the golden does.
 * Cache row of logical position p: state_cache[table[b][p / block_size]]
 * [p % block_size]; physical block 0 is reserved.  Any stride is accepted
 * for every tensor, so the CANN attribute state_cache_stride_dim0 is simply
 * state_cache's strides[0]. */
typedef enum attnops_key_pool_capacity {
    /* The seed's current-input capacity: BSH [B, ceil(S/R), D], batch b's n[b]
     * valid rows first; TH [min(T, floor(T/R) + B), D], valid rows of all
     * batches packed back to back.  Rows past the valid ones are not written
     * (left as they were). */
    ATTNOPS_KEY_POOL_CAPACITY_CURRENT = 0,
    /* CANN today (aclnnKeyPool's infershape and torch binding, the stored
     * golden; the default): [B, ceil(L*block_size/R), D] for both layouts,
     * batch b's valid rows first, every other row zero. */
    ATTNOPS_KEY_POOL_CAPACITY_FIXED = 1
} attnops_key_pool_capacity;

typedef struct attnops_key_pool_args {
    /* required inputs */
    const attnops_tensor *hidden_states;     /* bf16 or f16: BSH [B,S,H] or TH [T,H]     */
    const attnops_tensor *wk;                /* [D,H], hidden's dtype                     */
    const attnops_tensor *gate_weight;       /* [D,H], hidden's dtype                     */
    const attnops_tensor *ape;               /* f32 [cmp_ratio, D], added to the gate     */
    const attnops_tensor *state_cache;       /* f32 [block_num, block_size, 2D], in place */
    const attnops_tensor *cache_block_table; /* i32 [B, L]: logical -> physical block     */
    const attnops_tensor *start_pos;         /* i32 [B]: position of the first token      */
    /* optional inputs (NULL = absent) */
    const attnops_tensor *norm_weight;       /* f32 [D]; with norm_bias: LayerNorm on K   */
    const attnops_tensor *norm_bias;         /* f32 [D]                                   */
    const attnops_tensor *cos, *sin;         /* RoPE: reserved, must be NULL (161003)     */
    const attnops_tensor *cu_seqlens;        /* i32 [B+1]: TH only, 0 .. T non-decreasing */
    const attnops_tensor *seqused;           /* reserved, must be NULL                    */
    /* attributes (CANN defaults set by attnops_key_pool_args_init) */
    int64_t cmp_ratio;                       /* 4; one of 2, 4, 8, ..., 128               */
    double norm_eps;                         /* 1e-6; > 0                                 */
    int64_t rotary_mode;                     /* 1; 0 or 1, no effect (RoPE is reserved)   */
    attnops_key_pool_capacity capacity;      /* FIXED (CANN today)                        */
    /* output */
    const attnops_tensor *pooled_key;        /* hidden's dtype; shape by `capacity`       */
    /* execution options */
    attnops_impl impl;                       /* AUTO (BENCHMARK is refused)               */
    int32_t num_threads;                     /* 0 = OpenMP's default                      */
} attnops_key_pool_args;

/* Zero the struct, then cmp_ratio 4, norm_eps 1e-6, rotary_mode 1, capacity FIXED. */
ATTNOPS_API void attnops_key_pool_args_init(attnops_key_pool_args *args);

/* The shape pooled_key must have for these inputs and args->capacity
 * (pooled_key itself may be NULL here): rank 3 [B, rows, D] or, TH with
 * CURRENT capacity, rank 2 [rows, D]. */
ATTNOPS_API attnops_status attnops_key_pool_output_shape(const attnops_key_pool_args *args, int32_t *rank,
                                                         int64_t shape[3]);
/* n[b] = floor((start_pos[b] + len[b]) / R) - floor(start_pos[b] / R), the
 * valid output rows of each batch (writes B values; pooled_key may be NULL). */
ATTNOPS_API attnops_status attnops_key_pool_valid_rows(const attnops_key_pool_args *args, int64_t *valid_rows);

ATTNOPS_API attnops_status attnops_key_pool_workspace_size(const attnops_key_pool_args *args,
                                                           size_t *workspace_bytes);
/* On failure neither pooled_key nor state_cache has been modified. */
ATTNOPS_API attnops_status attnops_key_pool(const attnops_key_pool_args *args, void *workspace,
                                            size_t workspace_bytes);

/* ------------------------------------------------------------------------ */
/* Block Attention Residuals (PyPTO ai_infra_block_attn_res, fwd and bwd)    */
/* ------------------------------------------------------------------------ */

/* A learned softmax over depth replacing the residual sum (docs/ATTNRES.md).
 * For each token (b, t), with V[l] = blocks[l][b][t] (l < N) and, when
 * given, V[N] = partial_block[b][t] (L = N or N + 1 rows of D):
 *   r_l   = sqrt(sum_d V[l][d]^2 / D + eps)        (enable_rmsnorm)
 *   K[l]  = V[l] / r_l * gamma                      (else K = V)
 *   z_l   = scale * sum_d w[d] K[l][d]              (w = proj_weight)
 *   alpha = softmax_l(z)
 *   h     = sum_l alpha_l V[l]                      (rounded once to the dtype)
 * Activations (blocks, partial_block, h, grad_h, the gradients) are bf16,
 * f16 or f32, all one dtype; proj_weight and rmsnorm_gamma [D] have that
 * dtype too; the caches are f32: rms [B,T,L,1] holds r_l (eps included) and
 * alpha [B,T,L] the softmax weights.  1 <= N <= 127 (so L <= 128), any
 * D >= 1, B and T may be 0.  Each block is its own view and may live
 * anywhere in memory. */
typedef struct attnops_attn_res_fwd_args {
    const attnops_tensor *const *blocks;  /* N views [B,T,D] */
    int64_t num_blocks;                   /* N */
    const attnops_tensor *partial_block;  /* optional [B,T,D] */
    const attnops_tensor *proj_weight;    /* [D] */
    const attnops_tensor *rmsnorm_gamma;  /* [D]; required when enable_rmsnorm, else not read */
    double scale;                         /* 1.0 */
    double rmsnorm_eps;                   /* 1e-6 */
    int32_t enable_rmsnorm;               /* 1 */
    const attnops_tensor *h;              /* output [B,T,D] */
    const attnops_tensor *rms;            /* optional output f32 [B,T,L,1]; needs enable_rmsnorm */
    const attnops_tensor *alpha;          /* optional output f32 [B,T,L] */
    attnops_impl impl;                    /* AUTO; BENCHMARK = every intermediate rounded to the dtype */
    int32_t num_threads;                  /* 0 = OpenMP's default */
} attnops_attn_res_fwd_args;

/* The backward consumes the forward's alpha (required; the softmax is never
 * recomputed) and, with RMSNorm, its rms (required); it returns the gradient
 * of every block, of the partial block (required when partial_block is
 * given), of proj_weight and (with RMSNorm, required then) of rmsnorm_gamma.
 * grad_proj_weight and grad_rmsnorm_gamma are sums over all tokens, reduced
 * (f32 in the fast kernel, double in the reference) per fixed chunk of
 * tokens, in an order that does not depend on the thread count.  Without
 * RMSNorm rms and rmsnorm_gamma are not read. */
typedef struct attnops_attn_res_bwd_args {
    const attnops_tensor *grad_h;              /* [B,T,D] */
    const attnops_tensor *const *blocks;       /* N views [B,T,D] */
    int64_t num_blocks;
    const attnops_tensor *partial_block;       /* optional */
    const attnops_tensor *proj_weight;         /* [D] */
    const attnops_tensor *rmsnorm_gamma;       /* [D]; required when enable_rmsnorm */
    const attnops_tensor *alpha;               /* f32 [B,T,L], required */
    const attnops_tensor *rms;                 /* f32 [B,T,L,1], required when enable_rmsnorm */
    double scale;                              /* 1.0 */
    int32_t enable_rmsnorm;                    /* 1 */
    const attnops_tensor *const *grad_blocks;  /* N output views [B,T,D] */
    const attnops_tensor *grad_partial_block;  /* output [B,T,D] when partial_block is given */
    const attnops_tensor *grad_proj_weight;    /* output [D] */
    const attnops_tensor *grad_rmsnorm_gamma;  /* output [D] when enable_rmsnorm */
    attnops_impl impl;
    int32_t num_threads;
} attnops_attn_res_bwd_args;

/* Zero the struct, then scale 1, rmsnorm_eps 1e-6, enable_rmsnorm 1. */
ATTNOPS_API void attnops_attn_res_fwd_args_init(attnops_attn_res_fwd_args *args);
ATTNOPS_API void attnops_attn_res_bwd_args_init(attnops_attn_res_bwd_args *args);

ATTNOPS_API attnops_status attnops_attn_res_workspace_size(const attnops_attn_res_fwd_args *args,
                                                           size_t *workspace_bytes);
ATTNOPS_API attnops_status attnops_attn_res(const attnops_attn_res_fwd_args *args, void *workspace,
                                            size_t workspace_bytes);
ATTNOPS_API attnops_status attnops_attn_res_grad_workspace_size(const attnops_attn_res_bwd_args *args,
                                                                size_t *workspace_bytes);
ATTNOPS_API attnops_status attnops_attn_res_grad(const attnops_attn_res_bwd_args *args, void *workspace,
                                                 size_t workspace_bytes);

/* The distance FusedInferAttentionScore's alibi_slopes scale (attnops_fia_args.alibi_rule); the values are
 * CANN's pseType where CANN has the rule. */
typedef enum attnops_alibi_rule {
    ATTNOPS_ALIBI_BOTTOM_RIGHT = 0,   /* |i + L2 - L1 - j|: flash-attn's alibi_slopes */
    ATTNOPS_ALIBI_START_IDX = 2,      /* |j - i + kv_start - q_start|: CANN's pseType 2 */
    ATTNOPS_ALIBI_START_IDX_SQRT = 3, /* its square root: CANN's pseType 3 */
} attnops_alibi_rule;

/* ------------------------------------------------------------------------ */
/* FusedInferAttentionScore: inference attention (decode and prompt)          */
/* ------------------------------------------------------------------------ */

/* CANN's FusedInferAttentionScore (aclnnFusedInferAttentionScoreV3,
 * torch_npu.npu_fused_infer_attention_score; docs/FIA.md has the
 * contract and docs/FIA_SPEC.md the sources).  S1 = 1 is the
 * incremental (decode) branch, S1 > 1 the prompt branch; per batch b, query
 * head h (kv head n2 = h / (N1 / N2)), kept keys j < act_kv[b]:
 *   S[i][j] = scale_value * (q_i . k_j [+ query_rope_i . key_rope_j]) + pse_shift[b|0][h][i][j]
 *   (the attnops extensions softcap and alibi_slopes below: cap, then the biases)
 *   out_i   = sum_j softmax_j(S[i]) v_j,   lse_i = max_j S + ln sum_j exp(S - max)
 * q rows past act_q[b], rows with no kept key and batches with act_kv[b] = 0
 * give out 0 and lse +inf.  int8 key/value are dequantised as (x + offset) *
 * scale.  Shapes (H = N D, T = the sum of the batches' lengths):
 *   query  BSH [B,S1,N1*D]  BSND [B,S1,N1,D]  BNSD [B,N1,S1,D]  TND [T1,N1,D]
 *   key, value (contiguous): like query with S2 / N2 (TND [T2,N2,D]), value's D = Dv
 *   key, value (paged, block_table given), with any query layout:
 *     [block_num, block_size, N2*D], [block_num, N2, block_size, D] or NZ
 *     [block_num, N2, D/c0, block_size, c0] (c0 = 32 bytes of the dtype);
 *     position s of batch b is row s % block_size of block
 *     block_table[b][s / block_size]
 *   attention_out: query's layout (output_layout BSND for BNSD in: CANN's
 *     "BNSD_BSND") with head dim Dv;  softmax_lse f32 [B,N1,S1,1] (TND [T1,N1,1]) */
typedef struct attnops_fia_args {
    /* required */
    const attnops_tensor *query;  /* f16, bf16 or f32 */
    const attnops_tensor *key;    /* query's dtype, or int8 with antiquant scales */
    const attnops_tensor *value;  /* key's dtype */

    /* optional inputs (NULL = absent) */
    /* query's dtype, [B|1, N1, S1', S2'] (S1' >= S1, S2' >= S2; paged: S2' >=
     * block_table's columns * block_size), indexed [b|0][h][i][j] */
    const attnops_tensor *pse_shift;
    /* bool/u8/i8 (nonzero = masked): prompt [S1,S2], [B|1,S1,S2], [B|1,1,S1,S2]
     * (modes 0, 1; trailing dims may be padded up); decode [B,S2], [B,1,S2],
     * [B,1,1,S2]; modes 2/3/4: the compressed 2048x2048 lower-triangle tile */
    const attnops_tensor *atten_mask;
    /* i64 (or i32) [1 or >= B]: per-batch lengths (one value: every batch);
     * TND: cumulative (no leading 0), and actual_seq_lengths_kv per batch
     * when paged.  NULL: S1 / S2.  The decode branch ignores the q lengths
     * except in TND; a paged cache requires the kv lengths. */
    const attnops_tensor *actual_seq_lengths;
    const attnops_tensor *actual_seq_lengths_kv;
    const attnops_tensor *block_table;       /* i32 [B, >= max_b ceil(act_kv[b] / block_size)] */
    const attnops_tensor *query_rope;        /* MLA: [.., Dr] beside query (query's dtype); both or neither */
    const attnops_tensor *key_rope;          /* MLA: [.., Dr] beside key (paged like key) */
    /* int8 key/value dequantisation, x_hat = (x + offset) * scale, offset
     * NULL = 0.  Separate (they win over the combined pair), by mode:
     *   0 per channel: [N2*D], [N2,D], [1,N2,D], [1,N2,1,D] (query's dtype or
     *     f32), or per tensor [1];  1 per token: f32 [1,B,S2'] or [B,S2'];
     *   2 per tensor and head: [N2];  3 per token and head: f32 [B,N2,S2']
     *   (key mode 0 with value mode 1 is allowed: K per channel, V per token).
     * Combined: one tensor with a leading 2 (0: key, 1: value), antiquant_mode
     * 0 (per channel / per tensor) or 1 (per token). */
    const attnops_tensor *key_antiquant_scale;
    const attnops_tensor *key_antiquant_offset;
    const attnops_tensor *value_antiquant_scale;
    const attnops_tensor *value_antiquant_offset;
    const attnops_tensor *antiquant_scale;
    const attnops_tensor *antiquant_offset;
    /* CANN's quantised query/output, left padding and shared prefix: refused
     * (ATTNOPS_ERR_UNSUPPORTED) when given */
    const attnops_tensor *dequant_scale1, *quant_scale1, *dequant_scale2, *quant_scale2, *quant_offset2;
    const attnops_tensor *query_padding_size, *kv_padding_size;
    const attnops_tensor *key_shared_prefix, *value_shared_prefix, *actual_shared_prefix_len;

    /* attributes (CANN's defaults, set by attnops_fia_args_init) */
    int64_t num_heads;           /* 1; must be query's N1 */
    double scale_value;          /* 1.0 */
    int64_t pre_tokens;          /* INT32_MAX */
    int64_t next_tokens;         /* INT32_MAX */
    attnops_layout input_layout; /* BSH; BSND, BNSD, TND (SBH refused) */
    attnops_layout output_layout;/* UNSET = input_layout; BSND with BNSD input (S1 > 1) */
    int64_t num_key_value_heads; /* 0 = num_heads */
    int64_t sparse_mode;         /* 0; 0..4 */
    int64_t inner_precise;       /* 0; 0..3 (decode 0, 1): bit 0 precision (no effect here) */
    int64_t block_size;          /* 0; required with block_table */
    int64_t antiquant_mode;      /* 0 */
    int64_t key_antiquant_mode;  /* 0 */
    int64_t value_antiquant_mode;/* 0 */
    bool softmax_lse_flag;       /* false: softmax_lse may be NULL (else it is [1], written 0) */

    /* attnops extensions (CANN's operator has neither; flash-attn's, for
     * flash_attn_with_kvcache), applied in flash-attn's order: the scaled q.k
     * term capped, then pse_shift and ALiBi added, then the mask */
    double softcap;              /* 0 = off; > 0: scale q.k becomes softcap * tanh(scale q.k / softcap) */
    /* f32 [N1] or [B, N1] (NULL = none): S[i][j] -= slope[b|.][h] * |i + L2 - L1 - j|, L1 / L2 the
     * batch's query / key lengths (bottom-right, flash-attn's rule); with pse_shift both are added */
    const attnops_tensor *alibi_slopes;
    /* Which distance alibi_slopes scales: ATTNOPS_ALIBI_BOTTOM_RIGHT (0, the rule above) or CANN's inner
     * ALiBi (aclnnFusedInferAttentionScoreV5's pseType 2 and 3, whose pseShift is the slopes):
     * S[i][j] -= slope[b|.][h] * g(|j - i + alibi_kv_start_idx - alibi_q_start_idx|), one shift for every
     * batch, g the distance (ATTNOPS_ALIBI_START_IDX) or its square root (ATTNOPS_ALIBI_START_IDX_SQRT);
     * the start indices fit int32 and differ by at most 2^20, as CANN's tiling checks. */
    int32_t alibi_rule;
    int64_t alibi_q_start_idx, alibi_kv_start_idx;
    /* Attention sinks (CANN's learnable_sink, FusedInferAttentionScoreV4/V5):
     * f32, f16 or bf16 [N1], one extra logit per query head in every row's
     * softmax (docs/NUMERICS.md, "Attention sinks"); a row with no kept key
     * then gives out 0 and lse = sink[h]. */
    const attnops_tensor *learnable_sink;

    /* outputs */
    const attnops_tensor *attention_out; /* query's dtype */
    const attnops_tensor *softmax_lse;   /* f32 */

    /* execution options */
    attnops_impl impl;     /* AUTO; REFERENCE or CPU (BENCHMARK refused) */
    int32_t deterministic; /* 0; 1 = bitwise identical results for any thread count */
    int32_t num_threads;   /* 0 = OpenMP's default */
} attnops_fia_args;

ATTNOPS_API void attnops_fia_args_init(attnops_fia_args *args);
/* attention_out's shape (output_layout's, value's head dim Dv: of a paged
 * or NZ cache too) and softmax_lse's with the flag on: [B, N1, S1, 1], in
 * TND [T, N1, 1].  The paged form is the one block_table != NULL selects. */
ATTNOPS_API attnops_status attnops_fused_infer_attention_score_output_shapes(const attnops_fia_args *args,
                                                                             attnops_output_shape *attention_out,
                                                                             attnops_output_shape *softmax_lse);
ATTNOPS_API attnops_status attnops_fused_infer_attention_score_workspace_size(const attnops_fia_args *args,
                                                                             size_t *workspace_bytes);
ATTNOPS_API attnops_status attnops_fused_infer_attention_score(const attnops_fia_args *args, void *workspace,
                                                              size_t workspace_bytes);

/* Which instruction set the fast kernels run on: "avx512bf16" (AVX-512 with
 * AVX512-BF16 dot products), "avx512", "avx2" (with FMA and F16C) on x86-64,
 * "neon" (ASIMD) on AArch64, or "portable" (plain C, no library GEMMs).
 * Chosen once per process, the best the CPU has;
 * ATTNOPS_ISA=portable|avx2|avx512|avx512bf16 (x86-64) or portable|neon (AArch64) in
 * the environment forces one (a name the CPU lacks, or an unknown one, prints
 * one line to stderr and keeps the best). */
ATTNOPS_API const char *attnops_cpu_isa(void);

/* The instruction sets this build has fast kernels for, each extending the
 * one before ("portable" first): the index-th one's name, or NULL past the
 * last; *runs_here (may be NULL) says whether this CPU has it. */
ATTNOPS_API const char *attnops_cpu_isa_at(int index, bool *runs_here);

/* The CPU's model name: the CPUID brand string on x86-64; on AArch64 the
 * MIDR_EL1 implementer and part, with the name of the core where known
 * ("Arm 0x41 part 0xd0c (Neoverse N1)"); "unknown" where it cannot be read. */
ATTNOPS_API const char *attnops_cpu_model(void);

/* What runs the fast kernels' tile GEMMs for operands of this dtype:
 * "libxsmm JIT (<arch>)", "C loops", or for bf16 where libxsmm has no bf16
 * kernel "fp32 <backend> on widened bf16".  F32 and F16 (widened exactly)
 * name the fp32 GEMMs, BF16 the bf16 ones; other dtypes give NULL. */
ATTNOPS_API const char *attnops_gemm_backend(attnops_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif /* ATTNOPS_H */
