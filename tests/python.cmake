# The Python package, its tests and the bench's Python programs are the
# host's: a cross build (make test-arm64) leaves them to the native one.
if(CMAKE_CROSSCOMPILING)
  return()
endif()
# The Python package (python/attnops, pyproject.toml): installed into the
# project venv with pip, as a user installs it (scikit-build-core builds
# libattnops.so into the package; the build tree build/python makes
# reinstalls incremental), then its pytest suite runs against the installed
# copy.  The pytest run starts in the build tree so that `import attnops`
# finds the installed package, not the sources.
add_test(NAME python_install
         COMMAND ${ATTNOPS_VENV_PYTHON} -m pip install --quiet --no-build-isolation --no-deps
                 --disable-pip-version-check ${PROJECT_SOURCE_DIR})
set_tests_properties(python_install PROPERTIES FIXTURES_SETUP attnops_python RESOURCE_LOCK attnops_venv)
add_test(NAME python_pytest
         COMMAND ${ATTNOPS_VENV_PYTHON} -m pytest -q -p no:cacheprovider --rootdir ${PROJECT_SOURCE_DIR}/python
                 --ignore ${PROJECT_SOURCE_DIR}/python/tests/test_distributed.py ${PROJECT_SOURCE_DIR}/python/tests
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python_pytest PROPERTIES FIXTURES_REQUIRED attnops_python)
# attnops.distributed on 2 and 4 gloo processes over loopback: its own entry (it starts processes, ~2 min).
add_test(NAME python_distributed
         COMMAND ${ATTNOPS_VENV_PYTHON} -m pytest -q -p no:cacheprovider --rootdir ${PROJECT_SOURCE_DIR}/python
                 ${PROJECT_SOURCE_DIR}/python/tests/test_distributed.py
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python_distributed PROPERTIES FIXTURES_REQUIRED attnops_python RUN_SERIAL TRUE)
# The bench's merge and report step (bench/bench_report.py) on rounds its test writes.
add_test(NAME bench_report
         COMMAND ${ATTNOPS_VENV_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/bench/test_bench_report.py
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
# The package's code and tests and the bench's Python programs follow PEP 8
# (flake8, 120 columns); the seed's test is kept as the seed wrote it.
add_test(NAME python_lint
         COMMAND ${ATTNOPS_VENV_PYTHON} -m flake8 --max-line-length 120 --exclude ${PROJECT_SOURCE_DIR}/python/tests/seed
                 ${PROJECT_SOURCE_DIR}/python ${PROJECT_SOURCE_DIR}/bench
                 ${PROJECT_SOURCE_DIR}/tests/tools/cann_doc_samples.py)
