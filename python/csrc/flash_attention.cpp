// torch.ops.attnops.flash_attention_score and flash_attention_score_grad: CPU, Meta and Autograd
// kernels over the library's two-phase calls (include/attnops.h).
//
//   flash_attention_score(query, key, value, head_num, input_layout, <attributes>)
//       -> (attention_out, softmax_max, softmax_sum)
//   flash_attention_score_grad(query, key, value, dy, attention_in, softmax_max, softmax_sum,
//                              head_num, input_layout, <attributes>)
//       -> (dq, dk, dv, dq_rope, dk_rope, dsink)
//
// Shapes (N1 query heads, N2 kv heads): BNSD q [B,N1,S1,D], BSND [B,S1,N1,D], BSH [B,S1,N1*D],
// SBH [S1,B,N1*D], TND [T1,N1,D]; attention_out is q's shape with D -> Dv; softmax_max / softmax_sum
// f32 [B,N1,S1,8] (TND [T1,N1,8]); the gradients have their inputs' shapes (dq_rope / dk_rope empty
// without rope inputs; dsink f32 [N1] with a sink, else empty).  The attributes are kFaAttrs below: the one list the two schemas, their
// defaults and the params come from.  Kernels are boxed, reading the stack by the list's positions.
#include "binding.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnops_torch {
namespace {

using c10::IValue;
using torch::autograd::variable_list;

std::optional<std::vector<int64_t>> int_list(const IValue &v) {
    if (v.isNone())
        return std::nullopt;
    return v.toIntVector();
}

// An int tensor's values (a tensor argument the op reads at run time).
std::vector<int64_t> tensor_values(const at::Tensor &t) {
    at::Tensor values = t.to(at::kLong).contiguous();
    const int64_t *data = values.data_ptr<int64_t>();
    return std::vector<int64_t>(data, data + values.numel());
}

std::string head_of(const std::vector<int64_t> &values) {
    std::string s = "[";
    for (size_t i = 0; i < values.size() && i < 8; i++)
        s += (i ? ", " : "") + std::to_string(values[i]);
    return s + (values.size() > 8 ? ", ...]" : "]");
}

// flash-attn's cumulative lengths [B + 1] from 0, as the library's cumulative list without the 0.
std::vector<int64_t> cumulative_without_zero(const at::Tensor &cu, const char *name) {
    std::vector<int64_t> values = tensor_values(cu);
    if (values.empty() || values[0] != 0)
        raise_value_error(std::string("attnops: ") + name +
                          " must be cumulative lengths [batch + 1] starting at 0; got " + head_of(values));
    values.erase(values.begin());
    return values;
}

#define FA_TENSOR(field)                                                                                         \
    [](attnops_fa_params &p, Views &views, const IValue &v) {                                                   \
        p.field = v.isNone() ? nullptr : views.of(v.toTensor(), #field);                                         \
    }
#define FA_INTS(field)                                                                                           \
    [](attnops_fa_params &p, Views &views, const IValue &v) { p.field = views.ints(int_list(v)); }

// The attributes flash_attention_score and npu_fusion_attention share, name and rule; pre_tokens and
// next_tokens share their rule (torch_npu spells them pre_tockens, next_tockens).
using FaFill = void (*)(attnops_fa_params &, Views &, const IValue &);
constexpr FaFill kFillPreTokens = [](attnops_fa_params &p, Views &, const IValue &v) { p.pre_tokens = v.toInt(); };
constexpr FaFill kFillNextTokens = [](attnops_fa_params &p, Views &, const IValue &v) { p.next_tokens = v.toInt(); };
constexpr Arg<attnops_fa_params> kPse = {"Tensor?", "pse", "None", FA_TENSOR(pse)},
                                 kAttenMask = {"Tensor?", "atten_mask", "None", FA_TENSOR(atten_mask)},
                                 kScale = {"float", "scale", "1.0",
                                           [](attnops_fa_params &p, Views &, const IValue &v) {
                                               p.scale_value = v.toDouble();
                                           }},
                                 kKeepProb = {"float", "keep_prob", "1.0",
                                              [](attnops_fa_params &p, Views &, const IValue &v) {
                                                  p.keep_prob = v.toDouble();
                                              }},
                                 kInnerPrecise = {"int", "inner_precise", "0",
                                                  [](attnops_fa_params &p, Views &, const IValue &v) {
                                                      p.inner_precise = v.toInt();
                                                  }},
                                 kPrefix = {"int[]?", "prefix", "None", FA_INTS(prefix)},
                                 kSeqQlen = {"int[]?", "actual_seq_qlen", "None", FA_INTS(actual_seq_qlen)},
                                 kSeqKvlen = {"int[]?", "actual_seq_kvlen", "None", FA_INTS(actual_seq_kvlen)},
                                 kSparseMode = {"int", "sparse_mode", "0",
                                                [](attnops_fa_params &p, Views &, const IValue &v) {
                                                    p.sparse_mode = v.toInt();
                                                }},
                                 kOffset = {"int", "offset", "0",
                                            [](attnops_fa_params &p, Views &, const IValue &v) {
                                                p.offset = v.toInt();
                                            }};

// The attributes after head_num and input_layout, in the schemas' order (CANN's names and
// defaults, include/attnops.h; attnops' extensions after them).  A later entry may override an
// earlier one's field: seed_offset and cu_seqlens_* are read at run time in place of seed / offset
// and the length lists (the forms a compiled graph passes).
constexpr Arg<attnops_fa_params> kFaAttrs[] = {
    kPse,
    {"Tensor?", "drop_mask", "None", FA_TENSOR(drop_mask)},
    kAttenMask,
    kScale,
    kKeepProb,
    {"int", "pre_tokens", "2147483647", kFillPreTokens},
    {"int", "next_tokens", "2147483647", kFillNextTokens},
    kInnerPrecise,
    kPrefix,
    kSeqQlen,
    kSeqKvlen,
    kSparseMode,
    {"int", "pse_type", "1", [](attnops_fa_params &p, Views &, const IValue &v) { p.pse_type = v.toInt(); }},
    {"Tensor?", "query_rope", "None", FA_TENSOR(query_rope)},
    {"Tensor?", "key_rope", "None", FA_TENSOR(key_rope)},
    {"int[]?", "q_start_idx", "None", FA_INTS(q_start_idx)},
    {"int[]?", "kv_start_idx", "None", FA_INTS(kv_start_idx)},
    {"int", "seed", "2", [](attnops_fa_params &p, Views &, const IValue &v) { p.seed = v.toInt(); }},
    kOffset,
    {"str", "impl", "\"auto\"",
     [](attnops_fa_params &p, Views &, const IValue &v) { p.impl = impl_of(v.toStringRef()); }},
    {"bool", "deterministic", "False",
     [](attnops_fa_params &p, Views &, const IValue &v) {
         p.deterministic = v.toBool() || at::globalContext().deterministicAlgorithms();
     }},
    // int64 [2]: (seed, offset) drawn inside a compiled graph, read at run time.
    {"Tensor?", "seed_offset", "None",
     [](attnops_fa_params &p, Views &, const IValue &v) {
         if (v.isNone())
             return;
         std::vector<int64_t> so = tensor_values(v.toTensor());
         if (so.size() != 2)
             raise_value_error("attnops: seed_offset must hold 2 values (seed, offset); got " + head_of(so));
         p.seed = so[0];
         p.offset = so[1];
     }},
    // TND: "" (per-batch [N1,S_b,8] blocks) or "same_as_input" (a true [T1,N1,8] array).
    {"str", "softmax_in_layout", "\"\"",
     [](attnops_fa_params &p, Views &, const IValue &v) {
         const std::string &s = v.toStringRef();
         if (s != "" && s != "same_as_input")
             raise_value_error("attnops: softmax_in_layout is '" + s + "'; it must be \"\" or \"same_as_input\"");
         p.softmax_in_layout = s.empty() ? ATTNOPS_SOFTMAX_LAYOUT_DEFAULT : ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT;
     }},
    {"Tensor?", "cu_seqlens_q", "None",
     [](attnops_fa_params &p, Views &views, const IValue &v) {
         if (!v.isNone())
             p.actual_seq_qlen = views.ints(cumulative_without_zero(v.toTensor(), "cu_seqlens_q"));
     }},
    {"Tensor?", "cu_seqlens_kv", "None",
     [](attnops_fa_params &p, Views &views, const IValue &v) {
         if (!v.isNone())
             p.actual_seq_kvlen = views.ints(cumulative_without_zero(v.toTensor(), "cu_seqlens_kv"));
     }},
    {"float", "softcap", "0.0", [](attnops_fa_params &p, Views &, const IValue &v) { p.softcap = v.toDouble(); }},
    // The dropout block of a split call (context parallelism, include/attnops.h).
    {"int", "dropout_head_num", "0",
     [](attnops_fa_params &p, Views &, const IValue &v) { p.dropout_head_num = v.toInt(); }},
    {"int", "dropout_head_start", "0",
     [](attnops_fa_params &p, Views &, const IValue &v) { p.dropout_head_start = v.toInt(); }},
    {"int[]?", "dropout_seq_qlen", "None", FA_INTS(dropout_seq_qlen)},
    {"int[]?", "dropout_seq_kvlen", "None", FA_INTS(dropout_seq_kvlen)},
    {"int[]?", "dropout_q_start", "None", FA_INTS(dropout_q_start)},
    {"int[]?", "dropout_kv_start", "None", FA_INTS(dropout_kv_start)},
    // Attention sinks (torch_npu's sink): f32 [N1], differentiable (the grad op's dsink).
    {"Tensor?", "sink", "None", FA_TENSOR(sink)},
};

// torch_npu's npu_fusion_attention after head_num and input_layout: op-plugin's schema, its order and
// spelling (pre_tockens), then attnops' seed and offset: the dropout stream's, which torch_npu draws
// from its generator (attnops.torch_npu likewise) and the op takes as given.  gen_mask_parallel and sync
// have no effect; softmax_layout "TND" is CANN's softmax_in_layout "same_as_input" (input_layout TND).
constexpr Arg<attnops_fa_params> kNpuAttrs[] = {
    kPse,
    {"Tensor?", "padding_mask", "None", FA_TENSOR(padding_mask)}, // reserved: the library refuses one
    kAttenMask,
    kScale,
    kKeepProb,
    {"int", "pre_tockens", "2147483647", kFillPreTokens},
    {"int", "next_tockens", "2147483647", kFillNextTokens},
    kInnerPrecise,
    kPrefix,
    kSeqQlen,
    kSeqKvlen,
    kSparseMode,
    {"bool", "gen_mask_parallel", "True", [](attnops_fa_params &, Views &, const IValue &) {}},
    {"bool", "sync", "False", [](attnops_fa_params &, Views &, const IValue &) {}},
    {"str", "softmax_layout", "\"\"",
     [](attnops_fa_params &p, Views &, const IValue &v) {
         const std::string &s = v.toStringRef();
         if (s != "" && s != "TND")
             raise_value_error("attnops: npu_fusion_attention: softmax_layout is '" + s +
                               "'; it must be \"\" or \"TND\"");
         if (s == "TND" && p.input_layout != ATTNOPS_LAYOUT_TND)
             raise_value_error("attnops: npu_fusion_attention: softmax_layout \"TND\" needs input_layout TND");
         p.softmax_in_layout = s.empty() ? ATTNOPS_SOFTMAX_LAYOUT_DEFAULT : ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT;
     }},
    {"int", "seed", "0", [](attnops_fa_params &p, Views &, const IValue &v) { p.seed = v.toInt(); }},
    kOffset,
};
#undef FA_TENSOR
#undef FA_INTS

constexpr size_t kNumAttrs = sizeof kFaAttrs / sizeof kFaAttrs[0];
// Positions in the stack: the forward's (query, key, value) and the backward's seven tensors come
// before head_num, input_layout and the attributes.
constexpr size_t kFwdTensors = 3, kBwdTensors = 7;
constexpr size_t kFwdArgs = kFwdTensors + 2 + kNumAttrs, kBwdArgs = kBwdTensors + 2 + kNumAttrs;
// Positions of query_rope / key_rope / sink in kFaAttrs.
constexpr size_t kQueryRope = 13, kKeyRope = 14, kSink = kNumAttrs - 1;
static_assert(same_name(kFaAttrs[kQueryRope].name, "query_rope") && same_name(kFaAttrs[kKeyRope].name, "key_rope") &&
              same_name(kFaAttrs[kSink].name, "sink"));

template <size_t N>
std::string schema(const char *name, const char *tensors, const Arg<attnops_fa_params> (&attrs)[N],
                   const char *returns) {
    return std::string(name) + "(" + tensors + ", int head_num, str input_layout, " + schema_args(attrs) +
           ") -> " + returns;
}
constexpr const char *kFwdTensorArgs = "Tensor query, Tensor key, Tensor value";
constexpr const char *kBwdTensorArgs = "Tensor query, Tensor key, Tensor value, Tensor dy, Tensor attention_in, "
                                       "Tensor softmax_max, Tensor softmax_sum";

attnops_layout layout_of(const std::string &name) {
    attnops_layout layout = attnops_layout_from_string(name.c_str());
    if (layout == ATTNOPS_LAYOUT_UNSET)
        raise_value_error("attnops: input_layout is '" + name + "'; it must be one of BNSD, BSND, BSH, SBH, TND");
    return layout;
}

// head_num, input_layout and the attributes of a list (the stack from head_num on) into the params.
template <size_t N>
void fill_attrs(attnops_fa_params &p, Views &views, const IValue *attrs, const Arg<attnops_fa_params> (&list)[N],
                const std::string &layout) {
    p.head_num = attrs[0].toInt();
    p.input_layout = layout_of(layout);
    p.deterministic = at::globalContext().deterministicAlgorithms(); // a list's own attribute may set it too
    for (size_t i = 0; i < N; i++)
        list[i].fill(p, views, attrs[2 + i]);
    p.num_threads = num_threads();
}

void fill_params(attnops_fa_params &p, Views &views, const IValue *attrs) {
    fill_attrs(p, views, attrs, kFaAttrs, attrs[1].toStringRef());
}

// torch_npu upper-cases input_layout before CANN sees it ("bsh" is BSH).
std::string npu_layout(const IValue &v) {
    std::string layout = v.toStringRef();
    for (char &c : layout)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return layout;
}

// ---- flash-attn's arguments ---------------------------------------------------------------
// flash_attn_forward / flash_attn_backward: flash_attn_func's common call (no dropout, no ALiBi) with
// flash-attn's few arguments.  torch parses a call's schema argument by argument, and
// FlashAttentionScore's 37 cost 0.85-0.88 of SDPA's whole call on a 16-token problem
// (docs/PERFORMANCE.md "The torch binding's per-call cost").  They fill the same params as
// flash_attention_score(_grad) with flash-attn's rules mapped onto CANN's, and share its kernels and
// backward node.
//
//   flash_attn_forward(q, k, v, <attributes>) -> (attention_out, softmax_max, softmax_sum)
//   flash_attn_backward(q, k, v, dy, attention_in, softmax_max, softmax_sum, <attributes>) -> (dq, dk, dv)
//
// q [B,Sq,H,D], k [B,Sk,Hk,D], v [B,Sk,Hk,Dv] (BSND); softmax_max / softmax_sum f32 [B,H,Sq,8].
// causal is bottom-right (sparse mode 3); the window keeps keys i + Sk - Sq - left <= j <= i + Sk - Sq +
// right, a negative side unbounded (mode 4; with causal, right = 0); softcap <= 0 is off.
constexpr const char *kFlashAttnAttrs = "float? softmax_scale=None, bool causal=False, int window_left=-1, "
                                        "int window_right=-1, float softcap=0., bool deterministic=False";
constexpr size_t kFlashAttnFwdArgs = kFwdTensors + 6, kFlashAttnBwdArgs = kBwdTensors + 6;

int64_t flash_attn_heads(const at::Tensor &q) {
    if (q.dim() != 4)
        raise_value_error("attnops: flash_attn: q must be [batch, seqlen, nheads, headdim]; it has rank " +
                          std::to_string(q.dim()));
    return q.sym_size(2).guard_int(__FILE__, __LINE__);
}

// q's shape and flash-attn's attributes (the stack from softmax_scale on) into the params.
void fill_flash_attn_params(attnops_fa_params &p, const at::Tensor &q, const IValue *attrs) {
    p.head_num = flash_attn_heads(q);
    p.input_layout = ATTNOPS_LAYOUT_BSND;
    p.scale_value = attrs[0].isNone() ? 1.0 / std::sqrt(static_cast<double>(q.size(3))) : attrs[0].toDouble();
    int64_t left = attrs[2].toInt(), right = attrs[1].toBool() ? 0 : attrs[3].toInt();
    set_band(p, left, right);
    p.softcap = std::max(attrs[4].toDouble(), 0.0);
    p.deterministic = attrs[5].toBool() || at::globalContext().deterministicAlgorithms();
    p.num_threads = num_threads();
}

// ---- the forward ---------------------------------------------------------------------------
// attention_out, softmax_max, softmax_sum: what every forward op returns first.
using FaOutputs = std::array<at::Tensor, 3>;

void push_outputs(torch::jit::Stack *stack, FaOutputs &&o) {
    torch::jit::push(*stack, std::move(o[0]), std::move(o[1]), std::move(o[2]));
}

// The forward of `nargs` arguments on top of the stack (query, key, value first), dropped from it;
// fill sets the params from them.
template <class Fill>
FaOutputs forward_run(torch::jit::Stack *stack, size_t nargs, Fill fill) {
    const IValue *args = &*(stack->end() - nargs);
    const at::Tensor &q = args[0].toTensor(), &k = args[1].toTensor(), &v = args[2].toTensor();
    attnops_fa_fwd_args a;
    attnops_fa_fwd_args_init(&a);
    Views views;
    a.p.query = views.of(q, "query");
    a.p.key = views.of(k, "key");
    a.p.value = views.of(v, "value");
    fill(a.p, views, args);
    attnops_output_shape shapes[2];
    const attnops_status st = attnops_flash_attention_score_output_shapes(&a, &shapes[0], &shapes[1]);
    if (st != ATTNOPS_SUCCESS)
        raise_status(st);
    at::Tensor out = new_output(on_query(shapes[0], q.sizes()), q.scalar_type());
    at::Tensor smax = new_output(on_query(shapes[1], q.sizes()), at::kFloat);
    at::Tensor ssum = new_output(on_query(shapes[1], q.sizes()), at::kFloat);
    a.attention_out = views.of(out, "attention_out");
    a.softmax_max = views.of(smax, "softmax_max");
    a.softmax_sum = views.of(ssum, "softmax_sum");
    run_two_phase(attnops_flash_attention_score_workspace_size, attnops_flash_attention_score, a);

    torch::jit::drop(*stack, nargs);
    return {std::move(out), std::move(smax), std::move(ssum)};
}

FaOutputs forward_meta_run(torch::jit::Stack *stack, size_t nargs, int64_t head_num, const std::string &layout) {
    const IValue *args = &*(stack->end() - nargs);
    const at::Tensor &q = args[0].toTensor(), &k = args[1].toTensor(), &v = args[2].toTensor();
    auto shapes = meta_output_shapes({q, k, v}, [&](const MetaSizes &sizes, attnops_output_shape *out) {
        attnops_tensor views[3] = {sizes.view(0, q), sizes.view(1, k), sizes.view(2, v)};
        attnops_fa_fwd_args a;
        attnops_fa_fwd_args_init(&a);
        a.p.query = &views[0], a.p.key = &views[1], a.p.value = &views[2];
        a.p.head_num = head_num, a.p.input_layout = layout_of(layout);
        return attnops_flash_attention_score_output_shapes(&a, &out[0], &out[1]);
    });
    at::TensorOptions meta = q.options().device(at::kMeta);
    FaOutputs o = {at::empty_symint(shapes[0], meta), at::empty_symint(shapes[1], meta.dtype(at::kFloat)),
                   at::empty_symint(shapes[1], meta.dtype(at::kFloat))};
    torch::jit::drop(*stack, nargs);
    return o;
}

void forward_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    push_outputs(stack, forward_run(stack, kFwdArgs, [](attnops_fa_params &p, Views &views, const IValue *a) {
                                        fill_params(p, views, a + kFwdTensors);
                                    }));
}

void forward_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kFwdArgs);
    push_outputs(stack, forward_meta_run(stack, kFwdArgs, args[3].toInt(), args[4].toStringRef()));
}

