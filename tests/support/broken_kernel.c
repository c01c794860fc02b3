#include "broken_kernel.h"

#include <string.h>

#include "cpu/isa.h"

static void (*intact_softmax_bwd)(float *, float *, int, int, int, float, const float *, const float *,
                                  const float *);

static void softmax_bwd_first_row_lost(float *s, float *dp, int rows, int cols, int valid_cols, float scale,
                                       const float *m, const float *l, const float *drow)
{
    intact_softmax_bwd(s, dp, rows, cols, valid_cols, scale, m, l, drow);
    memset(s, 0, (size_t)cols * sizeof *s);
    memset(dp, 0, (size_t)cols * sizeof *dp);
}

void broken_kernel_install(void)
{
    fa_kernels *fa = &cpu_kernels_for_fault_injection()->fa;
    intact_softmax_bwd = fa->softmax_bwd;
    fa->softmax_bwd = softmax_bwd_first_row_lost;
}
