// torch.ops.attnops.attn_res and attn_res_grad (Block Attention Residuals): CPU, Meta and Autograd
// kernels over the library's two-phase calls (include/attnops.h, docs/ATTNRES.md).
//
//   attn_res(blocks[], proj_weight, partial_block, rmsnorm_gamma, scale, rmsnorm_eps,
//            enable_rmsnorm, impl) -> (h, rms, alpha)
//   attn_res_grad(grad_h, blocks[], proj_weight, alpha, partial_block, rmsnorm_gamma, rms, scale,
//                 enable_rmsnorm, impl) -> (grad_blocks[], grad_partial_block, grad_proj_weight,
//                                           grad_rmsnorm_gamma)
//
// N blocks [B,T,D] (+ partial_block [B,T,D]), proj_weight and rmsnorm_gamma [D]; h [B,T,D], rms f32
// [B,T,L,1] (empty without RMSNorm), alpha f32 [B,T,L], L = N (+1).  The gradients have their
// inputs' shapes; grad_partial_block / grad_rmsnorm_gamma are empty without a partial block / RMSNorm.
// The schemas, their defaults and the args structs come from one list per op (kFwdArgs, kBwdArgs; binding.h Arg).
#include "binding.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <vector>

namespace attnops_torch {
namespace {

using c10::IValue;
using torch::autograd::variable_list;

std::vector<at::Tensor> blocks_of(const IValue &v) {
    std::vector<at::Tensor> blocks = v.toTensorVector();
    if (blocks.empty())
        raise_value_error("attnops: blocks is empty; Block Attention Residuals needs at least one block");
    return blocks;
}

// The views of a tensor list, as the array of view pointers the library takes.
std::vector<const attnops_tensor *> views_of(Views &views, const std::vector<at::Tensor> &tensors, const char *name) {
    std::vector<const attnops_tensor *> list;
    for (const at::Tensor &t : tensors)
        list.push_back(views.of(t, name));
    return list;
}

std::optional<at::Tensor> optional_of(const IValue &v) {
    return v.isTensor() ? std::optional<at::Tensor>(v.toTensor()) : std::nullopt;
}

// A call's args struct and the array of block views it points to, alive until the call returns.
template <class Args> struct Call {
    Args a;
    std::vector<const attnops_tensor *> blocks;
};
using FwdCall = Call<attnops_attn_res_fwd_args>;
using BwdCall = Call<attnops_attn_res_bwd_args>;

#define AR_TENSOR(CallType, field)                                                                               \
    [](CallType &c, Views &views, const IValue &v) { c.a.field = views.of(optional_of(v), #field); }
#define AR_BLOCKS(CallType)                                                                                      \
    [](CallType &c, Views &views, const IValue &v) {                                                             \
        c.blocks = views_of(views, blocks_of(v), "blocks");                                                      \
        c.a.blocks = c.blocks.data();                                                                            \
        c.a.num_blocks = static_cast<int64_t>(c.blocks.size());                                                  \
    }
#define AR_SCALE(CallType) [](CallType &c, Views &, const IValue &v) { c.a.scale = v.toDouble(); }
#define AR_RMSNORM(CallType) [](CallType &c, Views &, const IValue &v) { c.a.enable_rmsnorm = v.toBool(); }
#define AR_IMPL(CallType) [](CallType &c, Views &, const IValue &v) { c.a.impl = impl_of(v.toStringRef()); }

// Every argument of the two schemas in their order (the PyPTO names and defaults; docs/ATTNRES.md).
constexpr Arg<FwdCall> kFwdArgs[] = {
    {"Tensor[]", "blocks", nullptr, AR_BLOCKS(FwdCall)},
    {"Tensor", "proj_weight", nullptr, AR_TENSOR(FwdCall, proj_weight)},
    {"Tensor?", "partial_block", "None", AR_TENSOR(FwdCall, partial_block)},
    {"Tensor?", "rmsnorm_gamma", "None", AR_TENSOR(FwdCall, rmsnorm_gamma)},
    {"float", "scale", "1.0", AR_SCALE(FwdCall)},
    {"float", "rmsnorm_eps", "1e-06", [](FwdCall &c, Views &, const IValue &v) { c.a.rmsnorm_eps = v.toDouble(); }},
    {"bool", "enable_rmsnorm", "True", AR_RMSNORM(FwdCall)},
    {"str", "impl", "\"auto\"", AR_IMPL(FwdCall)},
};
constexpr Arg<BwdCall> kBwdArgs[] = {
    {"Tensor", "grad_h", nullptr, AR_TENSOR(BwdCall, grad_h)},
    {"Tensor[]", "blocks", nullptr, AR_BLOCKS(BwdCall)},
    {"Tensor", "proj_weight", nullptr, AR_TENSOR(BwdCall, proj_weight)},
    {"Tensor", "alpha", nullptr, AR_TENSOR(BwdCall, alpha)},
    {"Tensor?", "partial_block", "None", AR_TENSOR(BwdCall, partial_block)},
    {"Tensor?", "rmsnorm_gamma", "None", AR_TENSOR(BwdCall, rmsnorm_gamma)},
    // Read after the list, and only with RMSNorm: enable_rmsnorm comes after it.
    {"Tensor?", "rms", "None", [](BwdCall &, Views &, const IValue &) {}},
    {"float", "scale", "1.0", AR_SCALE(BwdCall)},
    {"bool", "enable_rmsnorm", "True", AR_RMSNORM(BwdCall)},
    {"str", "impl", "\"auto\"", AR_IMPL(BwdCall)},
};
#undef AR_TENSOR
#undef AR_BLOCKS
#undef AR_SCALE
#undef AR_RMSNORM
#undef AR_IMPL

constexpr size_t kFwdCount = sizeof kFwdArgs / sizeof kFwdArgs[0], kBwdCount = sizeof kBwdArgs / sizeof kBwdArgs[0];
// Positions of what the kernels read besides the args struct (the outputs' shapes, autograd's saved values).
constexpr size_t kFwdBlocks = 0, kFwdProj = 1, kFwdPartial = 2, kFwdGamma = 3, kFwdScale = 4, kFwdRmsnorm = 6,
                 kFwdImpl = 7;
static_assert(same_name(kFwdArgs[kFwdBlocks].name, "blocks") && same_name(kFwdArgs[kFwdProj].name, "proj_weight") &&
              same_name(kFwdArgs[kFwdPartial].name, "partial_block") &&
              same_name(kFwdArgs[kFwdGamma].name, "rmsnorm_gamma") && same_name(kFwdArgs[kFwdScale].name, "scale") &&
              same_name(kFwdArgs[kFwdRmsnorm].name, "enable_rmsnorm") && same_name(kFwdArgs[kFwdImpl].name, "impl"));
constexpr size_t kBwdGradH = 0, kBwdBlocks = 1, kBwdProj = 2, kBwdAlpha = 3, kBwdPartial = 4, kBwdGamma = 5,
                 kBwdRms = 6, kBwdScale = 7, kBwdRmsnorm = 8, kBwdImpl = 9;
static_assert(same_name(kBwdArgs[kBwdGradH].name, "grad_h") && same_name(kBwdArgs[kBwdBlocks].name, "blocks") &&
              same_name(kBwdArgs[kBwdProj].name, "proj_weight") && same_name(kBwdArgs[kBwdAlpha].name, "alpha") &&
              same_name(kBwdArgs[kBwdPartial].name, "partial_block") &&
              same_name(kBwdArgs[kBwdGamma].name, "rmsnorm_gamma") && same_name(kBwdArgs[kBwdRms].name, "rms") &&
              same_name(kBwdArgs[kBwdScale].name, "scale") && same_name(kBwdArgs[kBwdRmsnorm].name, "enable_rmsnorm") &&
              same_name(kBwdArgs[kBwdImpl].name, "impl"));

std::string fwd_schema() { return "attn_res(" + schema_args(kFwdArgs) + ") -> (Tensor, Tensor, Tensor)"; }
std::string bwd_schema() {
    return "attn_res_grad(" + schema_args(kBwdArgs) + ") -> (Tensor[], Tensor, Tensor, Tensor)";
}

// The args struct of a call from the stack's arguments, every field its list sets.
template <class Args, size_t N>
void fill(Call<Args> &c, Views &views, const IValue *args, const Arg<Call<Args>> (&list)[N]) {
    for (size_t i = 0; i < N; i++)
        list[i].fill(c, views, args[i]);
    c.a.num_threads = num_threads();
}

// ---- the forward ---------------------------------------------------------------------------
struct FwdOutputs {
    at::Tensor h, rms, alpha;
};

FwdOutputs fwd_outputs(const std::vector<at::Tensor> &blocks, bool partial, bool rmsnorm, at::Device device) {
    const at::Tensor &b0 = blocks[0];
    if (b0.dim() != 3)
        raise_value_error("attnops: blocks[0] has rank " + std::to_string(b0.dim()) + "; the blocks are [B, T, D]");
    c10::SymInt levels = static_cast<int64_t>(blocks.size() + partial);
    at::TensorOptions f32 = b0.options().dtype(at::kFloat).device(device);
    std::vector<c10::SymInt> rms_shape = {b0.sym_size(0), b0.sym_size(1), levels, 1};
    return {at::empty_symint(b0.sym_sizes(), b0.options().device(device)),
            rmsnorm ? at::empty_symint(rms_shape, f32) : at::empty({0}, f32),
            at::empty_symint({b0.sym_size(0), b0.sym_size(1), levels}, f32)};
}

FwdOutputs fwd_outputs(const IValue *args, at::Device device) {
    return fwd_outputs(blocks_of(args[kFwdBlocks]), args[kFwdPartial].isTensor(), args[kFwdRmsnorm].toBool(), device);
}

void push_outputs(torch::jit::Stack *stack, FwdOutputs o) {
    torch::jit::drop(*stack, kFwdCount);
    torch::jit::push(*stack, std::move(o.h), std::move(o.rms), std::move(o.alpha));
}

void attn_res_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kFwdCount);
    FwdOutputs o = fwd_outputs(args, at::kCPU);
    FwdCall c;
    attnops_attn_res_fwd_args_init(&c.a);
    Views views;
    fill(c, views, args, kFwdArgs);
    c.a.h = views.of(o.h, "h");
    c.a.rms = c.a.enable_rmsnorm ? views.of(o.rms, "rms") : nullptr;
    c.a.alpha = views.of(o.alpha, "alpha");
    run_two_phase(attnops_attn_res_workspace_size, attnops_attn_res, c.a);
    push_outputs(stack, std::move(o));
}

void attn_res_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    push_outputs(stack, fwd_outputs(&*(stack->end() - kFwdCount), at::kMeta));
}

// ---- the backward --------------------------------------------------------------------------
struct BwdOutputs {
    std::vector<at::Tensor> grad_blocks;
    at::Tensor grad_partial, grad_proj, grad_gamma;
};

BwdOutputs bwd_outputs(const IValue *args, at::Device device) {
    std::vector<at::Tensor> blocks = blocks_of(args[kBwdBlocks]);
    auto like = [device](const at::Tensor &t) { return at::empty_symint(t.sym_sizes(), t.options().device(device)); };
    at::TensorOptions empty = blocks[0].options().device(device);
    BwdOutputs o;
    for (const at::Tensor &t : blocks)
        o.grad_blocks.push_back(like(t));
    const IValue &partial = args[kBwdPartial], &gamma = args[kBwdGamma];
    o.grad_partial = partial.isTensor() ? like(partial.toTensor()) : at::empty({0}, empty);
    o.grad_proj = like(args[kBwdProj].toTensor());
    bool rmsnorm = args[kBwdRmsnorm].toBool();
    if (rmsnorm && !gamma.isTensor())
        raise_value_error("attnops: enable_rmsnorm needs rmsnorm_gamma; got None");
    o.grad_gamma = rmsnorm ? like(gamma.toTensor()) : at::empty({0}, empty);
    return o;
}

void push_outputs(torch::jit::Stack *stack, BwdOutputs o) {
    torch::jit::drop(*stack, kBwdCount);
    torch::jit::push(*stack, std::move(o.grad_blocks), std::move(o.grad_partial), std::move(o.grad_proj),
                     std::move(o.grad_gamma));
}

void attn_res_grad_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kBwdCount);
    BwdOutputs o = bwd_outputs(args, at::kCPU);
    BwdCall c;
    attnops_attn_res_bwd_args_init(&c.a);
    Views views;
    fill(c, views, args, kBwdArgs);
    const bool rmsnorm = c.a.enable_rmsnorm;
    c.a.rms = rmsnorm ? views.of(optional_of(args[kBwdRms]), "rms") : nullptr;
    std::vector<const attnops_tensor *> grad_views = views_of(views, o.grad_blocks, "grad_blocks");
    c.a.grad_blocks = grad_views.data();
    c.a.grad_partial_block = c.a.partial_block ? views.of(o.grad_partial, "grad_partial_block") : nullptr;
    c.a.grad_proj_weight = views.of(o.grad_proj, "grad_proj_weight");
    c.a.grad_rmsnorm_gamma = rmsnorm ? views.of(o.grad_gamma, "grad_rmsnorm_gamma") : nullptr;
    run_two_phase(attnops_attn_res_grad_workspace_size, attnops_attn_res_grad, c.a);
    push_outputs(stack, std::move(o));
}

