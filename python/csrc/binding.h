// What every op of the torch binding (libattnops_torch.so, docs/PYTHON.md "The torch binding") shares:
// attnops_tensor views of torch tensors, the library's two-phase call, and its status as a torch
// exception.
//
// The binding is C++ against libtorch's classic operator registration (TORCH_LIBRARY), not the
// stable ABI: the ops need Autograd kernels, which only the classic API registers from C++, and a
// Python-registered autograd kernel costs more per call than the whole C call (docs/PYTHON.md).
#pragma once

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/dynamo/compiled_autograd.h>
#include <torch/library.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnops.h"

namespace attnops_torch {

// Raise the library's failure as the torch exception Python maps to the matching builtin:
// ValueError (161001 / 161002), NotImplementedError (161003), torch.OutOfMemoryError (361001),
// RuntimeError (the rest).  The message is the library's sentence and "[NAME status]", which the
// Python package turns back into attnops.AttnopsError and its status (python/attnops/_lib.py).
[[noreturn]] void raise_status(attnops_status status);

// A ValueError / TypeError raised by the binding itself, with its sentence.
[[noreturn]] void raise_value_error(const std::string &sentence);
[[noreturn]] void raise_type_error(const std::string &sentence);
[[noreturn]] void raise_not_implemented(const std::string &sentence);

// The attnops_tensor views of one call and the integer lists behind list arguments, alive until
// the call returns.  Pointers into them stay valid: the views live in place (kInline of them, on the
// stack: a call allocates nothing for them, where a deque made four allocations) and then one by one on
// the heap; a list's values are its vector's buffer, which moves with it.  The tensors are CPU
// tensors: the ops have CPU kernels only, and the dispatcher sends a call with a tensor of another
// device to that device's (missing) kernel.
class Views {
  public:
    // NULL for an absent (None or undefined) tensor.  The view may be reshaped (merged or added
    // dims) before the call.
    attnops_tensor *of(const at::Tensor &t, const char *name);
    attnops_tensor *of(const std::optional<at::Tensor> &t, const char *name) {
        return t ? of(*t, name) : nullptr;
    }
    // An i64 [n] view of the values (an int[] argument); NULL for None.
    const attnops_tensor *ints(const std::optional<std::vector<int64_t>> &values);
    const attnops_tensor *ints(std::vector<int64_t> values);

  private:
    static constexpr size_t kInline = 24;
    attnops_tensor &next_view();
    std::array<attnops_tensor, kInline> inline_;
    size_t used_ = 0;
    std::vector<std::unique_ptr<attnops_tensor>> more_;
    std::vector<std::vector<int64_t>> lists_;
};

// One argument of an op's schema: its type, name and default (nullptr: none), and what it sets in
// the library's args struct.  Each op's list of these is the one place its schema, its defaults and
// its args come from.
template <class Args> struct Arg {
    const char *type;
    const char *name;
    const char *default_value;
    void (*fill)(Args &args, Views &views, const c10::IValue &value);
};

// The schema's argument list of `args`, each "type name=default", comma-separated.
template <class Args, size_t N> std::string schema_args(const Arg<Args> (&args)[N]) {
    std::string s;
    for (size_t i = 0; i < N; i++) {
        s += std::string(i ? ", " : "") + args[i].type + " " + args[i].name;
        if (args[i].default_value)
            s += std::string("=") + args[i].default_value;
    }
    return s;
}

// For static_assert on an argument's position in a list.
constexpr bool same_name(const char *a, const char *b) { return *a == *b && (!*a || same_name(a + 1, b + 1)); }

// The differentiable ops' Autograd kernels make their backward node themselves (a torch::autograd::Node
// with SavedVariables, as torch's generated code does for its own ops; compiled_args and
// apply_with_saved let compiled autograd trace it).  The ops without a gradient (the grad ops, the
// inference ops) register no_gradient_autograd, so that a backward through them (a double backward
// included) raises instead of returning wrong gradients.

// Whether an argument is a tensor that requires grad (an Autograd kernel's test).
inline bool requires_grad(const c10::IValue &v) { return v.isTensor() && v.toTensor().requires_grad(); }

// The Autograd kernel of an op without a gradient.  A call where nothing needs one (grad mode off, or
// no input tensor requiring grad: every decode step) goes straight below autograd; otherwise its
// floating outputs get torch's NotImplemented node, whose backward raises, as torch's
// autogradNotImplementedFallback does -- which also walks the schema's aliasing and every argument on
// every call (~0.4 us, and more of a decode step's cache-cold time).
void no_gradient_autograd(const c10::OperatorHandle &op, c10::DispatchKeySet keys, torch::jit::Stack *stack);
inline torch::CppFunction no_gradient() { return torch::CppFunction::makeFromBoxedFunction<&no_gradient_autograd>(); }

// flash-attn's band as CANN's mask arguments, for the ops that take flash-attn's causal / window
// arguments: keys i + Sk - Sq - left <= j <= i + Sk - Sq + right, a negative side unbounded (causal:
// right = 0).  Unbounded: no mask.  Else sparse mode 3 (bottom-right causal) or 4 (the band) with the
// compressed 2048x2048 mask, one byte seen through zero strides (the library reads none of its
// elements), a C view rather than a tensor, so that none is made inside a traced graph.
struct CannBand {
    const attnops_tensor *atten_mask = nullptr;
    int64_t sparse_mode = 0, pre_tokens = INT32_MAX, next_tokens = INT32_MAX;
};
CannBand cann_band(int64_t left, int64_t right);

// The band into an args struct's mask fields (FlashAttention's params, FusedInferAttentionScore's args).
template <class Args> void set_band(Args &a, int64_t left, int64_t right) {
    const CannBand band = cann_band(left, right);
    a.atten_mask = band.atten_mask;
    a.sparse_mode = band.sparse_mode;
    a.pre_tokens = band.pre_tokens;
    a.next_tokens = band.next_tokens;
}

// A new CPU tensor of an op's output, uninitialised: ATen's CPU allocation itself, as torch's own
// kernels make theirs (at::empty would dispatch again, ~0.2 us a tensor).
inline at::Tensor new_output(at::IntArrayRef size, at::ScalarType dtype) { return at::detail::empty_cpu(size, dtype); }

// The ids the ops' string arguments name.
attnops_impl impl_of(const std::string &impl);

// Threads for a call: torch's intra-op thread count, as torch's own CPU kernels use.
int32_t num_threads();

// A call's workspace, uninitialised (the library writes before it reads).  Up to kCachedBytes it
// is this thread's buffer, kept between calls, so a small problem or a decode step allocates
// nothing; a larger one is allocated for the call and freed with it.
class Workspace {
  public:
    static constexpr size_t kCachedBytes = size_t(16) << 20;
    explicit Workspace(size_t bytes);
    ~Workspace();
    Workspace(const Workspace &) = delete;
    Workspace &operator=(const Workspace &) = delete;
    void *data() const { return data_; }

