# .npy reading and writing against numpy + ml_dtypes: Python writes every
# dtype in versions 1.0-3.0 and broken files; test_npy reads them and
# writes them back; Python loads what C wrote.
set(ATTNOPS_NPY_DIR ${CMAKE_CURRENT_BINARY_DIR}/npy_roundtrip)
add_test(NAME npy_files COMMAND ${ATTNOPS_VENV_PYTHON}
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/npy_roundtrip.py write ${ATTNOPS_NPY_DIR})
set_tests_properties(npy_files PROPERTIES FIXTURES_SETUP npy_files)
add_attnops_test(test_npy ${CMAKE_CURRENT_SOURCE_DIR}/test_npy.c ${ATTNOPS_NPY_DIR})
set_tests_properties(test_npy PROPERTIES FIXTURES_REQUIRED npy_files FIXTURES_SETUP npy_written)
add_test(NAME npy_read_back COMMAND ${ATTNOPS_VENV_PYTHON}
         ${CMAKE_CURRENT_SOURCE_DIR}/tools/npy_roundtrip.py check ${ATTNOPS_NPY_DIR})
set_tests_properties(npy_read_back PROPERTIES FIXTURES_REQUIRED npy_written)
