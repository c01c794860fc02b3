# attnops golden / compare as a device developer uses them (numpy + ml_dtypes).
add_test(NAME cli_golden_compare COMMAND ${ATTNOPS_VENV_PYTHON}
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_golden_compare.py ${ATTNOPS_CLI})
# The same for KeyPool: keypool-seed's export against a numpy KeyPool, the
# seed's rule in compare (valid rows of pooled_key only, the whole cache).
add_test(NAME cli_golden_compare_keypool COMMAND ${ATTNOPS_VENV_PYTHON}
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_keypool_golden.py ${ATTNOPS_CLI})
# And for AttnRes: attnres-seed's second case against a numpy AttnRes, the
# triple rule in compare with the export's benchmark chain (or --bench); its
# chains run OpenMP on all cores (see attnres.cmake).
add_test(NAME cli_golden_compare_attnres COMMAND ${ATTNOPS_VENV_PYTHON}
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_attnres_golden.py ${ATTNOPS_CLI})
set_tests_properties(cli_golden_compare_attnres PROPERTIES PROCESSORS 2)
# And for FusedInferAttentionScore: the fia suite's export against
# the tests' float64 oracle (python/tests/fia_oracle.py), compare's verdicts.
add_test(NAME cli_golden_compare_fia COMMAND ${ATTNOPS_VENV_PYTHON}
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_fia_golden.py ${ATTNOPS_CLI})
