/* The AVX2 + FMA + F16C kernel set (kernels.h states each contract). */
#include "cpu/kernels.h"

const cpu_kernel_set cpu_kernels_avx2 = {.fa = {0}};
