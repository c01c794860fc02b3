# Block Attention Residuals (spec B): the reference against B.1 and finite
# differences, the fast kernel against the reference over the stated range,
# the seed's two cases by the triple rule, thread-count and layout
# determinism, mutation proof, once per ISA (test_kernel_inventory checks the row kernels); the built-in
# attnres-seed suite is the seed's two cases.  It runs on all
# cores (OpenMP); PROCESSORS keeps ctest -j from sharing them, which makes
# OpenMP barriers spin against another test's threads.
# Once per ISA; the portable path runs the quick part (its row kernels are
# plain C loops, and the large cases add nothing the quick ones miss there).
add_executable(attnres test_attnres.c)
target_link_libraries(attnres PRIVATE attnops_test_support)
foreach(isa ${ATTNOPS_TEST_ISAS})
  if(isa STREQUAL "portable")
    add_attnops_isa_test(attnres ${isa} attnres --quick)
  else()
    add_attnops_isa_test(attnres ${isa} attnres ${PROJECT_SOURCE_DIR}/verify/suites/attnres_seed.json)
  endif()
  set_tests_properties(attnres_${isa} PROPERTIES PROCESSORS 2)
endforeach()
