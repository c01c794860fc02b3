# Bit-exact dtype conversions.  The fixture writes the golden tables (numpy +
# ml_dtypes from the project venv, made by scripts/setup.sh) into the build
# tree; test_dtype then checks every entry.
set(ATTNOPS_DTYPE_TABLES ${CMAKE_CURRENT_BINARY_DIR}/dtype_tables)
add_test(NAME dtype_tables
         COMMAND ${ATTNOPS_VENV_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/gen_dtype_tables.py
                 ${ATTNOPS_DTYPE_TABLES})
set_tests_properties(dtype_tables PROPERTIES FIXTURES_SETUP dtype_tables TIMEOUT 120)

add_attnops_test(test_dtype test_dtype.c ${ATTNOPS_DTYPE_TABLES})
set_tests_properties(test_dtype PROPERTIES FIXTURES_REQUIRED dtype_tables TIMEOUT 60)
