# attnops run --report: a self-contained HTML page that renders in headless Chromium.
add_test(NAME cli_report COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_report.sh ${ATTNOPS_BROKEN_CLI})
set_tests_properties(cli_report PROPERTIES TIMEOUT 300)
