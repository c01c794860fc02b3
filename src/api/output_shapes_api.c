/* The output-shape queries of the attention operators (attnops.h,
 * "attnops_output_shape"): each operator's own rule (fa_validate.c,
 * fia_validate.c) from the inputs' shapes alone, so the bindings never
 * restate it.  KeyPool's is attnops_key_pool_output_shape (kp_api.c). */
#include "core/validate.h"
#include "fa/fa_problem.h"
#include "fia/fia_problem.h"

/* The pointers, and query, key and value as shapes (their data may be NULL). */
static attnops_status check_inputs(const char *op, const attnops_output_shape *a, const attnops_output_shape *b,
                                   const attnops_tensor *q, const attnops_tensor *k, const attnops_tensor *v)
{
    if (!a || !b) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: an output shape pointer is NULL.", op);
    AO_TRY(ao_check_shape_only(op, "query", q));
    AO_TRY(ao_check_shape_only(op, "key", k));
    return ao_check_shape_only(op, "value", v);
}

attnops_status attnops_flash_attention_score_output_shapes(const attnops_fa_fwd_args *args,
                                                          attnops_output_shape *attention_out,
                                                          attnops_output_shape *softmax_stats)
{
    static const char *const OP = "FlashAttentionScore";
    ao_clear_error();
    if (!args) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: args is NULL.", OP);
    AO_TRY(check_inputs(OP, attention_out, softmax_stats, args->p.query, args->p.key, args->p.value));
    return fa_output_shapes(&args->p, OP, attention_out, softmax_stats);
}

attnops_status attnops_fused_infer_attention_score_output_shapes(const attnops_fia_args *args,
                                                                attnops_output_shape *attention_out,
                                                                attnops_output_shape *softmax_lse)
{
    static const char *const OP = "FusedInferAttentionScore";
    ao_clear_error();
    if (!args) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: args is NULL.", OP);
    AO_TRY(check_inputs(OP, attention_out, softmax_lse, args->query, args->key, args->value));
    return fia_output_shapes(args, OP, attention_out, softmax_lse);
}
