# Reference parity (Python: HFS_PYTHON, Debian's /usr/bin/python3 with torch): one CTest entry per test group so
# they run in parallel under ctest -j.
foreach(group arch_parity sliding_window f16_cache stories260k_greedy default_model_greedy quantized)
  add_test(NAME parity.${group}
           COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/export/test_parity.py -k ${group})
  set_tests_properties(parity.${group} PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 900
                       LABELS "parity;slow;python")
endforeach()
