# `attnops run` / `attnops list`: exit codes, verdict lines, run_log.txt.
# Once per ISA; its attnres-seed run's chains use OpenMP on all cores (see attnres.cmake).
foreach(isa ${ATTNOPS_TEST_ISAS})
  add_attnops_isa_test(cli_run ${isa} bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_cli_run.sh ${ATTNOPS_CLI}
                       ${ATTNOPS_BROKEN_CLI})
  set_tests_properties(cli_run_${isa} PROPERTIES PROCESSORS 2)
  # bench_fa is built with libxsmm only: without it `attnops bench` must say so
  set_property(TEST cli_run_${isa} APPEND PROPERTY ENVIRONMENT ATTNOPS_BENCH_BUILT=${ATTNOPS_HAVE_LIBXSMM})
endforeach()
# The built-in fag-matrix suite (222 cases) passes, and is its generator's output.
# In auto_grad mode: the kernel chain runs the fast forward, whose outputs are
# judged too, and its backward consumes them (the only_grad backward, on the
# golden forward, is judged by cli_run's fag-seed runs and test_fa_accuracy).
add_test(NAME suite_fag_matrix COMMAND attnops_cli run fag-matrix --mode auto_grad --log -)
add_test(NAME suite_fag_matrix_generated COMMAND ${ATTNOPS_VENV_PYTHON}
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_fag_matrix_json.py ${PROJECT_SOURCE_DIR}/verify/suites)
# The usage text docs/HARNESS.md quotes is what the program prints.
add_test(NAME cli_usage_doc COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_usage_doc.sh ${ATTNOPS_CLI}
         ${PROJECT_SOURCE_DIR}/docs/HARNESS.md)
# The built-in FusedInferAttentionScore suite: the fast kernel against the golden.
add_test(NAME suite_fia COMMAND attnops_cli run fia --log -)
