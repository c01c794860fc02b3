// Do-nothing torch ops for bench/bench_python.py: what torch's dispatcher costs a call before any work,
// with the argument list of torch.ops.attnops.flash_attention_score (37 arguments), of its first 24 (CANN's
// FlashAttentionScore attributes, without attnops' extensions), of flash-attn's flash_attn_func (11) and of a
// 5-argument op.  Each allocates the three outputs a forward returns and
// computes nothing, so a call's time is torch's argument parsing, dispatch and allocation: the floor
// under any op with that schema (docs/PERFORMANCE.md "The torch binding's per-call cost").
// Built just in time by torch.utils.cpp_extension; not part of the library or the package.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

using c10::IValue;

// Pops the call's arguments, pushes three outputs shaped as a forward's (out, softmax_max, softmax_sum).
void three_outputs(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
    size_t args = op.schema().arguments().size();
    at::Tensor q = (*stack)[stack->size() - args].toTensor();
    at::Tensor out = at::empty_like(q);
    at::Tensor smax = at::empty({q.size(0), q.size(2), q.size(1), 8}, q.options());
    at::Tensor ssum = at::empty({q.size(0), q.size(2), q.size(1), 8}, q.options());
    torch::jit::drop(*stack, args);
    torch::jit::push(*stack, std::move(out), std::move(smax), std::move(ssum));
}

} // namespace

TORCH_LIBRARY(attnops_floor, m) {
    m.def("args37(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, Tensor? pse=None, "
          "Tensor? drop_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., "
          "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, int[]? prefix=None, "
          "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, int pse_type=1, "
          "Tensor? query_rope=None, Tensor? key_rope=None, int[]? q_start_idx=None, int[]? kv_start_idx=None, "
          "int seed=2, int offset=0, str impl=\"auto\", bool deterministic=False, Tensor? seed_offset=None, "
          "str softmax_in_layout=\"\", Tensor? cu_seqlens_q=None, Tensor? cu_seqlens_kv=None, float softcap=0., "
          "int dropout_head_num=0, int dropout_head_start=0, int[]? dropout_seq_qlen=None, "
          "int[]? dropout_seq_kvlen=None, int[]? dropout_q_start=None, int[]? dropout_kv_start=None) "
          "-> (Tensor, Tensor, Tensor)");
    m.def("args24(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, Tensor? pse=None, "
          "Tensor? drop_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., "
          "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, int[]? prefix=None, "
          "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, int pse_type=1, "
          "Tensor? query_rope=None, Tensor? key_rope=None, int[]? q_start_idx=None, int[]? kv_start_idx=None, "
          "int seed=2, int offset=0) -> (Tensor, Tensor, Tensor)");
    m.def("args11(Tensor q, Tensor k, Tensor v, float dropout_p=0., float? softmax_scale=None, bool causal=False, "
          "int window_size_left=-1, int window_size_right=-1, float softcap=0., Tensor? alibi_slopes=None, "
          "bool return_softmax=False) -> (Tensor, Tensor, Tensor)");
    m.def("args5(Tensor q, Tensor k, Tensor v, float scale, bool causal) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(attnops_floor, CPU, m) {
    for (const char *name : {"args37", "args24", "args11", "args5"})
        m.impl(name, torch::CppFunction::makeFromBoxedFunction<&three_outputs>());
}

// The floor without autograd's work: the real ops' Autograd kernels only redispatch when no input
// requires grad.
TORCH_LIBRARY_IMPL(attnops_floor, Autograd, m) {
    for (const char *name : {"args37", "args24", "args11", "args5"})
        m.impl(name, torch::CppFunction::makeFallthrough());
}