  private:
    void *owned_ = nullptr;
    void *data_ = nullptr;
};

// This thread's cached buffer (data NULL, bytes 0 before the first call).
struct CachedBuffer {
    void *data;
    size_t bytes;
};
CachedBuffer cached_workspace();

// The two-phase call.  The run checks the workspace's size itself and refuses one too small before it
// writes anything, so a call first runs on this thread's cached buffer: one validation instead of the
// query's and the run's (~0.3 us of a 2.3 us tiny call).  Only a refused call (a bigger problem, or
// bad arguments) makes the query, allocates and runs again, which raises the library's own error.
template <class Args>
void run_two_phase(attnops_status (*workspace_size)(const Args *, size_t *),
                   attnops_status (*run)(const Args *, void *, size_t), const Args &args) {
    const CachedBuffer cached = cached_workspace();
    if (cached.data && run(&args, cached.data, cached.bytes) == ATTNOPS_SUCCESS)
        return;
    size_t bytes = 0;
    attnops_status status = workspace_size(&args, &bytes);
    if (status != ATTNOPS_SUCCESS)
        raise_status(status);
    Workspace ws(bytes);
    status = run(&args, ws.data(), bytes);
    if (status != ATTNOPS_SUCCESS)
        raise_status(status);
}

// ---- the library's output shapes (attnops.h, attnops_output_shape) on a framework's sizes -----------
// The shape on query's sizes: query's dimensions stay query's (a SymInt keeps its symbol), the others are
// the library's extents.
std::vector<int64_t> on_query(const attnops_output_shape &s, at::IntArrayRef query);
std::vector<c10::SymInt> on_query(const attnops_output_shape &s, c10::SymIntArrayRef query);

// How a Meta kernel's output-shape query sizes its inputs' shape-only views (no data): a concrete size is
// itself; a symbolic one is guarded to its value (the graph specialised to it) if listed in `guarded`
// (input index, dimension), else `placeholder`.
struct MetaSizes {
    int64_t placeholder;
    std::vector<std::pair<int, int>> guarded;
    attnops_tensor view(int input, const at::Tensor &t) const;
};

// A Meta kernel's two output shapes: `ask(sizes, shapes)` makes the views of `inputs` (query first) with
// `sizes`, fills the op's args and asks the library.  Symbolic sizes are asked with two placeholders; the
// library's own extents must not move with them (they name query's sizes by reference), else symbolic
// sizes are guarded one at a time, head dims first (the last dimensions, then the ones before), until
// they do not: batch and sequence sizes stay symbolic.  A refusal raises.
using MetaShapeQuery = std::function<attnops_status(const MetaSizes &sizes, attnops_output_shape *shapes)>;
std::array<std::vector<c10::SymInt>, 2> meta_output_shapes(const std::vector<at::Tensor> &inputs,
                                                            const MetaShapeQuery &ask);

} // namespace attnops_torch
