/* The process-wide thread budget (src/core/threads.c; docs/RELIABILITY.md
 * "Threads"): a run alone gets the team it asks for; runs in flight share
 * omp_get_num_procs() threads and each gets at least 1; a run inside an
 * OpenMP parallel region gets 1; and 16 user threads acquiring and releasing
 * at once leave the budget whole (no lost update). */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

#include "core/core.h"
#include "testutil.h"
#include "suite.h"

enum { USER_THREADS = 16, CYCLES = 20000 };

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < CYCLES; i++) {
        seed = seed * 1103515245u + 12345u;
        const int want = 1 + (int)(seed >> 16) % 8;
        const int team = ao_team_acquire(want);
        if (team < 1 || team > want) {
            TU_CHECK(false, "acquire(%d) gave %d under contention", want, team);
            break;
        }
        ao_team_release(team);
    }
    return NULL;
}

int main(void)
{
    const int budget = omp_get_num_procs();
    int passed = 0, before = tu_failures;

    int t = ao_team_acquire(budget + 7);
    TU_CHECK(t == budget + 7, "a run alone asked for %d threads and got %d", budget + 7, t);
    ao_team_release(t);
    t = ao_team_acquire(0);
    TU_CHECK(t == 1, "a request of 0 threads gave %d (want 1)", t);
    ao_team_release(t);
    passed += tu_failures == before;

    before = tu_failures;
    const int first = ao_team_acquire(budget);
    const int second = ao_team_acquire(4);
    TU_CHECK(first == budget && second == 1, "with the budget of %d taken, acquire(4) gave %d (want 1)", budget,
             second);
    ao_team_release(second);
    ao_team_release(first);
    const int one = ao_team_acquire(1), rest = ao_team_acquire(budget + 5);
    const int want_rest = budget - 1 > 1 ? budget - 1 : 1;
    TU_CHECK(rest == want_rest, "with 1 of %d threads in use, acquire(%d) gave %d (want %d)", budget, budget + 5,
             rest, want_rest);
    ao_team_release(rest);
    ao_team_release(one);
    passed += tu_failures == before;

    before = tu_failures;
    int nested[2] = {0, 0};
#pragma omp parallel num_threads(2)
    {
        const int team = ao_team_acquire(8);
        nested[omp_get_thread_num()] = team;
        ao_team_release(team);
    }
    TU_CHECK(nested[0] == 1 && (omp_get_max_threads() < 2 || nested[1] == 1),
             "inside a parallel region acquire(8) gave %d / %d (want 1)", nested[0], nested[1]);
    passed += tu_failures == before;

    before = tu_failures;
    pthread_t ids[USER_THREADS];
    for (int i = 0; i < USER_THREADS; i++) pthread_create(&ids[i], NULL, churn, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < USER_THREADS; i++) pthread_join(ids[i], NULL);
    t = ao_team_acquire(budget);
    const int after = ao_team_acquire(budget);
    TU_CHECK(t == budget && after == 1, "after %d threads x %d acquire/release cycles the budget is not whole "
             "(acquire(%d) gave %d, then %d)", USER_THREADS, CYCLES, budget, t, after);
    ao_team_release(after);
    ao_team_release(t);
    passed += tu_failures == before;

    /* The checks bite: a leaked team is seen by the last check's form. */
    const int leaked = ao_team_acquire(1);
    const int sees = ao_team_acquire(budget);
    TU_CHECK(budget == 1 || sees != budget, "a held team went unnoticed");
    ao_team_release(sees);
    ao_team_release(leaked);
    return tu_finish("test_team_budget", passed);
}
