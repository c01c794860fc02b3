# Harness case files: the seed's field names, document forms, every bad field an error.
add_attnops_test(test_harness_case ${CMAKE_CURRENT_SOURCE_DIR}/test_harness_case.c)
