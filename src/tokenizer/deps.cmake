# Tokenizer layer: PCRE2 (Unicode regexes, JIT) and ICU (NFC/NFKC, lowercasing).
find_package(PkgConfig REQUIRED)
pkg_check_modules(HFS_PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(HFS_ICU REQUIRED IMPORTED_TARGET icu-uc)
target_link_libraries(hfs_tokenizer PRIVATE PkgConfig::HFS_PCRE2 PkgConfig::HFS_ICU)  # headers
target_link_libraries(hfs_layer_deps INTERFACE PkgConfig::HFS_PCRE2 PkgConfig::HFS_ICU)  # the link
