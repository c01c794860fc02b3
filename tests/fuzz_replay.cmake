# The fuzz targets' committed corpora (fuzz/corpus/<target>/, the crashes
# fuzzing found among them) replayed through the targets without libFuzzer:
# each input must pass the target's checks (docs/RELIABILITY.md, "Fuzzing").
foreach(target fuzz_case_json fuzz_npy fuzz_manifest fuzz_compare fuzz_fa_args fuzz_kp_args fuzz_ar_args
               fuzz_fia_args)
  add_executable(replay_${target} ${PROJECT_SOURCE_DIR}/fuzz/${target}.c ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
  target_link_libraries(replay_${target} PRIVATE attnops_verify ${ATTNOPS_CJSON_LIB})
  add_test(NAME fuzz_replay_${target} COMMAND replay_${target} ${PROJECT_SOURCE_DIR}/fuzz/corpus/${target})
  set_tests_properties(fuzz_replay_${target} PROPERTIES ENVIRONMENT OMP_NUM_THREADS=1)
endforeach()