void flash_attn_forward_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    push_outputs(stack, forward_run(stack, kFlashAttnFwdArgs, [](attnops_fa_params &p, Views &, const IValue *a) {
                                        fill_flash_attn_params(p, a[0].toTensor(), a + kFwdTensors);
                                    }));
}

void flash_attn_forward_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kFlashAttnFwdArgs);
    push_outputs(stack, forward_meta_run(stack, kFlashAttnFwdArgs, flash_attn_heads(args[0].toTensor()), "BSND"));
}

// ---- torch_npu's arguments ------------------------------------------------------------------
// npu_fusion_attention / npu_fusion_attention_backward: torch_npu's npu_fusion_attention with its own
// schema (kNpuAttrs: 22 arguments against flash_attention_score's 37, which torch parses one by one on
// every call), over the same params and kernels, and the grad op its backward node calls with the
// forward's arguments.  attnops.torch_npu calls them for a call without dropout.
//
//   npu_fusion_attention(query, key, value, head_num, input_layout, <kNpuAttrs>)
//       -> (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)
//   npu_fusion_attention_backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, head_num,
//                                 input_layout, <kNpuAttrs>) -> (dq, dk, dv)
//
// Shapes as flash_attention_score's; softmax_out is empty (CANN reserves it); seed and offset are
// returned as given; numels is the dropout stream's length, B N1 S1 S2 (TND: N1 sum_b S1_b S2_b).
constexpr size_t kNumNpuAttrs = sizeof kNpuAttrs / sizeof kNpuAttrs[0];
constexpr size_t kNpuFwdArgs = kFwdTensors + 2 + kNumNpuAttrs, kNpuBwdArgs = kBwdTensors + 2 + kNumNpuAttrs;
// Positions in kNpuAttrs.
constexpr size_t kNpuSeqQlen = 9, kNpuSeqKvlen = 10, kNpuSeed = 15, kNpuOffset = 16;
static_assert(same_name(kNpuAttrs[kNpuSeqQlen].name, "actual_seq_qlen") &&
              same_name(kNpuAttrs[kNpuSeqKvlen].name, "actual_seq_kvlen") &&
              same_name(kNpuAttrs[kNpuSeed].name, "seed") && same_name(kNpuAttrs[kNpuOffset].name, "offset"));

