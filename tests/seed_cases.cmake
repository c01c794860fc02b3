# The seed's six FAG cases, read from the built-in suite file (the seed's
# field names), fast kernel vs reference by both criteria.
add_attnops_test(test_seed_cases ${CMAKE_CURRENT_SOURCE_DIR}/test_seed_cases.c ${PROJECT_SOURCE_DIR}/verify/suites/fag_seed.json)
