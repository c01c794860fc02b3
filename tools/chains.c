/* The chains the CLI runs besides the golden and the kernel. */
#include "chains.h"

attnops_status fa_bench_chain(const harness_case *hc, bool auto_grad, int threads, const fa_case *golden,
                              fa_case *bench)
{
    fa_case_init(bench, &hc->shape, hc->data_seed);
    attnops_status st = ATTNOPS_SUCCESS;
    if (auto_grad) st = fa_case_forward(bench, ATTNOPS_IMPL_BENCHMARK, threads, 0);
    else fa_case_copy_forward(bench, golden);
    return st == ATTNOPS_SUCCESS ? fa_case_backward(bench, ATTNOPS_IMPL_BENCHMARK, threads, 0) : st;
}