// numels: the dropout stream's length, from query's and key's shapes (a layout of the wrong rank is
// refused before) or TND's cumulative lengths.  On the Meta kernel's SymInts it guards on the shapes
// (numels is an int output).
struct NpuNumels {
    int64_t head_num;
    std::string layout;
    IValue seq_qlen, seq_kvlen;

    template <class Int> int64_t of(c10::ArrayRef<Int> q, c10::ArrayRef<Int> k) const {
        auto value = [](const Int &x) -> int64_t {
            if constexpr (std::is_same_v<Int, c10::SymInt>)
                return x.guard_int(__FILE__, __LINE__);
            else
                return x;
        };
        if (layout == "TND") {
            std::optional<std::vector<int64_t>> ql = int_list(seq_qlen), kl = int_list(seq_kvlen);
            int64_t sum = 0, q0 = 0, k0 = 0;
            for (size_t b = 0; ql && kl && b < ql->size() && b < kl->size(); b++)
                sum += ((*ql)[b] - q0) * ((*kl)[b] - k0), q0 = (*ql)[b], k0 = (*kl)[b];
            return head_num * sum;
        }
        const bool sbh = layout == "SBH", bnsd = layout == "BNSD";
        const int64_t b = value(sbh ? q[1] : q[0]), s1 = value(sbh ? q[0] : bnsd ? q[2] : q[1]);
        return b * head_num * s1 * value(sbh ? k[0] : bnsd ? k[2] : k[1]);
    }
};

