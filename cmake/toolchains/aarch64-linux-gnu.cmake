# Cross-compiles hfstatic for 64-bit ARM Linux with Debian's cross compiler (g++-aarch64-linux-gnu) against
# Debian's arm64 multiarch -dev packages (scripts/install-deps --arm), and runs what it builds under
# qemu-user, so `ctest` (and gtest_discover_tests at build time) work from the x86-64 build machine:
#
#   cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DHFS_BUILD_PYTHON=OFF -DHFS_VULKAN=OFF
#   cmake --build build-arm --target hfstatic_tests && ctest --test-dir build-arm -L unit
#
# scripts/test --arm is this, with the flags and test selection CI uses (docs/testing.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: arm64 libraries live in /usr/lib/aarch64-linux-gnu beside the host's, headers in /usr/include
# (the cross compiler already searches /usr/include/aarch64-linux-gnu first). Searching the host's
# prefix with this library architecture finds the arm64 libraries and package configs and never the
# x86-64 ones.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# Programs built here (the test binary, the CLI the tests start) run under qemu's user-mode emulator with
# the arm64 loader and libraries of the multiarch tree (libc6:arm64 puts /lib/ld-linux-aarch64.so.1 where
# the binaries ask for it). Not `-L /usr/aarch64-linux-gnu`, the cross compiler's own copy of libc: with
# it, qemu 7.2 hangs in a program's first pthread_create.
find_program(HFS_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${HFS_QEMU_AARCH64})
