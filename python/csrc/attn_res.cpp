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
#include "binding.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <vector>

namespace attnops_torch {
namespace {

using c10::IValue;
using torch::autograd::variable_list;

constexpr const char *kFwdSchema =
    "attn_res(Tensor[] blocks, Tensor proj_weight, Tensor? partial_block=None, Tensor? rmsnorm_gamma=None, "
    "float scale=1.0, float rmsnorm_eps=1e-06, bool enable_rmsnorm=True, str impl=\"auto\") "
    "-> (Tensor, Tensor, Tensor)";
constexpr const char *kBwdSchema =
    "attn_res_grad(Tensor grad_h, Tensor[] blocks, Tensor proj_weight, Tensor alpha, Tensor? partial_block=None, "
    "Tensor? rmsnorm_gamma=None, Tensor? rms=None, float scale=1.0, bool enable_rmsnorm=True, "
    "str impl=\"auto\") -> (Tensor[], Tensor, Tensor, Tensor)";
constexpr size_t kFwdArgs = 8, kBwdArgs = 10;

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

void push_outputs(torch::jit::Stack *stack, size_t num_args, FwdOutputs o) {
    torch::jit::drop(*stack, num_args);
    torch::jit::push(*stack, std::move(o.h), std::move(o.rms), std::move(o.alpha));
}

void attn_res_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kFwdArgs);
    std::vector<at::Tensor> blocks = blocks_of(args[0]);
    bool rmsnorm = args[6].toBool();
    FwdOutputs o = fwd_outputs(blocks, args[2].isTensor(), rmsnorm, at::kCPU);

    attnops_attn_res_fwd_args a;
    attnops_attn_res_fwd_args_init(&a);
    Views views;
    std::vector<const attnops_tensor *> block_views = views_of(views, blocks, "blocks");
    a.blocks = block_views.data();
    a.num_blocks = static_cast<int64_t>(blocks.size());
    a.proj_weight = views.of(args[1].toTensor(), "proj_weight");
    a.partial_block = views.of(optional_of(args[2]), "partial_block");
    a.rmsnorm_gamma = views.of(optional_of(args[3]), "rmsnorm_gamma");
    a.scale = args[4].toDouble();
    a.rmsnorm_eps = args[5].toDouble();
    a.enable_rmsnorm = rmsnorm;
    a.impl = impl_of(args[7].toStringRef());
    a.num_threads = num_threads();
    a.h = views.of(o.h, "h");
    a.rms = rmsnorm ? views.of(o.rms, "rms") : nullptr;
    a.alpha = views.of(o.alpha, "alpha");
    run_two_phase(attnops_attn_res_workspace_size, attnops_attn_res, a);
    push_outputs(stack, kFwdArgs, std::move(o));
}

void attn_res_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kFwdArgs);
    push_outputs(stack, kFwdArgs, fwd_outputs(blocks_of(args[0]), args[2].isTensor(), args[6].toBool(), at::kMeta));
}

// ---- the backward --------------------------------------------------------------------------
struct BwdOutputs {
    std::vector<at::Tensor> grad_blocks;
    at::Tensor grad_partial, grad_proj, grad_gamma;
};

BwdOutputs bwd_outputs(const IValue *args, at::Device device) {
    std::vector<at::Tensor> blocks = blocks_of(args[1]);
    auto like = [device](const at::Tensor &t) { return at::empty_symint(t.sym_sizes(), t.options().device(device)); };
    at::TensorOptions empty = blocks[0].options().device(device);
    BwdOutputs o;
    for (const at::Tensor &t : blocks)
        o.grad_blocks.push_back(like(t));
    o.grad_partial = args[4].isTensor() ? like(args[4].toTensor()) : at::empty({0}, empty);
    o.grad_proj = like(args[2].toTensor());
    bool rmsnorm = args[8].toBool();
    if (rmsnorm && !args[5].isTensor())
        raise_value_error("attnops: enable_rmsnorm needs rmsnorm_gamma; got None");
    o.grad_gamma = rmsnorm ? like(args[5].toTensor()) : at::empty({0}, empty);
    return o;
}

