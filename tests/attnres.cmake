# Block Attention Residuals (spec B): the reference against B.1 and finite
# differences, the fast kernel against the reference over the stated range,
# the seed's two cases by the triple rule, thread-count and layout
# determinism, mutation proof, the row kernels of each ISA; the built-in
# attnres-seed suite is the seed's two cases.  It runs on all
# cores (OpenMP); PROCESSORS keeps ctest -j from sharing them, which makes
# OpenMP barriers spin against another test's threads.
add_attnops_test(attnres test_attnres.c ${PROJECT_SOURCE_DIR}/verify/suites/attnres_seed.json)
# The quick part again through the portable (non-AVX-512) row kernels.
add_test(NAME attnres_portable COMMAND attnres --quick)
set_tests_properties(attnres attnres_portable PROPERTIES PROCESSORS 2)
set_tests_properties(attnres_portable PROPERTIES ENVIRONMENT ATTNOPS_ISA=portable)
