# Fast kernel vs reference.  The last entry runs the suite with the broken
# backward kernel (tests/support/broken_kernel.h, installed through the kernel
# inventory) and passes only when the comparator reports the mismatch: proof
# that the comparisons bite (a crash would not print it).
# Once per ISA, the portable path (plain C GEMM loops) on fewer cases.
add_executable(test_fa_accuracy ${CMAKE_CURRENT_SOURCE_DIR}/test_fa_accuracy.c)
target_link_libraries(test_fa_accuracy PRIVATE attnops_test_support)
foreach(isa ${ATTNOPS_TEST_ISAS})
  if(isa STREQUAL "portable")
    add_attnops_isa_test(test_fa_accuracy ${isa} test_fa_accuracy --cases 12 --masked-cases 20 --tnd-cases 8)
  else()
    add_attnops_isa_test(test_fa_accuracy ${isa} test_fa_accuracy)
  endif()
endforeach()
add_test(NAME test_fa_accuracy_detects_broken_kernel
         COMMAND test_fa_accuracy --cases 2 --masked-cases 0 --tnd-cases 0 --break-kernel)
set_tests_properties(test_fa_accuracy_detects_broken_kernel PROPERTIES PASS_REGULAR_EXPRESSION "MISMATCH backward")
