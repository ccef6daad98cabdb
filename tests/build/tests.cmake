# The layer boundaries are enforced by the build (cmake/layers.cmake): every edge of the table checked on
# the configured views.
add_test(NAME build_layering
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/layering_test.sh ${CMAKE_CXX_COMPILER} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                 ${HFS_VULKAN_ENABLED})
set_tests_properties(build_layering PROPERTIES LABELS "unit;build")
# The shared library exports only its API: every dynamic symbol in namespace hfs, none in a namespace only
# src/ declares (cmake/exports.map, -fvisibility=hidden, HFS_API). Checked on the library users get; the
# sanitizer builds' instrumentation adds symbols of its own.
if(NOT HFS_SANITIZE AND NOT HFS_TSAN)
  add_test(NAME build_exported_symbols
           COMMAND ${HFS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/exported_symbols_test.py $<TARGET_FILE:hfstatic>
                   ${CMAKE_SOURCE_DIR})
  set_tests_properties(build_exported_symbols PROPERTIES LABELS "unit;build")
endif()
