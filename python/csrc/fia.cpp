// torch.ops.attnops.fused_infer_attention_score: CPU and Meta kernels over the library's two-phase
// call (include/attnops.h, docs/FIA.md).  Inference only: no gradient.
//
//   fused_infer_attention_score(query, key, value, <attributes>) -> (attention_out, softmax_lse)
//
// input_layout is CANN's string: BSH, BSND, BNSD, TND, or BNSD_BSND (BNSD in, BSND out).
// attention_out: BSH [B,S1,N1*Dv], BSND [B,S1,N1,Dv], BNSD [B,N1,S1,Dv], TND [T1,N1,Dv];
// softmax_lse f32 [B,N1,S1,1] (TND [T1,N1,1]) with softmax_lse_flag, else a one-element tensor, as
// op-plugin returns it.  The lengths are int tensors, so that a decode step whose lengths are a
// tensor (flash_attn_with_kvcache's cache_seqlens) compiles.  softcap and alibi_slopes (f32 [N1]
// or [B,N1]) are attnops extensions (flash-attn's).
#include "binding.h"

#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnops_torch {
namespace {

using c10::IValue;

#define FIA_TENSOR(field)                                                                                        \
    [](attnops_fia_args &a, Views &views, const IValue &v) {                                                    \
        a.field = v.isNone() ? nullptr : views.of(v.toTensor(), #field);                                         \
    }
#define FIA_INT(field) [](attnops_fia_args &a, Views &, const IValue &v) { a.field = v.toInt(); }

// The arguments after query, key and value, in the schema's order (op-plugin's names and defaults,
// docs/FIA.md).  input_layout is read apart (it also names the output layout).
constexpr Arg<attnops_fia_args> kFiaAttrs[] = {
    {"Tensor?", "pse_shift", "None", FIA_TENSOR(pse_shift)},
    {"Tensor?", "atten_mask", "None", FIA_TENSOR(atten_mask)},
    {"Tensor?", "actual_seq_lengths", "None", FIA_TENSOR(actual_seq_lengths)},
    {"Tensor?", "actual_seq_lengths_kv", "None", FIA_TENSOR(actual_seq_lengths_kv)},
    {"Tensor?", "block_table", "None", FIA_TENSOR(block_table)},
    {"Tensor?", "query_rope", "None", FIA_TENSOR(query_rope)},
    {"Tensor?", "key_rope", "None", FIA_TENSOR(key_rope)},
    {"int", "num_heads", "1", FIA_INT(num_heads)},
    {"float", "scale", "1.0", [](attnops_fia_args &a, Views &, const IValue &v) { a.scale_value = v.toDouble(); }},
    {"int", "pre_tokens", "2147483647", FIA_INT(pre_tokens)},
    {"int", "next_tokens", "2147483647", FIA_INT(next_tokens)},
    {"str", "input_layout", "\"BSH\"", [](attnops_fia_args &, Views &, const IValue &) {}},
    {"int", "num_key_value_heads", "0", FIA_INT(num_key_value_heads)},
    {"int", "sparse_mode", "0", FIA_INT(sparse_mode)},
    {"int", "inner_precise", "0", FIA_INT(inner_precise)},
    {"int", "block_size", "0", FIA_INT(block_size)},
    {"bool", "softmax_lse_flag", "False",
     [](attnops_fia_args &a, Views &, const IValue &v) { a.softmax_lse_flag = v.toBool(); }},
    {"Tensor?", "key_antiquant_scale", "None", FIA_TENSOR(key_antiquant_scale)},
    {"Tensor?", "key_antiquant_offset", "None", FIA_TENSOR(key_antiquant_offset)},
    {"Tensor?", "value_antiquant_scale", "None", FIA_TENSOR(value_antiquant_scale)},
    {"Tensor?", "value_antiquant_offset", "None", FIA_TENSOR(value_antiquant_offset)},
    {"Tensor?", "antiquant_scale", "None", FIA_TENSOR(antiquant_scale)},
    {"Tensor?", "antiquant_offset", "None", FIA_TENSOR(antiquant_offset)},
    {"int", "antiquant_mode", "0", FIA_INT(antiquant_mode)},
    {"int", "key_antiquant_mode", "0", FIA_INT(key_antiquant_mode)},
    {"int", "value_antiquant_mode", "0", FIA_INT(value_antiquant_mode)},
    {"str", "impl", "\"auto\"",
     [](attnops_fia_args &a, Views &, const IValue &v) { a.impl = impl_of(v.toStringRef()); }},
    {"float", "softcap", "0.0", [](attnops_fia_args &a, Views &, const IValue &v) { a.softcap = v.toDouble(); }},
    {"Tensor?", "alibi_slopes", "None", FIA_TENSOR(alibi_slopes)},
    {"Tensor?", "learnable_sink", "None", FIA_TENSOR(learnable_sink)},
};
#undef FIA_TENSOR
#undef FIA_INT

constexpr size_t kNumAttrs = sizeof kFiaAttrs / sizeof kFiaAttrs[0];
constexpr size_t kArgs = 3 + kNumAttrs;
// Positions in kFiaAttrs of what the output shapes read.
constexpr size_t kBlockTable = 4, kNumHeads = 7, kInputLayout = 11, kSoftmaxLseFlag = 16;
static_assert(same_name(kFiaAttrs[kBlockTable].name, "block_table") &&
              same_name(kFiaAttrs[kNumHeads].name, "num_heads") &&
              same_name(kFiaAttrs[kInputLayout].name, "input_layout") &&
              same_name(kFiaAttrs[kSoftmaxLseFlag].name, "softmax_lse_flag"));

std::string schema() {
    return "fused_infer_attention_score(Tensor query, Tensor key, Tensor value, " + schema_args(kFiaAttrs) +
           ") -> (Tensor, Tensor)";
}

// CANN's input_layout string -> (the input's layout, the output's).
std::pair<attnops_layout, attnops_layout> layouts_of(const std::string &name) {
    if (name == "BNSD_BSND")
        return {ATTNOPS_LAYOUT_BNSD, ATTNOPS_LAYOUT_BSND};
    attnops_layout layout = name == "SBH" ? ATTNOPS_LAYOUT_UNSET : attnops_layout_from_string(name.c_str());
    if (layout == ATTNOPS_LAYOUT_UNSET)
        raise_value_error("attnops: input_layout is '" + name + "'; it must be one of BSH, BSND, BNSD, TND, BNSD_BSND");
    return {layout, layout};
}

// The args' inputs and attributes (no output): what the call and the output-shape query read.
void fill_inputs(attnops_fia_args &a, Views &views, const IValue *args) {
    attnops_fia_args_init(&a);
    a.query = views.of(args[0].toTensor(), "query");
    a.key = views.of(args[1].toTensor(), "key");
    a.value = views.of(args[2].toTensor(), "value");
    const IValue *attrs = args + 3;
    for (size_t i = 0; i < kNumAttrs; i++)
        kFiaAttrs[i].fill(a, views, attrs[i]);
    auto layouts = layouts_of(attrs[kInputLayout].toStringRef());
    a.input_layout = layouts.first;
    a.output_layout = layouts.second;
}

// softmax_lse without the flag: one element (op-plugin's placeholder), whatever the library's shape.
template <class Int> std::vector<Int> lse_shape(std::vector<Int> &&shape, const IValue *args) {
    return args[3 + kSoftmaxLseFlag].toBool() ? std::move(shape) : std::vector<Int>{Int(1)};
}

void fia_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kArgs);
    const at::Tensor &q = args[0].toTensor();
    attnops_fia_args a;
    Views views;
    fill_inputs(a, views, args);
    attnops_output_shape shapes[2];
    const attnops_status st = attnops_fused_infer_attention_score_output_shapes(&a, &shapes[0], &shapes[1]);
    if (st != ATTNOPS_SUCCESS)
        raise_status(st);
    at::Tensor out = new_output(on_query(shapes[0], q.sizes()), q.scalar_type());
    at::Tensor lse = new_output(lse_shape(on_query(shapes[1], q.sizes()), args), at::kFloat);
    a.num_threads = num_threads();
    a.attention_out = views.of(out, "attention_out");
    a.softmax_lse = views.of(lse, "softmax_lse");
    run_two_phase(attnops_fused_infer_attention_score_workspace_size, attnops_fused_infer_attention_score, a);

