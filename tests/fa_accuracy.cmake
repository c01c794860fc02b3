# Fast kernel vs reference.  The second entry runs the same suite with the
# test-only broken kernel and must fail: proof that the comparisons bite.
add_attnops_test(test_fa_accuracy ${CMAKE_CURRENT_SOURCE_DIR}/test_fa_accuracy.c --cases 48)
add_test(NAME test_fa_accuracy_portable COMMAND test_fa_accuracy --cases 12)
set_tests_properties(test_fa_accuracy_portable PROPERTIES ENVIRONMENT "ATTNOPS_ISA=portable")
add_test(NAME test_fa_accuracy_detects_broken_kernel COMMAND test_fa_accuracy --cases 2)
set_tests_properties(test_fa_accuracy_detects_broken_kernel PROPERTIES
    ENVIRONMENT "ATTNOPS_TEST_BREAK_KERNEL=1" WILL_FAIL TRUE)
