# `attnops run` / `attnops list`: exit codes, verdict lines, run_log.txt.
add_test(NAME cli_run COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_cli_run.sh $<TARGET_FILE:attnops_cli>)
# Its attnres-seed run's chains use OpenMP on all cores (see attnres.cmake).
set_tests_properties(cli_run PROPERTIES PROCESSORS 2)
# The built-in fag-matrix suite (222 cases) passes, and is its generator's output.
add_test(NAME suite_fag_matrix COMMAND $<TARGET_FILE:attnops_cli> run fag-matrix --log -)
add_test(NAME suite_fag_matrix_generated COMMAND ${PROJECT_SOURCE_DIR}/.venv/bin/python
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_fag_matrix_json.py ${PROJECT_SOURCE_DIR}/verify/suites)
