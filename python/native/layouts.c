/* attnops._native.layouts(): the byte layout of every C struct the numpy
 * binding fills or reads, from the headers themselves (offsetof, sizeof), so
 * that python/attnops/_lib.py builds its ctypes structs from this table and
 * describes no struct a second time.
 *
 *   layouts() -> ((struct name, sizeof, ((field, offset, size, kind), ...)), ...)
 *
 * kind: "P" a pointer, "z" a char string, "B*" a uint8_t pointer, "d" double,
 * "q" int64_t, "i" int32_t or an enum, "?" bool, "Q" size_t, or the name of
 * an earlier struct; a field of size n * (the kind's size) is an array of n.
 * The structs come in dependency order.  A field renamed in a header fails
 * this file's build; a field added there and not here fails the package's
 * import, which checks every offset and size the table gives against the
 * ctypes layout it builds (python/attnops/_lib.py, struct_class).
 */
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

#include "attnops.h"
#include "verify/compare.h"

#include "layouts.h"

typedef struct {
    const char *name;
    size_t offset, size;
    const char *kind;
} field;

typedef struct {
    const char *name;
    size_t size;
    const field *fields;
    size_t num_fields;
} layout;

#define F(S, f, kind) {#f, offsetof(S, f), sizeof(((S *)0)->f), kind}
#define LAYOUT(S, fields) {#S, sizeof(S), fields, sizeof fields / sizeof fields[0]}

static const field tensor_fields[] = {
    F(attnops_tensor, data, "P"),  F(attnops_tensor, dtype, "i"),   F(attnops_tensor, rank, "i"),
    F(attnops_tensor, shape, "q"), F(attnops_tensor, strides, "q"),
};

static const field output_dim_fields[] = {
    F(attnops_output_dim, query_dim, "i"), F(attnops_output_dim, extent, "q"),
};

static const field output_shape_fields[] = {
    F(attnops_output_shape, rank, "i"), F(attnops_output_shape, dims, "attnops_output_dim"),
};

static const field dtype_traits_fields[] = {
    F(attnops_dtype_traits, name, "z"),     F(attnops_dtype_traits, cann_name, "z"),
    F(attnops_dtype_traits, torch_name, "z"), F(attnops_dtype_traits, size, "Q"),
    F(attnops_dtype_traits, is_float, "?"), F(attnops_dtype_traits, to_f64, "P"),
    F(attnops_dtype_traits, from_f64, "P"),
};

#define FP(f, kind) F(attnops_fa_params, f, kind)
static const field fa_params_fields[] = {
    FP(query, "P"),           FP(key, "P"),
    FP(value, "P"),           FP(pse, "P"),
    FP(drop_mask, "P"),       FP(padding_mask, "P"),
    FP(atten_mask, "P"),      FP(prefix, "P"),
    FP(actual_seq_qlen, "P"), FP(actual_seq_kvlen, "P"),
    FP(q_start_idx, "P"),     FP(kv_start_idx, "P"),
    FP(query_rope, "P"),      FP(key_rope, "P"),
    FP(d_scale_q, "P"),       FP(d_scale_k, "P"),
    FP(d_scale_v, "P"),       FP(d_scale_dy, "P"),
    FP(d_scale_o, "P"),       FP(dropout_seq_qlen, "P"),
    FP(dropout_seq_kvlen, "P"), FP(dropout_q_start, "P"),
    FP(dropout_kv_start, "P"), FP(sink, "P"),
    FP(scale_value, "d"),
    FP(keep_prob, "d"),       FP(softcap, "d"),
    FP(pre_tokens, "q"),      FP(next_tokens, "q"),
    FP(head_num, "q"),        FP(input_layout, "i"),
    FP(inner_precise, "q"),   FP(sparse_mode, "q"),
    FP(pse_type, "q"),        FP(seed, "q"),
    FP(offset, "q"),          FP(dropout_head_num, "q"),
    FP(dropout_head_start, "q"), FP(out_dtype, "q"),
    FP(softmax_in_layout, "i"), FP(impl, "i"),
    FP(deterministic, "i"),   FP(num_threads, "i"),
};
#undef FP

static const field fa_fwd_args_fields[] = {
    F(attnops_fa_fwd_args, p, "attnops_fa_params"), F(attnops_fa_fwd_args, softmax_max, "P"),
    F(attnops_fa_fwd_args, softmax_sum, "P"),       F(attnops_fa_fwd_args, softmax_out, "P"),
    F(attnops_fa_fwd_args, attention_out, "P"),
};

