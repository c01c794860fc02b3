/* The golden's block products (the kernel table's golden group), part of
 * test_kernel_inventory. */
#ifndef ATTNOPS_TESTS_CHECK_REF_BLOCK_H
#define ATTNOPS_TESTS_CHECK_REF_BLOCK_H

#include "cpu/kernels.h"

void check_golden_blocks(const golden_kernels *k, const char *isa);

#endif
