# The harness comparison rules (verify/compare.c) on hand-computed data.
add_attnops_test(test_compare ${CMAKE_CURRENT_SOURCE_DIR}/test_compare.c)
