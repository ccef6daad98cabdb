# Python reference suite: the PyTorch reference (hf_reference.py), safetensors_np and scripts/make-checkpoint.
# Needs HFS_PYTHON (CMakeLists.txt) with torch, numpy and pytest (the apt packages).
add_test(NAME python_reference
         COMMAND ${HFS_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(python_reference PROPERTIES TIMEOUT 300)
