# Python module tests (pytest with the interpreter the module was built for: Debian's /usr/bin/python3).
# HFS_STORIES_DIR (cache variable) points at the shared stories260K checkpoint; absent → those tests skip.
set(HFS_STORIES_DIR ${CMAKE_SOURCE_DIR}/../shared/models/stories260K CACHE PATH
    "stories260K checkpoint for the Python module tests (the shared fixture next to the repo)")
if(TARGET hfstatic_python)
  add_test(NAME python_module
           COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(python_module PROPERTIES
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;HFS_CLI=$<TARGET_FILE:hfstatic_cli>;HFS_STORIES_DIR=${HFS_STORIES_DIR}"
    TIMEOUT 600)
endif()
