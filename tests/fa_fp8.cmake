# FP8 (spec 6) against a golden written independently in Python (numpy +
# ml_dtypes from the project venv): the quantisation helper bit for bit, the
# reference forward, and both backward implementations.
add_test(NAME fp8_golden
         COMMAND ${ATTNOPS_VENV_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/fp8_golden.py
                 ${CMAKE_CURRENT_BINARY_DIR}/fp8_golden)
set_tests_properties(fp8_golden PROPERTIES FIXTURES_SETUP fp8_golden)
add_attnops_test_per_isa(test_fa_fp8 ${CMAKE_CURRENT_SOURCE_DIR}/test_fa_fp8.c ${CMAKE_CURRENT_BINARY_DIR}/fp8_golden)
foreach(isa ${ATTNOPS_TEST_ISAS})
  set_tests_properties(test_fa_fp8_${isa} PROPERTIES FIXTURES_REQUIRED fp8_golden)
endforeach()
