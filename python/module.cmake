# The Python module `hfstatic` (pybind11). Included from the top-level CMakeLists.txt.
#
# Built against HFS_PYTHON (CMakeLists.txt: Debian's /usr/bin/python3 with numpy/torch/pytest from apt where
# present), not whatever python3 comes first on PATH. The extension and copies of hfstatic/__init__.py + __init__.pyi land in
# ${CMAKE_BINARY_DIR}/python/hfstatic/, so `PYTHONPATH=build/python /usr/bin/python3 -c "import hfstatic"` works.
if(NOT HFS_BUILD_PYTHON)
  return()
endif()

if(NOT DEFINED Python3_EXECUTABLE)
  set(Python3_EXECUTABLE ${HFS_PYTHON} CACHE FILEPATH "Python the hfstatic module is built for")
endif()
find_package(Python3 COMPONENTS Interpreter Development)
# pybind11's config picks FindPython's Python3 up when it was found first (its "new" FindPython mode).
find_package(pybind11 CONFIG)
if(NOT Python3_FOUND OR NOT pybind11_FOUND)
  message(WARNING "hfstatic: Python module disabled (need Python3 development files and pybind11; "
                  "apt: python3-dev pybind11-dev)")
  return()
endif()

set(HFS_PYTHON_DIR ${CMAKE_BINARY_DIR}/python/hfstatic)
file(GLOB HFS_PYTHON_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/src/*.cpp)
pybind11_add_module(hfstatic_python MODULE NO_EXTRAS ${HFS_PYTHON_SOURCES})
target_link_libraries(hfstatic_python PRIVATE hfstatic)
set_target_properties(hfstatic_python PROPERTIES
  OUTPUT_NAME _hfstatic
  LIBRARY_OUTPUT_DIRECTORY ${HFS_PYTHON_DIR})
target_compile_definitions(hfstatic_python PRIVATE HFS_VERSION="${PROJECT_VERSION}")

# NO_EXTRAS: no LTO/strip; the module is thin glue and LTO only slows the build.
# configure_file re-runs on edits, so the copies never go stale.
foreach(f __init__.py __init__.pyi py.typed)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/hfstatic/${f} ${HFS_PYTHON_DIR}/${f} COPYONLY)
endforeach()