    torch::jit::drop(*stack, kArgs);
    torch::jit::push(*stack, std::move(out), std::move(lse));
}

void fia_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kArgs);
    const at::Tensor &q = args[0].toTensor(), &k = args[1].toTensor(), &v = args[2].toTensor();
    const IValue &table = args[3 + kBlockTable];
    auto shapes = meta_output_shapes({q, k, v}, [&](const MetaSizes &sizes, attnops_output_shape *out) {
        attnops_tensor views[3] = {sizes.view(0, q), sizes.view(1, k), sizes.view(2, v)};
        attnops_tensor no_table{}; // paged: only its presence counts (the shape query reads none of it)
        attnops_fia_args a;
        attnops_fia_args_init(&a);
        a.query = &views[0], a.key = &views[1], a.value = &views[2];
        if (table.isTensor())
            a.block_table = &no_table;
        a.num_heads = args[3 + kNumHeads].toInt();
        auto layouts = layouts_of(args[3 + kInputLayout].toStringRef());
        a.input_layout = layouts.first, a.output_layout = layouts.second;
        return attnops_fused_infer_attention_score_output_shapes(&a, &out[0], &out[1]);
    });
    at::TensorOptions meta = q.options().device(at::kMeta);
    at::Tensor out = at::empty_symint(shapes[0], meta);
    at::Tensor lse = at::empty_symint(lse_shape(std::move(shapes[1]), args), meta.dtype(at::kFloat));
    torch::jit::drop(*stack, kArgs);
    torch::jit::push(*stack, std::move(out), std::move(lse));
}

