# Reference parity (Python: HFS_PYTHON, Debian's /usr/bin/python3 with torch): one CTest entry per test group so
# they run in parallel under ctest -j. The CPU groups leave out the Vulkan tests (test_vulkan_*), which are
# their own entry, built with the backend and run with the Khronos validation layer on.
if(NOT TARGET hfstatic_cli)  # -DHFS_BUILD_CLI=OFF: nothing here to drive
  return()
endif()
foreach(group arch_parity sliding_window f16_cache stories260k_greedy default_model_greedy quantized moe)
  add_test(NAME parity.${group}
           COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/export/test_parity.py
                   -k "${group} and not vulkan")
  set_tests_properties(parity.${group} PROPERTIES ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>" TIMEOUT 900
                       LABELS "parity;slow;python")
endforeach()
if(HFS_VULKAN_ENABLED)
  add_test(NAME parity.vulkan
           COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/tests/export/test_parity.py
                   -k vulkan)
  set_tests_properties(parity.vulkan PROPERTIES
                       ENVIRONMENT "HFS_CLI=$<TARGET_FILE:hfstatic_cli>;HFS_VULKAN_VALIDATION=1" TIMEOUT 900
                       LABELS "parity;vulkan;python;slow")
endif()