// What npu_fusion_attention returns after the forward's three outputs, read off its arguments (the
// stack from query on) before the forward drops them.
struct NpuTail {
    at::Tensor q, k;
    int64_t seed, offset;
    NpuNumels numels;
};

NpuTail npu_tail(const IValue *args) {
    const IValue *attrs = args + kFwdTensors + 2;
    return {args[0].toTensor(), args[1].toTensor(), attrs[kNpuSeed].toInt(), attrs[kNpuOffset].toInt(),
            {args[3].toInt(), npu_layout(args[4]), attrs[kNpuSeqQlen], attrs[kNpuSeqKvlen]}};
}

void push_npu_outputs(torch::jit::Stack *stack, FaOutputs &&o, const NpuTail &t, int64_t numels) {
    at::Tensor softmax_out = at::empty({0}, o[0].options());
    push_outputs(stack, std::move(o));
    torch::jit::push(*stack, std::move(softmax_out), t.seed, t.offset, numels);
}

void npu_forward_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kNpuFwdArgs);
    NpuTail t = npu_tail(args);
    FaOutputs o = forward_run(stack, kNpuFwdArgs, [&t](attnops_fa_params &p, Views &views, const IValue *a) {
                                  fill_attrs(p, views, a + kFwdTensors, kNpuAttrs, t.numels.layout);
                              });
    push_npu_outputs(stack, std::move(o), t, t.numels.of(t.q.sizes(), t.k.sizes()));
}

