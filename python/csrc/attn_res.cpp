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
#include <torch/autograd.h>
#include <torch/library.h>

#include <vector>

namespace attnops_torch {
namespace {

using c10::IValue;
using torch::autograd::AutogradContext;
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

// Differentiable in the blocks, proj_weight, partial_block and rmsnorm_gamma; rms and alpha are not.
struct AttnResFunction : torch::autograd::Function<AttnResFunction> {
    static variable_list forward(AutogradContext *ctx, at::TensorList blocks, const at::Tensor &proj_weight,
                                 const std::optional<at::Tensor> &partial, const std::optional<at::Tensor> &gamma,
                                 RedispatchCall call) {
        torch::jit::Stack &stack = *call.stack;
        const IValue *args = &*(stack.end() - kFwdArgs);
        double scale = args[4].toDouble();
        bool rmsnorm = args[6].toBool();
        std::string impl = args[7].toStringRef();
        {
            at::AutoDispatchBelowADInplaceOrView below;
            call.op->redispatchBoxed(call.keys & c10::after_autograd_keyset, call.stack);
        }
        at::Tensor h = stack[stack.size() - 3].toTensor(), rms = stack[stack.size() - 2].toTensor(),
                   alpha = stack[stack.size() - 1].toTensor();
        torch::jit::drop(stack, 3);
        std::vector<at::Tensor> saved(blocks.begin(), blocks.end());
        saved.insert(saved.end(), {proj_weight, partial.value_or(at::Tensor()), gamma.value_or(at::Tensor()), rms,
                                   alpha});
        ctx->save_for_backward(saved);
        ctx->saved_data["num_blocks"] = static_cast<int64_t>(blocks.size());
        ctx->saved_data["scale"] = scale;
        ctx->saved_data["rmsnorm"] = rmsnorm;
        ctx->saved_data["impl"] = impl;
        ctx->mark_non_differentiable({rms, alpha});
        return {h, rms, alpha};
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads) {
        variable_list saved = ctx->get_saved_variables();
        size_t n = static_cast<size_t>(ctx->saved_data["num_blocks"].toInt());
        std::vector<at::Tensor> blocks(saved.begin(), saved.begin() + n);
        const at::Tensor &proj = saved[n], &partial = saved[n + 1], &gamma = saved[n + 2], &rms = saved[n + 3],
                         &alpha = saved[n + 4];
        bool rmsnorm = ctx->saved_data["rmsnorm"].toBool();
        at::Tensor grad_h = grads[0].defined() ? grads[0] : at::zeros_like(blocks[0]);
        auto opt = [](const at::Tensor &t) { return t.defined() ? IValue(t) : IValue(); };

        torch::jit::Stack stack;
        torch::jit::push(stack, grad_h, blocks, proj, alpha, opt(partial), opt(gamma), opt(rms),
                         ctx->saved_data["scale"], rmsnorm, ctx->saved_data["impl"]);
        grad_op().callBoxed(&stack);

        variable_list out = stack[0].toTensorVector();
        out.push_back(stack[2].toTensor());
        out.push_back(partial.defined() ? stack[1].toTensor() : at::Tensor());
        out.push_back(gamma.defined() && rmsnorm ? stack[3].toTensor() : at::Tensor());
        out.push_back(at::Tensor()); // the call
        return out;
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
    // Copies: the redispatch inside consumes the stack these were read from.
    at::Tensor proj = args[1].toTensor();
    std::optional<at::Tensor> partial = optional_of(args[2]), gamma = optional_of(args[3]);
    variable_list outs = AttnResFunction::apply(at::TensorList(blocks), proj, partial, gamma,
                                                RedispatchCall{&op, keys, stack});
    for (at::Tensor &t : outs)
        torch::jit::push(*stack, std::move(t));
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
}

} // namespace attnops_torch
