/* Run-time choice of the instruction set the fast kernels use, made once
 * per process: the best ISA the CPU supports, or the one ATTNOPS_ISA names
 * (portable, avx2, avx512).  Asking for one the CPU lacks, or for an unknown
 * name, prints one line to stderr and uses the best supported ISA instead.
 *
 * ISAs are numbered in inheritance order (kernels.h): 0 is portable, and
 * each later one is a superset of the one before on every CPU that has it. */
#ifndef ATTNOPS_CPU_ISA_H
#define ATTNOPS_CPU_ISA_H

#include <stdbool.h>

#include "cpu/kernels.h"

int cpu_isa_count(void);
const char *cpu_isa_name(int isa);
bool cpu_isa_supported(int isa);
int cpu_isa_selected(void);

/* The complete kernel set of an ISA (NULL when the CPU lacks it), and the
 * ISA whose own table provides a given kernel in it (for reports). */
const cpu_kernel_set *cpu_kernels_of(int isa);
int cpu_kernel_provider(int isa, const cpu_kernel_entry *e);

/* libxsmm's name for the code its JIT may emit under this ISA (NULL: no
 * JIT, plain loops; "" : whatever the CPU has). */
const char *cpu_isa_gemm_target(int isa);

#endif
