add_attnops_test(test_seed_cases ${CMAKE_CURRENT_SOURCE_DIR}/test_seed_cases.c)
