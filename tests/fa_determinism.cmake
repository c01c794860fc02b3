add_attnops_test(test_fa_determinism ${CMAKE_CURRENT_SOURCE_DIR}/test_fa_determinism.c)
