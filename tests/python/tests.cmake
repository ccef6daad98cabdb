# Python module tests (pytest with the interpreter the module was built for: HFS_PYTHON).
# Fixtures come from tests/fixtures.py ($HFS_SHARED_DIR, default ../shared beside the repository root).
if(TARGET hfstatic_python AND TARGET hfstatic_cli)
  add_test(NAME python_module
           COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(python_module PROPERTIES
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;HFS_CLI=$<TARGET_FILE:hfstatic_cli>"
    TIMEOUT 600 LABELS "e2e;slow;python")
endif()
