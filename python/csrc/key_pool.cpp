// torch.ops.attnops.key_pool: CPU, Meta and ADInplaceOrView kernels over the library's two-phase
// call (include/attnops.h, docs/KEYPOOL.md).  Not differentiable.
//
//   key_pool(hidden_states, wk, gate_weight, ape, state_cache!, cache_block_table, start_pos,
//            norm_weight, norm_bias, cos, sin, cu_seqlens, seqused, cmp_ratio, norm_eps,
//            rotary_mode, capacity, impl) -> pooled_key
//
// hidden_states bf16/f16 BSH [B,S,H] or TH [T,H] (with cu_seqlens i32 [B+1]); wk / gate_weight [D,H];
// ape f32 [R,D]; state_cache f32 [blocks, block_size, 2D], written in place (the trailing incomplete
// groups); cache_block_table i32 [B,L]; start_pos i32 [B].  pooled_key by capacity: "fixed" (CANN today,
// the default) [B, ceil(L*block_size/R), D] with zeros past the valid rows; "current" (the seed's) BSH
// [B, ceil(S/R), D], TH [min(T, T/R + B), D] (zero past the valid rows here too: a new tensor's rows the
// library leaves alone would be uninitialised).
#include "binding.h"

#include <torch/autograd.h>
#include <torch/library.h>

#include <string>

