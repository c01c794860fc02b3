// The torch binding's shared pieces (binding.h).
#include "binding.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/functions/basic_ops.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace attnops_torch {

[[noreturn]] void raise_status(attnops_status status) {
    std::string msg = std::string(attnops_last_error()) + " [" + attnops_status_string(status) + " " +
                      std::to_string(static_cast<int>(status)) + "]";
    switch (status) {
    case ATTNOPS_ERR_NULLPTR:
    case ATTNOPS_ERR_PARAM_INVALID:
        C10_THROW_ERROR(ValueError, msg);
    case ATTNOPS_ERR_UNSUPPORTED:
        C10_THROW_ERROR(NotImplementedError, msg);
    case ATTNOPS_ERR_OUT_OF_MEMORY:
        C10_THROW_ERROR(OutOfMemoryError, msg);
    default:
        C10_THROW_ERROR(Error, msg);
    }
}

[[noreturn]] void raise_value_error(const std::string &sentence) { C10_THROW_ERROR(ValueError, sentence); }
[[noreturn]] void raise_type_error(const std::string &sentence) { C10_THROW_ERROR(TypeError, sentence); }
[[noreturn]] void raise_not_implemented(const std::string &sentence) {
    C10_THROW_ERROR(NotImplementedError, sentence);
}

namespace {

attnops_dtype dtype_of(at::ScalarType type) {
    switch (type) {
    case at::kFloat: return ATTNOPS_DTYPE_F32;
    case at::kHalf: return ATTNOPS_DTYPE_F16;
    case at::kBFloat16: return ATTNOPS_DTYPE_BF16;
    case at::kFloat8_e4m3fn: return ATTNOPS_DTYPE_F8_E4M3FN;
    case at::kFloat8_e5m2: return ATTNOPS_DTYPE_F8_E5M2;
    case at::kByte: return ATTNOPS_DTYPE_U8;
    case at::kBool: return ATTNOPS_DTYPE_BOOL;
    case at::kInt: return ATTNOPS_DTYPE_I32;
    case at::kLong: return ATTNOPS_DTYPE_I64;
    case at::kChar: return ATTNOPS_DTYPE_I8;
    default: return ATTNOPS_DTYPE_UNSET;
    }
}

// What a tensor without elements points to: the library wants a pointer and never follows it.
alignas(64) char empty_storage[64];

} // namespace

attnops_tensor &Views::next_view() {
    if (used_ < kInline)
        return inline_[used_++] = attnops_tensor{};
    return *more_.emplace_back(std::make_unique<attnops_tensor>());
}

attnops_tensor *Views::of(const at::Tensor &t, const char *name) {
    if (!t.defined())
        return nullptr;
    attnops_tensor &v = next_view();
    v.dtype = dtype_of(t.scalar_type());
    if (v.dtype == ATTNOPS_DTYPE_UNSET)
        raise_type_error(std::string("attnops: ") + name + " has dtype torch." +
                         std::string(c10::getDtypeNames(t.scalar_type()).first) + ", which attnops does not support");
    if (t.dim() > ATTNOPS_MAX_RANK)
        raise_value_error(std::string("attnops: ") + name + " has rank " + std::to_string(t.dim()) +
                          ", above the library's maximum of " + std::to_string(ATTNOPS_MAX_RANK));
    v.rank = static_cast<int32_t>(t.dim());
    for (int32_t i = 0; i < v.rank; i++) {
        v.shape[i] = t.size(i);
        v.strides[i] = t.stride(i);
    }
    v.data = t.data_ptr();
    if (!v.data)
        v.data = empty_storage;
    return &v;
}

const attnops_tensor *Views::ints(std::vector<int64_t> values) {
    std::vector<int64_t> &list = lists_.emplace_back(std::move(values));
    attnops_tensor &v = next_view();
    v.dtype = ATTNOPS_DTYPE_I64;
    v.rank = 1;
    v.shape[0] = static_cast<int64_t>(list.size());
    v.strides[0] = 1;
    v.data = list.empty() ? static_cast<void *>(empty_storage) : list.data();
    return &v;
}

