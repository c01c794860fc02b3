/* TEMPORARY while the fast backward is written: delegates to the reference. */
#include "cpu/fa_cpu.h"
#include "ref/fa_ref.h"
size_t fa_cpu_bwd_workspace(const fa_problem *p) { return fa_ref_bwd_workspace(p); }
void fa_cpu_bwd(const fa_problem *p, void *ws) { fa_ref_bwd(p, ws); }
