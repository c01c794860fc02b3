/* CPU detection and the kernel table it selects (BLIS/XNNPACK style: the
 * framework code never names an ISA; only src/cpu/avx512/ is compiled with
 * AVX-512 flags, and it is reached only through this table). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "attnops.h"
#include "cpu/isa.h"

static cpu_isa selected;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void detect(void)
{
    __builtin_cpu_init();
    bool has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    const char *force = getenv("ATTNOPS_ISA");
    selected = has_avx512 ? CPU_ISA_AVX512 : CPU_ISA_PORTABLE;
    if (force && strcmp(force, "portable") == 0) selected = CPU_ISA_PORTABLE;
}

cpu_isa cpu_isa_get(void)
{
    pthread_once(&once, detect);
    return selected;
}

const fa_tile_kernels *fa_tile_kernels_get(void)
{
    return cpu_isa_get() == CPU_ISA_AVX512 ? &fa_tile_kernels_avx512 : &fa_tile_kernels_portable;
}

const char *attnops_cpu_isa(void) { return cpu_isa_get() == CPU_ISA_AVX512 ? "avx512" : "portable"; }
