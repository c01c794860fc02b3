# Concurrent use: 16 user threads calling every operator at once, each
# result bit for bit the same call's alone, thread-local error sentences
# (docs/RELIABILITY.md "Threads"); and the team-size budget those calls share.
find_package(Threads REQUIRED)
add_attnops_test(test_concurrency ${CMAKE_CURRENT_SOURCE_DIR}/test_concurrency.c)
target_link_libraries(test_concurrency PRIVATE Threads::Threads)
add_attnops_test(test_team_budget ${CMAKE_CURRENT_SOURCE_DIR}/test_team_budget.c)
target_link_libraries(test_team_budget PRIVATE Threads::Threads)
