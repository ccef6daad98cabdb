# The server (`hfstatic serve`): its own static library on the public API, linked into the CLI and the
# unit tests. HTTP/1.1 is its own small layer (server/http_server.h): every limit a client could push on
# is one it enforces, which the library it replaced could not be made to.

# The chat page (src/server/web/index.html) compiled in: one generated header, no build step, no CDN.
set(HFS_WEB_PAGE ${CMAKE_SOURCE_DIR}/src/server/web/index.html)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${HFS_WEB_PAGE})
file(READ ${HFS_WEB_PAGE} HFS_WEB_PAGE_TEXT)
string(FIND "${HFS_WEB_PAGE_TEXT}" ")hfs_page\"" HFS_WEB_PAGE_CLASH)
if(NOT HFS_WEB_PAGE_CLASH EQUAL -1)
  message(FATAL_ERROR "${HFS_WEB_PAGE} contains the raw-string delimiter )hfs_page\"")
endif()
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/server/web_page.h
     CONTENT "// Generated from src/server/web/index.html by src/server/deps.cmake: edit that file.\n#pragma once\n#include <string_view>\nnamespace hfs::server {\ninline constexpr std::string_view kWebPage = R\"hfs_page(@HFS_WEB_PAGE_TEXT@)hfs_page\";\n}  // namespace hfs::server\n"
     @ONLY)

file(GLOB HFS_SERVER_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/server/*.cpp)
add_library(hfs_server STATIC ${HFS_SERVER_SOURCES})
# It uses src/ beyond the exported API (core/json_depth.h, constrain/compiled_grammar.h), so it sees the
# headers of the layers its row of cmake/layers.cmake allows, and whatever links it links the layers'
# objects too (hfs_layer_objects or hfstatic_internal), not libhfstatic.
target_include_directories(hfs_server PUBLIC ${CMAKE_BINARY_DIR}/generated)
hfs_use_layer_view(hfs_server server)
set_target_properties(hfs_server PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_link_libraries(hfs_server PUBLIC nlohmann_json::nlohmann_json Threads::Threads)