#define FB(f) F(attnops_fa_bwd_args, f, "P")
static const field fa_bwd_args_fields[] = {
    F(attnops_fa_bwd_args, p, "attnops_fa_params"),
    FB(dy), FB(attention_in), FB(softmax_max), FB(softmax_sum), FB(softmax_in), FB(dq), FB(dk), FB(dv), FB(dpse),
    FB(dq_rope), FB(dk_rope), FB(dsink),
};
#undef FB

#define FD(f, kind) F(attnops_dropout_mask_args, f, kind)
static const field dropout_mask_args_fields[] = {
    FD(seed, "q"),    FD(offset, "q"), FD(keep_prob, "d"), FD(batch, "q"), FD(head_num, "q"), FD(seq_q, "q"),
    FD(seq_kv, "q"),  FD(actual_seq_qlen, "P"), FD(actual_seq_kvlen, "P"), FD(byte_mask, "P"),
    FD(bit_mask, "P"),
};
#undef FD

#define FG(f, kind) F(attnops_dropout_gen_mask_args, f, kind)
static const field dropout_gen_mask_args_fields[] = {
    FG(seed, "q"), FG(offset, "q"), FG(prob, "d"), FG(prob_dtype, "i"), FG(count, "q"), FG(bit_mask, "P"),
};
#undef FG

#define FK(f, kind) F(attnops_key_pool_args, f, kind)
static const field key_pool_args_fields[] = {
    FK(hidden_states, "P"), FK(wk, "P"),        FK(gate_weight, "P"), FK(ape, "P"),
    FK(state_cache, "P"),   FK(cache_block_table, "P"), FK(start_pos, "P"), FK(norm_weight, "P"),
    FK(norm_bias, "P"),     FK(cos, "P"),       FK(sin, "P"),         FK(cu_seqlens, "P"),
    FK(seqused, "P"),       FK(cmp_ratio, "q"), FK(norm_eps, "d"),    FK(rotary_mode, "q"),
    FK(capacity, "i"),      FK(pooled_key, "P"), FK(impl, "i"),       FK(num_threads, "i"),
};
#undef FK

#define FR(f, kind) F(attnops_attn_res_fwd_args, f, kind)
static const field attn_res_fwd_args_fields[] = {
    FR(blocks, "P"),      FR(num_blocks, "q"),     FR(partial_block, "P"), FR(proj_weight, "P"),
    FR(rmsnorm_gamma, "P"), FR(scale, "d"),        FR(rmsnorm_eps, "d"),   FR(enable_rmsnorm, "i"),
    FR(h, "P"),           FR(rms, "P"),            FR(alpha, "P"),         FR(impl, "i"),
    FR(num_threads, "i"),
};
#undef FR

#define FG(f, kind) F(attnops_attn_res_bwd_args, f, kind)
static const field attn_res_bwd_args_fields[] = {
    FG(grad_h, "P"),        FG(blocks, "P"),        FG(num_blocks, "q"),       FG(partial_block, "P"),
    FG(proj_weight, "P"),   FG(rmsnorm_gamma, "P"), FG(alpha, "P"),            FG(rms, "P"),
    FG(scale, "d"),         FG(enable_rmsnorm, "i"), FG(grad_blocks, "P"),     FG(grad_partial_block, "P"),
    FG(grad_proj_weight, "P"), FG(grad_rmsnorm_gamma, "P"), FG(impl, "i"),     FG(num_threads, "i"),
};
#undef FG

