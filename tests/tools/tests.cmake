# Every tests/tools/test_*.py: the CLI end to end (subcommands, robustness against bad input, streamed text);
# test_serve.py, test_serve_nginx.py and test_serve_limits.py are their own ctests (tests/server/tests.cmake).
add_test(NAME cli_end_to_end
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve.py
                 --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve_nginx.py --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve_limits.py
                 ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(cli_end_to_end PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 900)