const attnops_tensor *Views::ints(const std::optional<std::vector<int64_t>> &values) {
    return values ? ints(*values) : nullptr;
}

void no_gradient_autograd(const c10::OperatorHandle &op, c10::DispatchKeySet keys, torch::jit::Stack *stack) {
    const size_t inputs = op.schema().arguments().size();
    std::vector<at::Tensor> needing_grad;
    if (at::GradMode::is_enabled())
        for (auto it = stack->end() - inputs; it != stack->end(); ++it) {
            if (requires_grad(*it))
                needing_grad.push_back(it->toTensor());
            else if (it->isTensorList())
                for (const at::Tensor &t : it->toTensorList().vec())
                    if (t.requires_grad())
                        needing_grad.push_back(t);
        }
    {
        at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
    }
    if (needing_grad.empty())
        return;
    auto node = c10::make_intrusive<torch::autograd::NotImplemented>(op.schema().name(),
                                                                     torch::autograd::collect_next_edges(needing_grad));
    auto floating = [](const at::Tensor &t) {
        return t.defined() && torch::autograd::isDifferentiableType(t.scalar_type());
    };
    for (auto it = stack->end() - op.schema().returns().size(); it != stack->end(); ++it) {
        if (it->isTensor() && floating(it->toTensor()))
            torch::autograd::set_history(it->toTensor(), node);
        else if (it->isTensorList())
            for (const at::Tensor &t : it->toTensorList().vec())
                if (floating(t))
                    torch::autograd::set_history(t, node);
    }
}

CannBand cann_band(int64_t left, int64_t right) {
    static const bool masked = true;
    static const attnops_tensor compressed = [] {
        attnops_tensor v{};
        v.dtype = ATTNOPS_DTYPE_BOOL;
        v.rank = 2;
        v.shape[0] = v.shape[1] = 2048;
        v.data = const_cast<bool *>(&masked);
        return v;
    }();
    CannBand band;
    if (left < 0 && right < 0)
        return band;
    band.atten_mask = &compressed;
    band.sparse_mode = left < 0 && right == 0 ? 3 : 4;
    band.pre_tokens = left < 0 ? INT32_MAX : left;
    band.next_tokens = right < 0 ? INT32_MAX : right;
    return band;
}

attnops_impl impl_of(const std::string &impl) {
    if (impl == "auto")
        return ATTNOPS_IMPL_AUTO;
    if (impl == "reference")
        return ATTNOPS_IMPL_REFERENCE;
    if (impl == "cpu")
        return ATTNOPS_IMPL_CPU;
    if (impl == "benchmark")
        return ATTNOPS_IMPL_BENCHMARK;
    raise_value_error("attnops: impl is '" + impl + "'; it must be one of auto, reference, cpu, benchmark");
}

int32_t num_threads() { return static_cast<int32_t>(at::get_num_threads()); }