void push_outputs(torch::jit::Stack *stack, BwdOutputs o) {
    torch::jit::drop(*stack, kBwdArgs);
    torch::jit::push(*stack, std::move(o.grad_blocks), std::move(o.grad_partial), std::move(o.grad_proj),
                     std::move(o.grad_gamma));
}

void attn_res_grad_cpu(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    const IValue *args = &*(stack->end() - kBwdArgs);
    BwdOutputs o = bwd_outputs(args, at::kCPU);
    std::vector<at::Tensor> blocks = blocks_of(args[1]);
    bool rmsnorm = args[8].toBool();

    attnops_attn_res_bwd_args a;
    attnops_attn_res_bwd_args_init(&a);
    Views views;
    std::vector<const attnops_tensor *> block_views = views_of(views, blocks, "blocks");
    std::vector<const attnops_tensor *> grad_views = views_of(views, o.grad_blocks, "grad_blocks");
    a.grad_h = views.of(args[0].toTensor(), "grad_h");
    a.blocks = block_views.data();
    a.num_blocks = static_cast<int64_t>(blocks.size());
    a.proj_weight = views.of(args[2].toTensor(), "proj_weight");
    a.alpha = views.of(args[3].toTensor(), "alpha");
    a.partial_block = views.of(optional_of(args[4]), "partial_block");
    a.rmsnorm_gamma = views.of(optional_of(args[5]), "rmsnorm_gamma");
    a.rms = rmsnorm ? views.of(optional_of(args[6]), "rms") : nullptr;
    a.scale = args[7].toDouble();
    a.enable_rmsnorm = rmsnorm;
    a.impl = impl_of(args[9].toStringRef());
    a.num_threads = num_threads();
    a.grad_blocks = grad_views.data();
    a.grad_partial_block = args[4].isTensor() ? views.of(o.grad_partial, "grad_partial_block") : nullptr;
    a.grad_proj_weight = views.of(o.grad_proj, "grad_proj_weight");
    a.grad_rmsnorm_gamma = rmsnorm ? views.of(o.grad_gamma, "grad_rmsnorm_gamma") : nullptr;
    run_two_phase(attnops_attn_res_grad_workspace_size, attnops_attn_res_grad, a);
    push_outputs(stack, std::move(o));
}

void attn_res_grad_meta(const c10::OperatorHandle &, torch::jit::Stack *stack) {
    push_outputs(stack, bwd_outputs(&*(stack->end() - kBwdArgs), at::kMeta));
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

        torch::jit::Stack stack;
        torch::jit::push(stack, grad_h, block_values, proj.unpack(), alpha.unpack(), opt(partial_value),
                         opt(gamma_value), opt(rms.unpack()), scale, rmsnorm, impl);
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
    const IValue *args = &*(stack->end() - kFwdArgs);
    std::vector<at::Tensor> blocks = args[0].toTensorVector();
    bool needs_grad = false;
    for (const at::Tensor &t : blocks)
        needs_grad = needs_grad || t.requires_grad();
    needs_grad = at::GradMode::is_enabled() &&
                 (needs_grad || requires_grad(args[1]) || requires_grad(args[2]) || requires_grad(args[3]));
    if (!needs_grad) {
        at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
        return;
    }
    auto node = c10::make_intrusive<AttnResBackward>();
    at::Tensor proj = args[1].toTensor(), partial = optional_of(args[2]).value_or(at::Tensor()),
               gamma = optional_of(args[3]).value_or(at::Tensor());
    node->set_next_edges(torch::autograd::collect_next_edges(blocks, proj, partial, gamma));
    for (const at::Tensor &b : blocks)
        node->blocks.emplace_back(b, false);
    node->proj = torch::autograd::SavedVariable(proj, false);
    node->partial = torch::autograd::SavedVariable(partial, false);
    node->gamma = torch::autograd::SavedVariable(gamma, false);
    node->scale = args[4].toDouble();
    node->rmsnorm = args[6].toBool();
    node->impl = args[7].toStringRef();
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
    m.def(kFwdSchema);
    m.def(kBwdSchema);
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
