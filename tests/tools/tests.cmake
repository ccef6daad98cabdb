# Every tests/tools/test_*.py: the CLI end to end (subcommands, robustness against bad input, streamed text);
# test_serve.py, test_serve_nginx.py, test_serve_limits.py, test_serve_api.py and test_serve_tools.py are
# their own ctests (tests/server/tests.cmake).
if(NOT TARGET hfstatic_cli)  # -DHFS_BUILD_CLI=OFF: nothing here to drive
  return()
endif()
add_test(NAME cli_end_to_end
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve.py
                 --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve_nginx.py --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve_limits.py
                 --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve_api.py --ignore=${CMAKE_CURRENT_LIST_DIR}/test_serve_tools.py
                 ${CMAKE_CURRENT_LIST_DIR})
set_tests_properties(cli_end_to_end PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 900)

# docs/cli.md is generated from the CLI's --help (scripts/gen-cli-doc): a changed option without a
# regenerated page fails here, so the reference never drifts from the program.
add_test(NAME cli_reference_doc
         COMMAND ${HFS_PYTHON} ${CMAKE_SOURCE_DIR}/scripts/gen-cli-doc $<TARGET_FILE:hfstatic_cli> --check)
set_tests_properties(cli_reference_doc PROPERTIES LABELS "unit;e2e" TIMEOUT 60)
