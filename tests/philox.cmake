# The dropout generator vs vectors from an independent Python implementation
# of spec 5.1 (no third-party package needed: plain python3).
add_test(NAME philox_vectors
         COMMAND ${ATTNOPS_VENV_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/philox_kat.py
                 ${CMAKE_CURRENT_BINARY_DIR}/philox_kat.txt)
set_tests_properties(philox_vectors PROPERTIES FIXTURES_SETUP philox_kat)
add_attnops_test(test_philox ${CMAKE_CURRENT_SOURCE_DIR}/test_philox.c ${CMAKE_CURRENT_BINARY_DIR}/philox_kat.txt)
set_tests_properties(test_philox PROPERTIES FIXTURES_REQUIRED philox_kat)