namespace attnops_torch {
namespace {

using c10::IValue;

attnops_key_pool_capacity capacity_of(const std::string &name) {
    if (name == "fixed")
        return ATTNOPS_KEY_POOL_CAPACITY_FIXED;
    if (name == "current")
        return ATTNOPS_KEY_POOL_CAPACITY_CURRENT;
    raise_value_error("attnops: key_pool: capacity is \"" + name + "\"; it must be \"fixed\" or \"current\"");
}

#define KP_TENSOR(field)                                                                                         \
    [](attnops_key_pool_args &a, Views &views, const IValue &v) {                                               \
        a.field = v.isNone() ? nullptr : views.of(v.toTensor(), #field);                                         \
    }

// Every argument in the schema's order (CANN's names and defaults; docs/KEYPOOL.md).
constexpr Arg<attnops_key_pool_args> kKpArgs[] = {
    {"Tensor", "hidden_states", nullptr, KP_TENSOR(hidden_states)},
    {"Tensor", "wk", nullptr, KP_TENSOR(wk)},
    {"Tensor", "gate_weight", nullptr, KP_TENSOR(gate_weight)},
    {"Tensor", "ape", nullptr, KP_TENSOR(ape)},
    {"Tensor(a!)", "state_cache", nullptr, KP_TENSOR(state_cache)},
    {"Tensor", "cache_block_table", nullptr, KP_TENSOR(cache_block_table)},
    {"Tensor", "start_pos", nullptr, KP_TENSOR(start_pos)},
    {"Tensor?", "norm_weight", "None", KP_TENSOR(norm_weight)},
    {"Tensor?", "norm_bias", "None", KP_TENSOR(norm_bias)},
    {"Tensor?", "cos", "None", KP_TENSOR(cos)},
    {"Tensor?", "sin", "None", KP_TENSOR(sin)},
    {"Tensor?", "cu_seqlens", "None", KP_TENSOR(cu_seqlens)},
    {"Tensor?", "seqused", "None", KP_TENSOR(seqused)},
    {"int", "cmp_ratio", "4", [](attnops_key_pool_args &a, Views &, const IValue &v) { a.cmp_ratio = v.toInt(); }},
    {"float", "norm_eps", "1e-06",
     [](attnops_key_pool_args &a, Views &, const IValue &v) { a.norm_eps = v.toDouble(); }},
    {"int", "rotary_mode", "0",
     [](attnops_key_pool_args &a, Views &, const IValue &v) { a.rotary_mode = v.toInt(); }},
    {"str", "capacity", "\"fixed\"",
     [](attnops_key_pool_args &a, Views &, const IValue &v) { a.capacity = capacity_of(v.toStringRef()); }},
    {"str", "impl", "\"auto\"",
     [](attnops_key_pool_args &a, Views &, const IValue &v) { a.impl = impl_of(v.toStringRef()); }},
};
#undef KP_TENSOR

constexpr size_t kArgs = sizeof kKpArgs / sizeof kKpArgs[0];
// Positions of what the Meta kernel's shape and the in-place kernel read.
constexpr size_t kHidden = 0, kWk = 1, kStateCache = 4, kTable = 5, kCuSeqlens = 11, kCmpRatio = 13,
                 kCapacity = 16;
static_assert(same_name(kKpArgs[kHidden].name, "hidden_states") && same_name(kKpArgs[kWk].name, "wk") &&
              same_name(kKpArgs[kStateCache].name, "state_cache") &&
              same_name(kKpArgs[kTable].name, "cache_block_table") &&
              same_name(kKpArgs[kCuSeqlens].name, "cu_seqlens") && same_name(kKpArgs[kCmpRatio].name, "cmp_ratio") &&
              same_name(kKpArgs[kCapacity].name, "capacity"));

std::string schema() { return "key_pool(" + schema_args(kKpArgs) + ") -> Tensor"; }

void key_pool_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kArgs);
    attnops_key_pool_args a;
    attnops_key_pool_args_init(&a);
    Views views;
    for (size_t i = 0; i < kArgs; i++)
        kKpArgs[i].fill(a, views, args[i]);
    a.num_threads = num_threads();
    // The library's own shape rule (it validates the inputs first, with its sentences).
    int32_t rank = 0;
    int64_t shape[3] = {0, 0, 0};
    attnops_status status = attnops_key_pool_output_shape(&a, &rank, shape);
    if (status != ATTNOPS_SUCCESS)
        raise_status(status);
    at::Tensor out = new_output(c10::IntArrayRef(shape, rank), args[kHidden].toTensor().scalar_type());
    if (a.capacity == ATTNOPS_KEY_POOL_CAPACITY_CURRENT)
        out.zero_(); // the library leaves the rows past the valid ones as they were: a new tensor's are garbage
    a.pooled_key = views.of(out, "pooled_key");
    run_two_phase(attnops_key_pool_workspace_size, attnops_key_pool, a);
    torch::jit::drop(*stack, kArgs);
    torch::jit::push(*stack, std::move(out));
}

// The capacity's shape from the shapes alone (attnops_key_pool_output_shape reads values too).
void key_pool_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kArgs);
    const at::Tensor &hidden = args[kHidden].toTensor();
    c10::SymInt d = args[kWk].toTensor().sym_size(0);
    int64_t ratio = args[kCmpRatio].toInt();
    if (ratio <= 0)
        raise_value_error("attnops: cmp_ratio is " + std::to_string(ratio) + "; it must be positive");
    std::vector<c10::SymInt> shape;
    if (capacity_of(args[kCapacity].toStringRef()) == ATTNOPS_KEY_POOL_CAPACITY_FIXED) {
        const at::Tensor &table = args[kTable].toTensor();
        c10::SymInt positions = table.sym_size(1) * args[kStateCache].toTensor().sym_size(1);
        shape = {table.sym_size(0), (positions + ratio - 1) / ratio, d};
    } else if (hidden.dim() == 3) {
        shape = {hidden.sym_size(0), (hidden.sym_size(1) + ratio - 1) / ratio, d};
    } else {
        c10::SymInt t = hidden.sym_size(0);
        c10::SymInt b = args[kCuSeqlens].isTensor() ? args[kCuSeqlens].toTensor().sym_size(0) - 1 : c10::SymInt(1);
        c10::SymInt rows = t / ratio + b;
        shape = {t < rows ? t : rows, d};
    }
    at::Tensor out = at::empty_symint(shape, hidden.options().device(at::kMeta));
    torch::jit::drop(*stack, kArgs);
    torch::jit::push(*stack, std::move(out));
}

// An in-place write bumps the tensor's version, so autograd refuses a graph that saved it before.
void key_pool_inplace(const c10::OperatorHandle &op, c10::DispatchKeySet keys, torch::jit::Stack *stack) {
    at::Tensor cache = (stack->end() - kArgs + kStateCache)->toTensor();
    {
        at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(keys & c10::after_ADInplaceOrView_keyset, stack);
    }
    torch::autograd::impl::bump_version(cache);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attnops, m) { m.def(schema().c_str()); }

TORCH_LIBRARY_IMPL(attnops, CPU, m) {
    m.impl("key_pool", torch::CppFunction::makeFromBoxedFunction<&key_pool_cpu>());
}

TORCH_LIBRARY_IMPL(attnops, Meta, m) {
    m.impl("key_pool", torch::CppFunction::makeFromBoxedFunction<&key_pool_meta>());
}

TORCH_LIBRARY_IMPL(attnops, ADInplaceOrView, m) {
    m.impl("key_pool", torch::CppFunction::makeFromBoxedFunction<&key_pool_inplace>());
}

} // namespace attnops_torch
