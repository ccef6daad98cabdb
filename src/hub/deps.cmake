# Hub layer: Debian's libcurl (libcurl4-openssl-dev) for HTTPS and OpenSSL's libcrypto (libssl-dev, which
# that libcurl already loads) for SHA-256; scripts/install-deps installs both.
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
target_link_libraries(hfs_hub PRIVATE CURL::libcurl OpenSSL::Crypto)  # headers
target_link_libraries(hfs_layer_deps INTERFACE CURL::libcurl OpenSSL::Crypto)  # the link
