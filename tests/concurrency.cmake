# Process-wide behaviour.  Concurrent use: 16 user threads calling every operator at once, each
# result bit for bit the same call's alone, thread-local error sentences
# (docs/RELIABILITY.md "Threads"); and the team-size budget those calls share.
find_package(Threads REQUIRED)
add_attnops_test(test_concurrency ${CMAKE_CURRENT_SOURCE_DIR}/test_concurrency.c)
target_link_libraries(test_concurrency PRIVATE Threads::Threads)
add_attnops_test(test_team_budget ${CMAKE_CURRENT_SOURCE_DIR}/test_team_budget.c)
target_link_libraries(test_team_budget PRIVATE Threads::Threads)
# The process environment after the GEMM set-up (libxsmm_init sets OMP_PROC_BIND): unchanged, from an
# unset variable, an empty one and a set one.
add_attnops_test(test_environment ${CMAKE_CURRENT_SOURCE_DIR}/test_environment.c)
set_tests_properties(test_environment PROPERTIES ENVIRONMENT_MODIFICATION "OMP_PROC_BIND=unset:;I_MPI_SHM_HEAP=unset:")
add_test(NAME test_environment_empty COMMAND test_environment KEEP)
set_tests_properties(test_environment_empty PROPERTIES ENVIRONMENT "OMP_PROC_BIND=")
add_test(NAME test_environment_set COMMAND test_environment KEEP)
set_tests_properties(test_environment_set PROPERTIES ENVIRONMENT "OMP_PROC_BIND=spread")
