/* The library leaves its caller's environment as it found it: libxsmm_init
 * puts OMP_PROC_BIND=TRUE into an environment without affinity settings,
 * which pinned every child process (torch.multiprocessing ranks) to CPU 0;
 * src/cpu/tile_gemm.c takes it out again.  Run once per starting state (the
 * GEMM set-up happens once per process):
 *   test_environment        OMP_PROC_BIND unset: still unset after the set-up
 *   test_environment KEEP   OMP_PROC_BIND as the caller set it (ctest sets
 *                           "" and "spread"): still that value */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/tile_gemm.h"
#include "testutil.h"
#include "suite.h"

static void check_same(const char *name, const char *before)
{
    const char *after = getenv(name);
    if (before == NULL)
        TU_CHECK(after == NULL, "%s was unset before the GEMM set-up and is \"%s\" after it", name, after);
    else
        TU_CHECK(after != NULL && strcmp(after, before) == 0, "%s was \"%s\" before the GEMM set-up and is %s%s%s",
                 name, before, after ? "\"" : "", after ? after : "unset", after ? "\"" : "");
}

int main(int argc, char **argv)
{
    const bool keep = argc > 1 && strcmp(argv[1], "KEEP") == 0;
    const char *bind = getenv("OMP_PROC_BIND"), *shm = getenv("I_MPI_SHM_HEAP");
    char bind_before[64] = "", shm_before[64] = "";
    if (bind) snprintf(bind_before, sizeof bind_before, "%s", bind);
    if (shm) snprintf(shm_before, sizeof shm_before, "%s", shm);
    TU_CHECK(keep == (bind != NULL), "run %s OMP_PROC_BIND, but it is %s", keep ? "with" : "without",
             bind ? bind : "unset");

    const bool library = tile_gemm_library_available(TILE_GEMM_F32_NN); /* the one-time set-up, libxsmm_init included */
    printf("GEMM set-up: %s (library %s)\n", tile_gemm_backend(TILE_GEMM_F32_NN), library ? "set up" : "not needed");
    const int before = tu_failures;
    check_same("OMP_PROC_BIND", bind ? bind_before : NULL);
    check_same("I_MPI_SHM_HEAP", shm ? shm_before : NULL);
    return tu_finish("test_environment", tu_failures == before ? 2 : 0);
}