// ---- flash_attn_kvcache: flash-attn's arguments over a KV cache -----------------------------
// The attention of flash_attn_with_kvcache's common step (after its append and rotary, without a
// left pad, cache_batch_idx or a one-row window) with flash-attn's few arguments: a decode step's
// torch-side cost is mostly FusedInferAttentionScore's 32-argument schema (docs/PERFORMANCE.md "The
// torch binding's per-call cost").  It fills the same args as fused_infer_attention_score.
//
//   flash_attn_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, causal,
//                      window_left, window_right, softcap, alibi_slopes, return_softmax_lse, s_aux)
// (s_aux: vLLM's flash_attn_with_kvcache name for the attention sinks, [H], the library's learnable_sink)
//       -> (out, softmax_lse)
//
// q [B,Sq,H,D]; caches [B,S,Hk,D] / [B,S,Hk,Dv], or pages [blocks, page, Hk, D] through block_table
// (integer [B, >= pages]); cache_seqlens integer, B values in any shape (None: every row; with pages,
// every page of the table's row) -- the forms flash_attn_with_kvcache takes, so that a decode step
// goes from there to here with no Python in between; out [B,Sq,H,Dv]; softmax_lse f32 [B,H,Sq] with
// return_softmax_lse, else empty.  causal is bottom-right;
// the window keeps keys i + Sk - Sq - left <= j <= i + Sk - Sq + right (negative: unbounded); a
// one-row query has no window on the library's decode branch, so a left window there is refused.
constexpr size_t kKvcacheArgs = 13;

void check_rank4(const at::Tensor &t, const char *name) {
    if (t.dim() != 4)
        raise_value_error(std::string("attnops: flash_attn_kvcache: ") + name + " must have rank 4; it has rank " +
                          std::to_string(t.dim()));
}

