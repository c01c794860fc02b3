# Scale (docs/RELIABILITY.md "Scale"): T = 2^20 TND, a 131,072-long causal
# sequence and a mask of more than 2^31 elements, forward and backward.
# Minutes and ~2 GB (2.1 GB peak RSS measured): label "large", run by `make test-large`, left out of
# `make test` and `make test-sanitize`.
add_attnops_test(test_large ${CMAKE_CURRENT_SOURCE_DIR}/test_large.c)
set_tests_properties(test_large PROPERTIES LABELS large TIMEOUT 3600)
