/* A fault the comparisons must catch: the selected ISA's FlashAttention
 * backward row kernel (fa_kernels.softmax_bwd) replaced by one that zeroes
 * the first row of P and dS of every tile, so dq loses the first query row
 * of each tile and dk, dv lose its contributions.  The forward is untouched.
 * Tests install it through the kernel inventory; the library has no switch
 * for it. */
#ifndef ATTNOPS_TESTS_BROKEN_KERNEL_H
#define ATTNOPS_TESTS_BROKEN_KERNEL_H

/* Call before any operator runs. */
void broken_kernel_install(void);

#endif
