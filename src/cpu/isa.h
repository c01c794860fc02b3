/* Run-time choice of the instruction set the fast kernels use, made once
 * per process: the best ISA the CPU supports, or the one ATTNOPS_ISA names
 * (portable, avx2, avx512 on x86-64; portable, neon on AArch64).  Asking
 * for one the CPU lacks, or for an unknown name, prints one line to stderr
 * and uses the best supported ISA instead.
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

/* The table cpu_kernels() returns, writable, for one caller: a test that
 * swaps a kernel for a faulty one (tests/support/broken_kernel.c) to prove
 * that the comparisons catch it.  The library never calls it, and it is
 * hidden from libattnops.so (tests link the static library); call it before
 * any operator runs. */
cpu_kernel_set *cpu_kernels_for_fault_injection(void);

/* Blocking that depends on the ISA's GEMMs, registered per ISA as BLIS
 * registers its blocksizes per configuration. */
typedef struct cpu_tuning {
    /* The FlashAttention backward's query tile, 64 or 128 rows (fa_tiles.h):
     * 128 on AVX-512, where libxsmm's bf16 kernels want the longer reduction;
     * 64 on AVX2 (fp32 GEMMs), measured faster there. */
    int fa_bwd_query_rows;
} cpu_tuning;

/* The tuning of the ISA in use. */
const cpu_tuning *cpu_tuning_selected(void);

/* Whether the tile GEMMs may run in the GEMM library (tile_gemm.c) under
 * this ISA, and for which target: NULL, not at all (plain loops, the
 * portable ISA); "", whatever the library picks for the CPU; otherwise
 * libxsmm's name for the code its JIT may emit (a forced AVX2 on an AVX-512
 * CPU gets "hsw"). */
const char *cpu_isa_gemm_target(int isa);

#endif
