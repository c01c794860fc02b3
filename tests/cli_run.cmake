# `attnops run` / `attnops list`: exit codes, verdict lines, run_log.txt.
add_test(NAME cli_run COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_cli_run.sh $<TARGET_FILE:attnops_cli>)
