# Hub layer: Debian's libcurl (libcurl4-openssl-dev, scripts/install-deps installs it) for HTTPS.
find_package(CURL REQUIRED)
target_link_libraries(hfs_hub PRIVATE CURL::libcurl)  # headers
target_link_libraries(hfstatic PRIVATE CURL::libcurl)  # the link