void npu_forward_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kNpuFwdArgs);
    NpuTail t = npu_tail(args);
    FaOutputs o = forward_meta_run(stack, kNpuFwdArgs, t.numels.head_num, t.numels.layout);
    push_npu_outputs(stack, std::move(o), t, t.numels.of(t.q.sym_sizes(), t.k.sym_sizes()));
}

// ---- the backward --------------------------------------------------------------------------
// dq, dk, dv: contiguous, their inputs' shapes and dtypes; dq_rope / dk_rope likewise for the rope
// inputs given (q_rope / k_rope, nullptr for an op without them), else empty; dsink likewise for the
// sink.  On `device`: the CPU kernel's, or meta for the Meta kernel (whatever device a mixed call's
// inputs have).
std::array<at::Tensor, 6> grad_outputs(const IValue *args, at::Device device, const IValue *q_rope,
                                       const IValue *k_rope, const IValue *sink) {
    std::array<at::Tensor, 6> g;
    for (int i = 0; i < 3; i++)
        g[i] = at::empty_symint(args[i].toTensor().sym_sizes(), args[i].toTensor().options().device(device));
    const IValue *ropes[2] = {q_rope, k_rope};
    for (int i = 0; i < 2; i++) {
        const IValue *rope = ropes[i];
        g[3 + i] = rope && rope->isTensor()
                       ? at::empty_symint(rope->toTensor().sym_sizes(), rope->toTensor().options().device(device))
                       : at::empty({0}, args[0].toTensor().options().device(device));
    }
    const at::TensorOptions f32 = args[0].toTensor().options().dtype(at::kFloat).device(device);
    g[5] = sink && sink->isTensor() ? at::empty_symint(sink->toTensor().sym_sizes(), f32) : at::empty({0}, f32);
    return g;
}