namespace {

struct FreeAligned {
    void operator()(void *p) const { std::free(p); }
};

constexpr size_t kWorkspaceAlign = 64;

void *allocate(size_t bytes) {
    size_t rounded = (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
    void *p = std::aligned_alloc(kWorkspaceAlign, rounded ? rounded : kWorkspaceAlign);
    if (!p)
        C10_THROW_ERROR(OutOfMemoryError, "attnops: cannot allocate a workspace of " + std::to_string(bytes) +
                                              " bytes");
    return p;
}

thread_local std::unique_ptr<void, FreeAligned> cached_buffer;
thread_local size_t cached_bytes = 0;

} // namespace

Workspace::Workspace(size_t bytes) {
    if (bytes > kCachedBytes) {
        data_ = owned_ = allocate(bytes);
        return;
    }
    if (bytes > cached_bytes || !cached_buffer) {
        cached_buffer.reset(allocate(bytes));
        cached_bytes = bytes;
    }
    data_ = cached_buffer.get();
}

Workspace::~Workspace() { std::free(owned_); }

CachedBuffer cached_workspace() { return {cached_buffer.get(), cached_bytes}; }

// ---- output shapes ------------------------------------------------------------------------------
template <class Int, class Ref> std::vector<Int> shape_on_query(const attnops_output_shape &s, Ref query) {
    std::vector<Int> shape;
    for (int32_t i = 0; i < s.rank; i++)
        shape.push_back(s.dims[i].query_dim >= 0 ? Int(query[s.dims[i].query_dim]) : Int(s.dims[i].extent));
    return shape;
}

std::vector<int64_t> on_query(const attnops_output_shape &s, at::IntArrayRef query) {
    return shape_on_query<int64_t>(s, query);
}

std::vector<c10::SymInt> on_query(const attnops_output_shape &s, c10::SymIntArrayRef query) {
    return shape_on_query<c10::SymInt>(s, query);
}

attnops_tensor MetaSizes::view(int input, const at::Tensor &t) const {
    attnops_tensor v{};
    v.dtype = dtype_of(t.scalar_type());
    v.rank = static_cast<int32_t>(std::min<int64_t>(t.dim(), ATTNOPS_MAX_RANK + 1)); // too many: refused
    c10::SymIntArrayRef sizes = t.sym_sizes();
    for (int32_t d = 0; d < v.rank && d < ATTNOPS_MAX_RANK; d++) {
        std::optional<int64_t> n = sizes[d].maybe_as_int();
        const bool guard = std::find(guarded.begin(), guarded.end(), std::make_pair(input, d)) != guarded.end();
        v.shape[d] = n ? *n : guard ? sizes[d].guard_int(__FILE__, __LINE__) : placeholder;
    }
    return v;
}

namespace {
// The same dimensions from query and the same own extents (a placeholder moved none of them).
bool same_shapes(const attnops_output_shape *a, const attnops_output_shape *b) {
    for (int k = 0; k < 2; k++) {
        if (a[k].rank != b[k].rank)
            return false;
        for (int32_t i = 0; i < a[k].rank; i++) {
            const attnops_output_dim &x = a[k].dims[i], &y = b[k].dims[i];
            if (x.query_dim != y.query_dim || (x.query_dim < 0 && x.extent != y.extent))
                return false;
        }
    }
    return true;
}
} // namespace

std::array<std::vector<c10::SymInt>, 2> meta_output_shapes(const std::vector<at::Tensor> &inputs,
                                                            const MetaShapeQuery &ask) {
    std::vector<std::pair<int, int>> symbolic; // the guarding order: last dimensions first
    for (int64_t back = 1; back <= ATTNOPS_MAX_RANK; back++)
        for (size_t i = 0; i < inputs.size(); i++) {
            const int64_t d = inputs[i].dim() - back;
            if (d >= 0 && !inputs[i].sym_sizes()[d].maybe_as_int())
                symbolic.emplace_back(static_cast<int>(i), static_cast<int>(d));
        }
    MetaSizes sizes{2, {}};
    attnops_output_shape a[2], b[2];
    for (size_t next = 0;; next++) {
        sizes.placeholder = 2;
        const attnops_status st = ask(sizes, a);
        sizes.placeholder = 3;
        if (st == ATTNOPS_SUCCESS && ask(sizes, b) == ATTNOPS_SUCCESS && same_shapes(a, b))
            break;
        if (next == symbolic.size()) // every symbolic size guarded: the library's own answer
            raise_status(st);
        sizes.guarded.push_back(symbolic[next]);
    }
    c10::SymIntArrayRef query = inputs[0].sym_sizes();
    return {on_query(a[0], query), on_query(a[1], query)};
}

} // namespace attnops_torch