// A page cache [blocks, page, Hk, D] as the library's [blocks, page, Hk D].
const attnops_tensor *pages_view(Views &views, const at::Tensor &cache, const char *name) {
    if (cache.stride(2) != cache.size(3) * cache.stride(3))
        raise_value_error(std::string("attnops: flash_attn_kvcache: ") + name +
                          "'s heads and head dim must be contiguous in a paged cache");
    attnops_tensor *v = views.of(cache, name);
    v->rank = 3;
    v->shape[2] = cache.size(2) * cache.size(3);
    v->strides[2] = cache.stride(3);
    return v;
}

// t itself where its dtype is an integer one; else the op's TypeError.
const at::Tensor &integer_tensor(const at::Tensor &t, const char *name) {
    if (!at::isIntegralType(t.scalar_type(), /*includeBool=*/false))
        raise_type_error(std::string("attnops: flash_attn_kvcache: ") + name + " has dtype torch." +
                         std::string(c10::getDtypeNames(t.scalar_type()).first) + "; it must be an integer dtype");
    return t;
}

void kvcache_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kKvcacheArgs);
    const at::Tensor &q = args[0].toTensor(), &kc = args[1].toTensor(), &vc = args[2].toTensor();
    check_rank4(q, "q");
    check_rank4(kc, "k_cache");
    check_rank4(vc, "v_cache");
    int64_t b = q.size(0), sq = q.size(1), heads = q.size(2), d = q.size(3), hk = kc.size(2), dv = vc.size(3);
    bool paged = args[4].isTensor(), lse_wanted = args[11].toBool();
    int64_t left = args[7].toInt(), right = args[6].toBool() ? 0 : args[8].toInt();
    if (sq == 1 && left >= 0)
        raise_not_implemented("attnops: flash_attn_kvcache: a one-row query with window_left >= 0 runs on the "
                              "library's decode branch, which has no window; flash_attn_with_kvcache takes it");
    // flash-attn's forms as the library's: int32 / int64 lengths [B], an int32 table.  Only integers are
    // converted (a float length would be truncated), and a table's ids only where int32 holds them all
    // (a wrapped id would name another block, which the library's range check could not see).
    at::Tensor lens = args[3].isTensor() ? args[3].toTensor() : at::Tensor();
    if (lens.defined()) {
        if (lens.scalar_type() != at::kInt && lens.scalar_type() != at::kLong)
            lens = integer_tensor(lens, "cache_seqlens").to(at::kLong);
        if (lens.dim() != 1)
            lens = lens.reshape(-1);
        if (lens.size(0) != b)
            raise_value_error("attnops: flash_attn_kvcache: cache_seqlens has " + std::to_string(lens.size(0)) +
                              " values; it must have batch = " + std::to_string(b));
    }
    at::Tensor table = paged ? args[4].toTensor() : at::Tensor();
    if (paged && table.scalar_type() != at::kInt) {
        const at::Tensor given = integer_tensor(table, "block_table");
        table = given.to(at::kInt);
        if (!table.to(given.scalar_type()).equal(given))
            raise_value_error("attnops: flash_attn_kvcache: block_table (torch." +
                              std::string(c10::getDtypeNames(given.scalar_type()).first) +
                              ") holds a block id outside int32; block ids are int32");
    }
    at::Tensor out = new_output({b, sq, heads, dv}, q.scalar_type());
    at::Tensor lse = lse_wanted ? new_output({b, heads, sq}, at::kFloat) : new_output({0}, at::kFloat);

    attnops_fia_args a;
    attnops_fia_args_init(&a);
    Views views;
    a.query = views.of(q, "q");
    a.key = paged ? pages_view(views, kc, "k_cache") : views.of(kc, "k_cache");
    a.value = paged ? pages_view(views, vc, "v_cache") : views.of(vc, "v_cache");
    a.actual_seq_lengths_kv = lens.defined() ? views.of(lens, "cache_seqlens") : nullptr;
    if (paged) {
        a.block_table = views.of(table, "block_table");
        a.block_size = kc.size(1);
        if (!lens.defined()) { // every page of the table's row (a table of another rank is refused below)
            const int64_t rows = table.dim() == 2 ? table.size(1) * kc.size(1) : 0;
            a.actual_seq_lengths_kv = views.ints(std::vector<int64_t>(b, rows));
        }
    }
    a.num_heads = heads;
    a.num_key_value_heads = hk;
    a.scale_value = args[5].isNone() ? 1.0 / std::sqrt(static_cast<double>(d)) : args[5].toDouble();
    a.input_layout = a.output_layout = ATTNOPS_LAYOUT_BSND;
    if (sq > 1) // the decode branch (one row) takes no band
        set_band(a, left, right);
    a.softcap = std::max(args[9].toDouble(), 0.0);
    a.alibi_slopes = args[10].isTensor() ? views.of(args[10].toTensor(), "alibi_slopes") : nullptr;
    a.learnable_sink = args[12].isTensor() ? views.of(args[12].toTensor(), "s_aux") : nullptr;
    a.softmax_lse_flag = lse_wanted;
    a.num_threads = num_threads();
    a.attention_out = views.of(out, "out");
    if (lse_wanted) { // the library's [B, N1, S1, 1]
        attnops_tensor *v = views.of(lse, "softmax_lse");
        v->rank = 4;
        v->shape[3] = 1;
        v->strides[3] = 1;
        a.softmax_lse = v;
    }
    run_two_phase(attnops_fused_infer_attention_score_workspace_size, attnops_fused_infer_attention_score, a);

    torch::jit::drop(*stack, kKvcacheArgs);
    torch::jit::push(*stack, std::move(out), std::move(lse));
}