// The backward of `nargs` arguments on top of the stack (the seven tensors first), pushing `outputs`
// of dq, dk, dv, dq_rope, dk_rope, dsink; fill sets the params from the arguments.
template <class Fill>
void backward_run(torch::jit::Stack *stack, size_t nargs, size_t outputs, const IValue *q_rope, const IValue *k_rope,
                  const IValue *sink, Fill fill) {
    const IValue *args = &*(stack->end() - nargs);
    std::array<at::Tensor, 6> g = grad_outputs(args, at::kCPU, q_rope, k_rope, sink);

    attnops_fa_bwd_args a;
    attnops_fa_bwd_args_init(&a);
    Views views;
    a.p.query = views.of(args[0].toTensor(), "query");
    a.p.key = views.of(args[1].toTensor(), "key");
    a.p.value = views.of(args[2].toTensor(), "value");
    a.dy = views.of(args[3].toTensor(), "dy");
    a.attention_in = views.of(args[4].toTensor(), "attention_in");
    a.softmax_max = views.of(args[5].toTensor(), "softmax_max");
    a.softmax_sum = views.of(args[6].toTensor(), "softmax_sum");
    fill(a.p, views, args);
    a.dq = views.of(g[0], "dq");
    a.dk = views.of(g[1], "dk");
    a.dv = views.of(g[2], "dv");
    a.dq_rope = a.p.query_rope ? views.of(g[3], "dq_rope") : nullptr;
    a.dk_rope = a.p.key_rope ? views.of(g[4], "dk_rope") : nullptr;
    a.dsink = a.p.sink ? views.of(g[5], "dsink") : nullptr;
    run_two_phase(attnops_flash_attention_score_grad_workspace_size, attnops_flash_attention_score_grad, a);

    torch::jit::drop(*stack, nargs);
    for (size_t i = 0; i < outputs; i++)
        torch::jit::push(*stack, std::move(g[i]));
}

void backward_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *attrs = &*(stack->end() - kBwdArgs) + kBwdTensors + 2;
    backward_run(stack, kBwdArgs, 6, attrs + kQueryRope, attrs + kKeyRope, attrs + kSink,
                 [](attnops_fa_params &p, Views &views, const IValue *a) { fill_params(p, views, a + kBwdTensors); });
}

void backward_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kBwdArgs);
    const IValue *attrs = args + kBwdTensors + 2;
    std::array<at::Tensor, 6> g = grad_outputs(args, at::kMeta, attrs + kQueryRope, attrs + kKeyRope, attrs + kSink);
    torch::jit::drop(*stack, kBwdArgs);
    for (at::Tensor &t : g)
        torch::jit::push(*stack, std::move(t));
}

void flash_attn_backward_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    backward_run(stack, kFlashAttnBwdArgs, 3, nullptr, nullptr, nullptr,
                 [](attnops_fa_params &p, Views &, const IValue *a) {
        fill_flash_attn_params(p, a[0].toTensor(), a + kBwdTensors);
    });
}

// The Meta kernel of a grad op without rope inputs (dq, dk, dv).
void three_grads_meta(torch::jit::Stack *stack, size_t nargs) {
    std::array<at::Tensor, 6> g = grad_outputs(&*(stack->end() - nargs), at::kMeta, nullptr, nullptr, nullptr);
    torch::jit::drop(*stack, nargs);
    for (size_t i = 0; i < 3; i++)
        torch::jit::push(*stack, std::move(g[i]));
}

void flash_attn_backward_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    three_grads_meta(stack, kFlashAttnBwdArgs);
}

void npu_backward_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    backward_run(stack, kNpuBwdArgs, 3, nullptr, nullptr, nullptr,
                 [](attnops_fa_params &p, Views &views, const IValue *a) {
                     fill_attrs(p, views, a + kBwdTensors, kNpuAttrs, npu_layout(a[kBwdTensors + 1]));
                 });
}

void npu_backward_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) { three_grads_meta(stack, kNpuBwdArgs); }

// ---- autograd: the backward is the grad op on the saved inputs and outputs -------------------
template <const char *Name> const c10::OperatorHandle &op_named() {
    static const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(Name, "");
    return op;
}
constexpr char kFlashAttentionGradName[] = "attnops::flash_attention_score_grad";
constexpr char kFlashAttnBackwardName[] = "attnops::flash_attn_backward";
constexpr char kNpuBackwardName[] = "attnops::npu_fusion_attention_backward";

