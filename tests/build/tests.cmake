# The layer boundaries are enforced by the build (cmake/layers.cmake): every edge of the table checked on
# the configured views.
add_test(NAME build_layering
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/layering_test.sh ${CMAKE_CXX_COMPILER} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                 ${HFS_VULKAN_ENABLED})
set_tests_properties(build_layering PROPERTIES LABELS "unit;build")
