# `cmake --install <build> [--prefix P]` installs:
#   <libdir>/libhfstatic.so, <includedir>/hfstatic/*.h and hfstatic/ext/*.h, <bindir>/hfstatic (the CLI),
#   <libdir>/cmake/hfstatic/ (find_package(hfstatic) gives the imported target hfstatic::hfstatic),
#   <libdir>/pkgconfig/hfstatic.pc, and the Python module under HFS_PYTHON_INSTALL_DIR when it is built.
# Every path inside the installed tree is relative (RPATHs from $ORIGIN, the package config from its own
# location, the .pc file from ${pcfiledir}), so `--prefix` at install time and moving the tree both work.
# Included from the top-level CMakeLists.txt after the targets are defined; scripts/check-install tests it.
include(CMakePackageConfigHelpers)

set(HFS_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hfstatic)
set(HFS_PYTHON_INSTALL_DIR lib/python3/dist-packages CACHE STRING
    "Where `cmake --install` puts the Python package hfstatic/ (relative to the prefix, or absolute); the \
default is Debian's directory for /usr")

# hfs_install_rpath(target dir): the installed `target`, in `dir` (relative to the prefix or absolute),
# finds the installed libhfstatic.so through an $ORIGIN-relative RPATH.
function(hfs_install_rpath target dir)
  if(IS_ABSOLUTE "${dir}")
    set(from "${dir}")
  else()
    set(from "${CMAKE_INSTALL_PREFIX}/${dir}")
  endif()
  file(RELATIVE_PATH rel "${from}" "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/${rel}")
endfunction()

install(TARGETS hfstatic EXPORT hfstaticTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/hfstatic DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
if(TARGET hfstatic_cli)
  install(TARGETS hfstatic_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  hfs_install_rpath(hfstatic_cli ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT hfstaticTargets NAMESPACE hfstatic:: DESTINATION ${HFS_CMAKE_INSTALL_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hfstaticConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/hfstaticConfig.cmake
                              INSTALL_DESTINATION ${HFS_CMAKE_INSTALL_DIR})
# 0.x: a new minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/hfstaticConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/hfstaticConfig.cmake ${CMAKE_BINARY_DIR}/hfstaticConfigVersion.cmake
        DESTINATION ${HFS_CMAKE_INSTALL_DIR})

# The .pc file finds the prefix from its own directory (${pcfiledir}), as the CMake package does.
file(RELATIVE_PATH HFS_PC_TO_PREFIX "/hfs_prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/hfs_prefix")
string(REGEX REPLACE "/$" "" HFS_PC_TO_PREFIX "${HFS_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/hfstatic.pc.in ${CMAKE_BINARY_DIR}/hfstatic.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/hfstatic.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET hfstatic_python)
  install(TARGETS hfstatic_python LIBRARY DESTINATION ${HFS_PYTHON_INSTALL_DIR}/hfstatic)
  hfs_install_rpath(hfstatic_python ${HFS_PYTHON_INSTALL_DIR}/hfstatic)
  install(FILES ${CMAKE_SOURCE_DIR}/python/hfstatic/__init__.py ${CMAKE_SOURCE_DIR}/python/hfstatic/__init__.pyi
                ${CMAKE_SOURCE_DIR}/python/hfstatic/py.typed
          DESTINATION ${HFS_PYTHON_INSTALL_DIR}/hfstatic)
endif()