// What a forward's backward node needs of its op: the grad op, the forward's argument count, where
// query_rope / key_rope / sink are among the arguments (at fwd_args or past it: none), and how many
// outputs the forward returns (attention_out, softmax_max, softmax_sum first).
struct GradOf {
    const c10::OperatorHandle &(*grad)();
    size_t fwd_args;
    size_t q_rope_at, k_rope_at, sink_at;
    size_t outputs;
};

constexpr GradOf kFlashAttentionGrad = {&op_named<kFlashAttentionGradName>, kFwdArgs, kFwdTensors + 2 + kQueryRope,
                                        kFwdTensors + 2 + kKeyRope, kFwdTensors + 2 + kSink, 3};
constexpr GradOf kFlashAttnGrad = {&op_named<kFlashAttnBackwardName>, kFlashAttnFwdArgs, kFlashAttnFwdArgs,
                                   kFlashAttnFwdArgs, kFlashAttnFwdArgs, 3};
constexpr GradOf kNpuGrad = {&op_named<kNpuBackwardName>, kNpuFwdArgs, kNpuFwdArgs, kNpuFwdArgs, kNpuFwdArgs, 7};

// The backward node of flash_attention_score and flash_attn_forward, written as torch's code
// generator writes its own ops' nodes (torch/csrc/autograd/generated/Functions.h), not with
// torch::autograd::Function: that one's context (a string-keyed map, sets of tensors, the node's
// name demangled on every backward) cost more per call than the library's whole backward on a short
// sequence (docs/PERFORMANCE.md "The torch binding's per-call cost").  The differentiable inputs are
// query, key, value, query_rope, key_rope and sink (the node's six edges); the masks, the position bias
// and the lengths get no gradient (CANN's dpse is reserved).  softmax_max and softmax_sum are
// outputs without a gradient.  The grad op takes the forward's arguments with dy, attention_in,
// softmax_max and softmax_sum after the three tensors.
struct FlashAttentionBackward final : torch::autograd::Node {
    const c10::OperatorHandle *grad = nullptr;
    bool q_rope = false, k_rope = false, sink = false;
    // The forward's arguments with each tensor replaced by None (a list: compiled autograd keys its
    // cache on the list's values as constants); the tensors are saved_inputs, at positions input_at.
    IValue attrs;
    std::vector<int64_t> input_at;
    std::vector<torch::autograd::SavedVariable> saved_inputs;
    std::vector<torch::autograd::SavedVariable> saved_outputs; // attention_out, softmax_max, softmax_sum

    std::string name() const override { return "FlashAttentionScoreBackward"; }

    void release_variables() override {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto &v : saved_inputs)
            v.reset_data();
        for (auto &v : saved_outputs)
            v.reset_data();
    }

    variable_list apply(variable_list &&grads) override {
        std::lock_guard<std::mutex> lock(mutex_);
        c10::List<IValue> list = attrs.toList();
        torch::jit::Stack stack(list.begin(), list.end());
        for (size_t i = 0; i < input_at.size(); i++) // unpack checks the version: no in-place change since
            stack[input_at[i]] = saved_inputs[i].unpack();
        auto self = c10::intrusive_ptr<torch::autograd::Node>::unsafe_reclaim_from_nonowning(this);
        at::Tensor out = saved_outputs[0].unpack(self);
        at::Tensor dy = grads[0].defined() ? grads[0] : at::zeros_like(out);
        std::array<IValue, 4> inserted = {dy, out, saved_outputs[1].unpack(self), saved_outputs[2].unpack(self)};
        stack.insert(stack.begin() + kFwdTensors, inserted.begin(), inserted.end());
        grad->callBoxed(&stack);
        return {stack[0].toTensor(),
                stack[1].toTensor(),
                stack[2].toTensor(),
                q_rope ? stack[3].toTensor() : at::Tensor(),
                k_rope ? stack[4].toTensor() : at::Tensor(),
                sink ? stack[5].toTensor() : at::Tensor()};
    }

    void compiled_args(torch::dynamo::autograd::CompiledNodeArgs &args) const override {
        args.collect(attrs);
        args.collect(input_at);
        args.collect(q_rope);
        args.collect(k_rope);
        args.collect(sink);
        args.collect(saved_inputs, false);
        args.collect(saved_outputs, true);
    }

    variable_list apply_with_saved(const variable_list &grads,
                                   torch::dynamo::autograd::SwapSavedVariables &saved) override {
        saved.before(saved_inputs);
        saved.before(saved_outputs);
        variable_list result = apply(variable_list(grads));
        saved.after(saved_inputs);
        saved.after(saved_outputs);
        return result;
    }
};

