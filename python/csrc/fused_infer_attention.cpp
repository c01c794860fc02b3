// torch.ops.attnops.fused_infer_attention_score: CPU and Meta kernels over the library's two-phase
// call (include/attnops.h, docs/INFER_ATTENTION.md).  Inference only: no gradient.
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
// docs/INFER_ATTENTION.md).  input_layout is read apart (it also names the output layout).
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

template <class Int> struct FiaShapes {
    std::vector<Int> out, lse;
};

// The output shapes; the library checks everything else.
template <class Int>
FiaShapes<Int> fia_shapes(c10::ArrayRef<Int> q, c10::ArrayRef<Int> k, c10::ArrayRef<Int> v, const IValue *attrs) {
    auto [in, out_layout] = layouts_of(attrs[kInputLayout].toStringRef());
    int64_t n1 = attrs[kNumHeads].toInt();
    bool paged = attrs[kBlockTable].isTensor();
    size_t rank = in == ATTNOPS_LAYOUT_BSH || in == ATTNOPS_LAYOUT_TND ? 3 : 4;
    if (q.size() != rank)
        raise_value_error("attnops: query has rank " + std::to_string(q.size()) + "; layout " +
                          attrs[kInputLayout].toStringRef() + " takes rank " + std::to_string(rank));
    if (k.empty() || v.empty())
        raise_value_error("attnops: key and value must have rank 3 or 4");
    Int b = q[0], s1 = in == ATTNOPS_LAYOUT_BNSD ? q[2] : q[1];
    Int d = in == ATTNOPS_LAYOUT_BSH ? q[2] / std::max<int64_t>(n1, 1) : q.back();
    Int dv = v.back();
    if (!(v.size() == 4 || (in == ATTNOPS_LAYOUT_TND && !paged))) { // value [.., N2 * Dv] beside key's [.., N2 * D]
        Int n2 = d != 0 ? k.back() / d : Int(1);
        if (n2 == 0)
            n2 = 1;
        dv = v.back() / n2;
    }
    FiaShapes<Int> s;
    bool lse = attrs[kSoftmaxLseFlag].toBool();
    if (in == ATTNOPS_LAYOUT_TND) {
        s.out = {q[0], Int(n1), dv};
        s.lse = {q[0], Int(n1), Int(1)};
    } else {
        if (out_layout == ATTNOPS_LAYOUT_BSH)
            s.out = {b, s1, dv * n1};
        else if (out_layout == ATTNOPS_LAYOUT_BSND)
            s.out = {b, s1, Int(n1), dv};
        else
            s.out = {b, Int(n1), s1, dv};
        s.lse = {b, Int(n1), s1, Int(1)};
    }
    if (!lse)
        s.lse = {Int(1)};
    return s;
}

void fia_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kArgs);
    const IValue *attrs = args + 3;
    const at::Tensor &q = args[0].toTensor(), &k = args[1].toTensor(), &v = args[2].toTensor();
    FiaShapes<int64_t> shapes = fia_shapes(q.sizes(), k.sizes(), v.sizes(), attrs);
    at::Tensor out = at::empty(shapes.out, q.options());
    at::Tensor lse = at::empty(shapes.lse, q.options().dtype(at::kFloat));

    attnops_fia_args a;
    attnops_fia_args_init(&a);
    Views views;
    a.query = views.of(q, "query");
    a.key = views.of(k, "key");
    a.value = views.of(v, "value");
    for (size_t i = 0; i < kNumAttrs; i++)
        kFiaAttrs[i].fill(a, views, attrs[i]);
    auto layouts = layouts_of(attrs[kInputLayout].toStringRef());
    a.input_layout = layouts.first;
    a.output_layout = layouts.second;
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
    FiaShapes<c10::SymInt> shapes = fia_shapes(q.sym_sizes(), k.sym_sizes(), v.sym_sizes(), args + 3);
    at::TensorOptions meta = q.options().device(at::kMeta);
    at::Tensor out = at::empty_symint(shapes.out, meta);
    at::Tensor lse = at::empty_symint(shapes.lse, meta.dtype(at::kFloat));
    torch::jit::drop(*stack, kArgs);
    torch::jit::push(*stack, std::move(out), std::move(lse));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attnops, m) { m.def(schema().c_str()); }

TORCH_LIBRARY_IMPL(attnops, CPU, m) {
    m.impl("fused_infer_attention_score", torch::CppFunction::makeFromBoxedFunction<&fia_cpu>());
}

TORCH_LIBRARY_IMPL(attnops, Autograd, m) {
    m.impl("fused_infer_attention_score", torch::autograd::autogradNotImplementedFallback());
}

TORCH_LIBRARY_IMPL(attnops, Meta, m) {
    m.impl("fused_infer_attention_score", torch::CppFunction::makeFromBoxedFunction<&fia_meta>());
}

} // namespace attnops_torch
