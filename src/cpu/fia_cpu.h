/* The FusedInferAttentionScore fast kernel (fia_cpu.c): split-KV over the
 * cache read in place, f32 accumulation, the tile GEMMs and the
 * FlashAttention softmax kernels of the ISA in use. */
#ifndef ATTNOPS_FIA_CPU_H
#define ATTNOPS_FIA_CPU_H

#include "fia/fia_problem.h"

/* The most rows of a query block the few-row kernels take (a decode step's
 * kv group, a short speculative step); larger blocks use the tile GEMMs. */
enum {
    FIA_DIRECT_ROWS = 16,
    FIA_MQ = 64 /* query rows of a block (G heads x query rows) */
};

size_t fia_cpu_workspace(const fia_problem *p);
void fia_cpu_run(const fia_problem *p, void *workspace);

#endif