void forward_autograd_of(const GradOf &spec, const c10::OperatorHandle &op, c10::DispatchKeySet keys,
                         torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - spec.fwd_args);
    IValue none;
    const IValue &q_rope = spec.q_rope_at < spec.fwd_args ? args[spec.q_rope_at] : none;
    const IValue &k_rope = spec.k_rope_at < spec.fwd_args ? args[spec.k_rope_at] : none;
    const IValue &sink = spec.sink_at < spec.fwd_args ? args[spec.sink_at] : none;
    bool needs_grad = at::GradMode::is_enabled() && (requires_grad(args[0]) || requires_grad(args[1]) ||
                                                     requires_grad(args[2]) || requires_grad(q_rope) ||
                                                     requires_grad(k_rope) || requires_grad(sink));
    if (!needs_grad) {
        at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
        return;
    }
    auto tensor = [](const IValue &v) { return v.isTensor() ? v.toTensor() : at::Tensor(); };
    auto node = c10::make_intrusive<FlashAttentionBackward>();
    node->grad = &spec.grad();
    node->q_rope = q_rope.isTensor();
    node->k_rope = k_rope.isTensor();
    node->sink = sink.isTensor();
    node->set_next_edges(torch::autograd::collect_next_edges(tensor(args[0]), tensor(args[1]), tensor(args[2]),
                                                             tensor(q_rope), tensor(k_rope), tensor(sink)));
    c10::impl::GenericList attrs(c10::AnyType::get());
    attrs.reserve(spec.fwd_args);
    for (size_t i = 0; i < spec.fwd_args; i++) {
        if (args[i].isTensor()) {
            node->input_at.push_back(static_cast<int64_t>(i));
            node->saved_inputs.emplace_back(args[i].toTensor(), false);
            attrs.push_back(IValue());
        } else {
            attrs.push_back(args[i]);
        }
    }
    node->attrs = std::move(attrs);
    {
        at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
    }
    const size_t first = stack->size() - spec.outputs;
    at::Tensor &out = stack->at(first).toTensor();
    torch::autograd::set_history(out, node);
    for (size_t i = 0; i < 3; i++)
        node->saved_outputs.emplace_back(stack->at(first + i).toTensor(), i == 0);
}

void forward_autograd(const c10::OperatorHandle &op, c10::DispatchKeySet keys, torch::jit::Stack *stack) {
    forward_autograd_of(kFlashAttentionGrad, op, keys, stack);
}

void flash_attn_forward_autograd(const c10::OperatorHandle &op, c10::DispatchKeySet keys, torch::jit::Stack *stack) {
    forward_autograd_of(kFlashAttnGrad, op, keys, stack);
}

void npu_forward_autograd(const c10::OperatorHandle &op, c10::DispatchKeySet keys, torch::jit::Stack *stack) {
    forward_autograd_of(kNpuGrad, op, keys, stack);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attnops, m) {
    m.def(schema("flash_attention_score", kFwdTensorArgs, kFaAttrs, "(Tensor, Tensor, Tensor)").c_str());
    m.def(schema("flash_attention_score_grad", kBwdTensorArgs, kFaAttrs,
                 "(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")
              .c_str());
    m.def(schema("npu_fusion_attention", kFwdTensorArgs, kNpuAttrs, "(Tensor, Tensor, Tensor, Tensor, int, int, int)")
              .c_str());
    m.def(schema("npu_fusion_attention_backward", kBwdTensorArgs, kNpuAttrs, "(Tensor, Tensor, Tensor)").c_str());
    m.def(("flash_attn_forward(Tensor q, Tensor k, Tensor v, " + std::string(kFlashAttnAttrs) +
           ") -> (Tensor, Tensor, Tensor)")
              .c_str());
    m.def(("flash_attn_backward(Tensor q, Tensor k, Tensor v, Tensor dy, Tensor attention_in, Tensor softmax_max, "
           "Tensor softmax_sum, " +
           std::string(kFlashAttnAttrs) + ") -> (Tensor, Tensor, Tensor)")
              .c_str());
}

TORCH_LIBRARY_IMPL(attnops, CPU, m) {
    m.impl("flash_attention_score", torch::CppFunction::makeFromBoxedFunction<&forward_cpu>());
    m.impl("flash_attention_score_grad", torch::CppFunction::makeFromBoxedFunction<&backward_cpu>());
    m.impl("flash_attn_forward", torch::CppFunction::makeFromBoxedFunction<&flash_attn_forward_cpu>());
    m.impl("flash_attn_backward", torch::CppFunction::makeFromBoxedFunction<&flash_attn_backward_cpu>());
    m.impl("npu_fusion_attention", torch::CppFunction::makeFromBoxedFunction<&npu_forward_cpu>());
    m.impl("npu_fusion_attention_backward", torch::CppFunction::makeFromBoxedFunction<&npu_backward_cpu>());
}

TORCH_LIBRARY_IMPL(attnops, Meta, m) {
    m.impl("flash_attention_score", torch::CppFunction::makeFromBoxedFunction<&forward_meta>());
    m.impl("flash_attention_score_grad", torch::CppFunction::makeFromBoxedFunction<&backward_meta>());
    m.impl("flash_attn_forward", torch::CppFunction::makeFromBoxedFunction<&flash_attn_forward_meta>());
    m.impl("flash_attn_backward", torch::CppFunction::makeFromBoxedFunction<&flash_attn_backward_meta>());
    m.impl("npu_fusion_attention", torch::CppFunction::makeFromBoxedFunction<&npu_forward_meta>());
    m.impl("npu_fusion_attention_backward", torch::CppFunction::makeFromBoxedFunction<&npu_backward_meta>());
}

TORCH_LIBRARY_IMPL(attnops, Autograd, m) {
    m.impl("flash_attention_score", torch::CppFunction::makeFromBoxedFunction<&forward_autograd>());
    m.impl("flash_attention_score_grad", no_gradient());
    m.impl("flash_attn_forward", torch::CppFunction::makeFromBoxedFunction<&flash_attn_forward_autograd>());
    m.impl("flash_attn_backward", no_gradient());
    m.impl("npu_fusion_attention", torch::CppFunction::makeFromBoxedFunction<&npu_forward_autograd>());
    m.impl("npu_fusion_attention_backward", no_gradient());
}

} // namespace attnops_torch