void kvcache_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kKvcacheArgs);
    const at::Tensor &q = args[0].toTensor();
    check_rank4(q, "q");
    check_rank4(args[2].toTensor(), "v_cache");
    c10::SymInt b = q.sym_size(0), sq = q.sym_size(1), heads = q.sym_size(2), dv = args[2].toTensor().sym_size(3);
    at::TensorOptions meta = q.options().device(at::kMeta);
    at::Tensor out = at::empty_symint({b, sq, heads, dv}, meta);
    at::Tensor lse = args[11].toBool() ? at::empty_symint({b, heads, sq}, meta.dtype(at::kFloat))
                                       : at::empty({0}, meta.dtype(at::kFloat));
    torch::jit::drop(*stack, kKvcacheArgs);
    torch::jit::push(*stack, std::move(out), std::move(lse));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attnops, m) {
    m.def(schema().c_str());
    m.def("flash_attn_kvcache(Tensor q, Tensor k_cache, Tensor v_cache, Tensor? cache_seqlens=None, "
          "Tensor? block_table=None, float? softmax_scale=None, bool causal=False, int window_left=-1, "
          "int window_right=-1, float softcap=0., Tensor? alibi_slopes=None, bool return_softmax_lse=False, "
          "Tensor? s_aux=None) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(attnops, CPU, m) {
    m.impl("fused_infer_attention_score", torch::CppFunction::makeFromBoxedFunction<&fia_cpu>());
    m.impl("flash_attn_kvcache", torch::CppFunction::makeFromBoxedFunction<&kvcache_cpu>());
}

TORCH_LIBRARY_IMPL(attnops, Autograd, m) {
    m.impl("fused_infer_attention_score", no_gradient());
    m.impl("flash_attn_kvcache", no_gradient());
}

TORCH_LIBRARY_IMPL(attnops, Meta, m) {
    m.impl("fused_infer_attention_score", torch::CppFunction::makeFromBoxedFunction<&fia_meta>());
    m.impl("flash_attn_kvcache", torch::CppFunction::makeFromBoxedFunction<&kvcache_meta>());
}

} // namespace attnops_torch
