// What every op of the torch binding (libattnops_torch.so, docs/PYTHON.md "The torch binding") shares:
// attnops_tensor views of torch tensors, the library's two-phase call, and its status as a torch
// exception.
//
// The binding is C++ against libtorch's classic operator registration (TORCH_LIBRARY), not the
// stable ABI: the ops need Autograd kernels, which only the classic API registers from C++, and a
// Python-registered autograd kernel costs more per call than the whole C call (docs/PYTHON.md).
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <deque>
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

// The attnops_tensor views of one call and the integer lists behind list arguments, alive until
// the call returns.  Pointers into them stay valid: both grow as deques.  The tensors are CPU
// tensors: the ops have CPU kernels only, and the dispatcher sends a call with a tensor of another
// device to that device's (missing) kernel.
class Views {
  public:
    // NULL for an absent (None or undefined) tensor.
    const attnops_tensor *of(const at::Tensor &t, const char *name);
    const attnops_tensor *of(const std::optional<at::Tensor> &t, const char *name) {
        return t ? of(*t, name) : nullptr;
    }
    // An i64 [n] view of the values (an int[] argument); NULL for None.
    const attnops_tensor *ints(const std::optional<std::vector<int64_t>> &values);
    const attnops_tensor *ints(std::vector<int64_t> values);

  private:
    std::deque<attnops_tensor> views_;
    std::deque<std::vector<int64_t>> lists_;
};

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

// The two-phase call: workspace query, workspace, run.
template <class Args>
void run_two_phase(attnops_status (*workspace_size)(const Args *, size_t *),
                   attnops_status (*run)(const Args *, void *, size_t), const Args &args) {
    size_t bytes = 0;
    attnops_status status = workspace_size(&args, &bytes);
    if (status != ATTNOPS_SUCCESS)
        raise_status(status);
    Workspace ws(bytes);
    status = run(&args, ws.data(), bytes);
    if (status != ATTNOPS_SUCCESS)
        raise_status(status);
}

} // namespace attnops_torch
