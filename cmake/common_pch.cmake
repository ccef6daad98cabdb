# Precompiled headers for the clang builds (scripts/test's ASan+UBSan, TSan and fuzz stages): the headers
# nearly every file includes, parsed once per target instead of once per file. nlohmann/json alone takes
# 3-4 s per file under clang-14 -O1 with sanitizers; with these the ASan stage builds in 502 s instead of
# 656 s on 2 cores, the fuzz targets in 140 s instead of 169 s. The gcc build (stage 1, and what users
# build) has none: it keeps every file compiling from its own includes, and gcc 12 reports libstdc++
# false positives (-Wstringop-overflow, -Warray-bounds, GCC bug 105329) once <string> comes precompiled.
set(HFS_COMMON_PCH <nlohmann/json.hpp> <algorithm> <cmath> <cstdint> <cstring> <functional> <map> <memory>
    <string> <string_view> <vector>)

# hfs_precompile(target header...): target_precompile_headers(target PRIVATE header...) under clang.
function(hfs_precompile target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