void attn_res_grad_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    push_outputs(stack, bwd_outputs(&*(stack->end() - kBwdCount), at::kMeta));
}

// ---- autograd: the backward is attn_res_grad on the saved inputs and outputs ----------------
const c10::OperatorHandle &grad_op() {
    static const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow("attnops::attn_res_grad", "");
    return op;
}

// attn_res's backward node (the pattern and the reason: FlashAttentionBackward in flash_attention.cpp).
// Differentiable in the blocks, proj_weight, partial_block and rmsnorm_gamma (its edges, in that
// order); rms and alpha are outputs without a gradient.
struct AttnResBackward final : torch::autograd::Node {
    std::vector<torch::autograd::SavedVariable> blocks;
    torch::autograd::SavedVariable proj, partial, gamma, rms, alpha;
    double scale = 1.0;
    bool rmsnorm = false;
    std::string impl;

    std::string name() const override { return "AttnResBackward"; }

    void release_variables() override {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto &b : blocks)
            b.reset_data();
        for (auto *v : {&proj, &partial, &gamma, &rms, &alpha})
            v->reset_data();
    }

    variable_list apply(variable_list &&grads) override {
        std::lock_guard<std::mutex> lock(mutex_);
        std::vector<at::Tensor> block_values;
        for (const auto &b : blocks)
            block_values.push_back(b.unpack());
        at::Tensor partial_value = partial.unpack(), gamma_value = gamma.unpack();
        at::Tensor grad_h = grads[0].defined() ? grads[0] : at::zeros_like(block_values[0]);
        auto opt = [](const at::Tensor &t) { return t.defined() ? IValue(t) : IValue(); };

        torch::jit::Stack stack(kBwdCount);
        stack[kBwdGradH] = grad_h;
        stack[kBwdBlocks] = block_values;
        stack[kBwdProj] = proj.unpack();
        stack[kBwdAlpha] = alpha.unpack();
        stack[kBwdPartial] = opt(partial_value);
        stack[kBwdGamma] = opt(gamma_value);
        stack[kBwdRms] = opt(rms.unpack());
        stack[kBwdScale] = scale;
        stack[kBwdRmsnorm] = rmsnorm;
        stack[kBwdImpl] = impl;
        grad_op().callBoxed(&stack);

        variable_list out = stack[0].toTensorVector();
        out.push_back(stack[2].toTensor());
        out.push_back(partial_value.defined() ? stack[1].toTensor() : at::Tensor());
        out.push_back(gamma_value.defined() && rmsnorm ? stack[3].toTensor() : at::Tensor());
        return out;
    }

    void compiled_args(torch::dynamo::autograd::CompiledNodeArgs &args) const override {
        args.collect(blocks, false);
        for (const auto *v : {&proj, &partial, &gamma, &rms, &alpha})
            args.collect(*v, false);
        args.collect(scale);
        args.collect(rmsnorm);
        args.collect(impl);
    }

    variable_list apply_with_saved(const variable_list &grads,
                                   torch::dynamo::autograd::SwapSavedVariables &saved) override {
        saved.before(blocks);
        for (auto *v : {&proj, &partial, &gamma, &rms, &alpha})
            saved.before(*v);
        variable_list result = apply(variable_list(grads));
        saved.after(blocks);
        for (auto *v : {&proj, &partial, &gamma, &rms, &alpha})
            saved.after(*v);
        return result;
    }
};

