/* The process-wide thread budget (docs/RELIABILITY.md, "Threads").
 *
 * OpenMP gives every user thread that starts a parallel region its own
 * team, so 16 user threads each calling with num_threads = 0 (the OpenMP
 * default, one per CPU) would run 16 x CPUs threads at once.  Instead each
 * run takes a team from a budget of omp_get_num_procs() threads shared by
 * the runs in flight: it gets what it asked for while that fits, else what
 * is left, and never fewer than 1 (its own thread).  A run alone always gets
 * what it asked for, so an explicit num_threads above the CPU count still
 * works as asked; a run inside the caller's own OpenMP parallel region gets
 * 1, which is what OpenMP would give it (nested parallelism is off).
 *
 * The team size changes no result: the arithmetic (splits, partials,
 * workspace) follows the requested count (`threads` of the problems) and
 * the parallel loops are work-shared, so a smaller team only runs them on
 * fewer threads (tests/test_concurrency.c checks the bits). */
#include <stdatomic.h>

#include "core.h"

static atomic_int threads_in_use;

static int cpu_budget(void)
{
#ifdef _OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

int ao_team_acquire(int requested)
{
    if (requested < 1) requested = 1;
#ifdef _OPENMP
    if (omp_in_parallel()) requested = 1;
#endif
    /* The budget is read only when other runs are in flight: a run alone gets
     * `requested` whatever it is, and omp_get_num_procs() re-reads the
     * affinity mask with a system call (~0.4 us, a tenth of a tiny call). */
    int budget = 0, used = atomic_load(&threads_in_use), team;
    do {
        if (used != 0 && budget == 0) budget = cpu_budget();
        const int left = budget - used;
        team = used == 0 || requested <= left ? requested : (left > 1 ? left : 1);
    } while (!atomic_compare_exchange_weak(&threads_in_use, &used, used + team));
    return team;
}

void ao_team_release(int team) { atomic_fetch_sub(&threads_in_use, team); }