#define FI(f, kind) F(attnops_fia_args, f, kind)
static const field fia_args_fields[] = {
    FI(query, "P"),               FI(key, "P"),                    FI(value, "P"),
    FI(pse_shift, "P"),           FI(atten_mask, "P"),             FI(actual_seq_lengths, "P"),
    FI(actual_seq_lengths_kv, "P"), FI(block_table, "P"),          FI(query_rope, "P"),
    FI(key_rope, "P"),            FI(key_antiquant_scale, "P"),    FI(key_antiquant_offset, "P"),
    FI(value_antiquant_scale, "P"), FI(value_antiquant_offset, "P"), FI(antiquant_scale, "P"),
    FI(antiquant_offset, "P"),    FI(dequant_scale1, "P"),         FI(quant_scale1, "P"),
    FI(dequant_scale2, "P"),      FI(quant_scale2, "P"),           FI(quant_offset2, "P"),
    FI(query_padding_size, "P"),  FI(kv_padding_size, "P"),        FI(key_shared_prefix, "P"),
    FI(value_shared_prefix, "P"), FI(actual_shared_prefix_len, "P"), FI(num_heads, "q"),
    FI(scale_value, "d"),         FI(pre_tokens, "q"),             FI(next_tokens, "q"),
    FI(input_layout, "i"),        FI(output_layout, "i"),          FI(num_key_value_heads, "q"),
    FI(sparse_mode, "q"),         FI(inner_precise, "q"),          FI(block_size, "q"),
    FI(antiquant_mode, "q"),      FI(key_antiquant_mode, "q"),     FI(value_antiquant_mode, "q"),
    FI(softmax_lse_flag, "?"),    FI(softcap, "d"),                FI(alibi_slopes, "P"), FI(alibi_rule, "i"),
    FI(alibi_q_start_idx, "q"),   FI(alibi_kv_start_idx, "q"),     FI(learnable_sink, "P"),
    FI(attention_out, "P"),       FI(softmax_lse, "P"),            FI(impl, "i"),
    FI(deterministic, "i"),       FI(num_threads, "i"),
};
#undef FI

static const field cmp_options_fields[] = {
    F(cmp_options, rule, "i"),      F(cmp_options, rtol, "d"),  F(cmp_options, atol, "d"),
    F(cmp_options, min_share, "d"), F(cmp_options, dtype, "i"), F(cmp_options, counted, "B*"),
};

static const field cmp_metric_fields[] = {
    F(cmp_metric, name, "z"), F(cmp_metric, value, "d"), F(cmp_metric, limit, "d"), F(cmp_metric, at_least, "?"),
};

static const field cmp_verdict_fields[] = {
    F(cmp_verdict, rule, "i"),    F(cmp_verdict, pass, "?"),      F(cmp_verdict, n, "q"),
    F(cmp_verdict, counted, "q"), F(cmp_verdict, n_fail, "q"),    F(cmp_verdict, n_nan, "q"),
    F(cmp_verdict, max_abs, "d"), F(cmp_verdict, max_rel, "d"),   F(cmp_verdict, worst, "q"),
    F(cmp_verdict, n_metrics, "i"), F(cmp_verdict, metric, "cmp_metric"),
};

static const layout layouts[] = {
    LAYOUT(attnops_tensor, tensor_fields),
    LAYOUT(attnops_output_dim, output_dim_fields),
    LAYOUT(attnops_output_shape, output_shape_fields),
    LAYOUT(attnops_dtype_traits, dtype_traits_fields),
    LAYOUT(attnops_fa_params, fa_params_fields),
    LAYOUT(attnops_fa_fwd_args, fa_fwd_args_fields),
    LAYOUT(attnops_fa_bwd_args, fa_bwd_args_fields),
    LAYOUT(attnops_dropout_mask_args, dropout_mask_args_fields),
    LAYOUT(attnops_dropout_gen_mask_args, dropout_gen_mask_args_fields),
    LAYOUT(attnops_key_pool_args, key_pool_args_fields),
    LAYOUT(attnops_attn_res_fwd_args, attn_res_fwd_args_fields),
    LAYOUT(attnops_attn_res_bwd_args, attn_res_bwd_args_fields),
    LAYOUT(attnops_fia_args, fia_args_fields),
    LAYOUT(cmp_options, cmp_options_fields),
    LAYOUT(cmp_metric, cmp_metric_fields),
    LAYOUT(cmp_verdict, cmp_verdict_fields),
};

PyObject *native_layouts(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    size_t n = sizeof layouts / sizeof layouts[0];
    PyObject *all = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; all && i < n; i++) {
        const layout *l = &layouts[i];
        PyObject *fields = PyTuple_New((Py_ssize_t)l->num_fields);
        for (size_t j = 0; fields && j < l->num_fields; j++) {
            const field *f = &l->fields[j];
            PyObject *item = Py_BuildValue("(snns)", f->name, (Py_ssize_t)f->offset, (Py_ssize_t)f->size, f->kind);
            if (!item || PyTuple_SetItem(fields, (Py_ssize_t)j, item)) {
                Py_CLEAR(fields);
                break;
            }
        }
        PyObject *entry = fields ? Py_BuildValue("(snN)", l->name, (Py_ssize_t)l->size, fields) : NULL;
        if (!entry || PyTuple_SetItem(all, (Py_ssize_t)i, entry))
            Py_CLEAR(all);
    }
    return all;
}