void attn_res_autograd(const c10::OperatorHandle &op, c10::DispatchKeySet keys, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kFwdCount);
    std::vector<at::Tensor> blocks = args[kFwdBlocks].toTensorVector();
    const IValue &proj_arg = args[kFwdProj], &partial_arg = args[kFwdPartial], &gamma_arg = args[kFwdGamma];
    bool needs_grad = false;
    for (const at::Tensor &t : blocks)
        needs_grad = needs_grad || t.requires_grad();
    needs_grad = at::GradMode::is_enabled() &&
                 (needs_grad || requires_grad(proj_arg) || requires_grad(partial_arg) || requires_grad(gamma_arg));
    if (!needs_grad) {
        at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
        return;
    }
    auto node = c10::make_intrusive<AttnResBackward>();
    at::Tensor proj = proj_arg.toTensor(), partial = optional_of(partial_arg).value_or(at::Tensor()),
               gamma = optional_of(gamma_arg).value_or(at::Tensor());
    node->set_next_edges(torch::autograd::collect_next_edges(blocks, proj, partial, gamma));
    for (const at::Tensor &b : blocks)
        node->blocks.emplace_back(b, false);
    node->proj = torch::autograd::SavedVariable(proj, false);
    node->partial = torch::autograd::SavedVariable(partial, false);
    node->gamma = torch::autograd::SavedVariable(gamma, false);
    node->scale = args[kFwdScale].toDouble();
    node->rmsnorm = args[kFwdRmsnorm].toBool();
    node->impl = args[kFwdImpl].toStringRef();
    {
        at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
    }
    torch::autograd::set_history(stack->at(stack->size() - 3).toTensor(), node);
    node->rms = torch::autograd::SavedVariable(stack->at(stack->size() - 2).toTensor(), false);
    node->alpha = torch::autograd::SavedVariable(stack->at(stack->size() - 1).toTensor(), false);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attnops, m) {
    m.def(fwd_schema().c_str());
    m.def(bwd_schema().c_str());
}

TORCH_LIBRARY_IMPL(attnops, CPU, m) {
    m.impl("attn_res", torch::CppFunction::makeFromBoxedFunction<&attn_res_cpu>());
    m.impl("attn_res_grad", torch::CppFunction::makeFromBoxedFunction<&attn_res_grad_cpu>());
}

TORCH_LIBRARY_IMPL(attnops, Meta, m) {
    m.impl("attn_res", torch::CppFunction::makeFromBoxedFunction<&attn_res_meta>());
    m.impl("attn_res_grad", torch::CppFunction::makeFromBoxedFunction<&attn_res_grad_meta>());
}

TORCH_LIBRARY_IMPL(attnops, Autograd, m) {
    m.impl("attn_res", torch::CppFunction::makeFromBoxedFunction<&attn_res_autograd>());
    m.impl("attn_res_grad", no_gradient());
}

} // namespace attnops_torch
