# Cross-compiles hfstatic for 64-bit ARM Linux with clang-14 (--target=aarch64-linux-gnu), against the C++
# library, start files and libgcc of Debian's cross gcc (g++-aarch64-linux-gnu: clang finds them under
# /usr/lib/gcc-cross) and the arm64 multiarch -dev packages; it links with the cross binutils. Everything
# else (the library search path, the emulator) is aarch64-linux-gnu.cmake's. scripts/test's aarch64 stage
# builds with this one: clang-14 compiles these sources faster than gcc, and its builds use the precompiled
# headers (cmake/common_pch.cmake), so the stage fits in CI's time (docs/testing.md).
#
#   cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu-clang.cmake \
#         -DHFS_BUILD_CLI=OFF -DHFS_BUILD_PYTHON=OFF -DHFS_VULKAN=OFF
include(${CMAKE_CURRENT_LIST_DIR}/aarch64-linux-gnu.cmake)
set(CMAKE_C_COMPILER clang-14)
set(CMAKE_CXX_COMPILER clang++-14)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
