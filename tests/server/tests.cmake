# The server's pure parts (stop strings, request validation, metrics text, prompt cache bookkeeping) are
# unit tests in hfstatic_tests (tests/server/*_test.cpp, linked against hfs_server); the live server with
# real clients is tests/tools/test_serve.py, registered here on its own so ctest can run it beside the rest.
target_link_libraries(hfstatic_tests PRIVATE hfs_server)
if(NOT TARGET hfstatic_cli)  # -DHFS_BUILD_CLI=OFF: nothing here to drive
  return()
endif()
add_test(NAME serve_end_to_end
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/tools/test_serve.py)
set_tests_properties(serve_end_to_end PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 600)
# Scale-out: two replicas behind Debian's nginx (docs/nginx.conf.example), one killed under load.
add_test(NAME serve_nginx
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/tools/test_serve_nginx.py)
set_tests_properties(serve_nginx PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 300)
# The server against hostile and unlucky clients (docs/server.md, Limits); HFS_CLI may name a sanitizer build.
add_test(NAME serve_limits
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/tools/test_serve_limits.py)
set_tests_properties(serve_limits PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 300)
# What real clients send (constraint fields of other servers, logprobs, n > 1) through the npm openai client.
add_test(NAME serve_api
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/tools/test_serve_api.py)
set_tests_properties(serve_api PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 300)
# Tool calling with the real chat templates of the three call formats (Hermes, Llama 3, Mistral).
add_test(NAME serve_tools
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/tools/test_serve_tools.py)
set_tests_properties(serve_tools PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 300)
