# The case descriptor's text form: round trips and refusals.
add_attnops_test(test_fa_case_shape ${CMAKE_CURRENT_SOURCE_DIR}/test_fa_case_shape.c)
