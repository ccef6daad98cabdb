// tests/support/require_cli.h — for the gtest cases that start the CLI (HFS_CLI_PATH, the command
// tests/CMakeLists.txt defines). A build configured with -DHFS_BUILD_CLI=OFF has no CLI and an empty
// HFS_CLI_PATH: the aarch64 stage of scripts/test builds so (the CLI is a fifth of its compile time), and
// these cases run in stage 1's build, which has the CLI. In a gtest body:
//
//   HFS_REQUIRE_CLI();
#pragma once

#include <gtest/gtest.h>

#ifndef HFS_CLI_PATH
#error "HFS_CLI_PATH (the command that starts the CLI, empty without it) must be defined by the build"
#endif

namespace hfs::test {

inline bool cli_built() { return HFS_CLI_PATH[0] != '\0'; }

inline const char* cli_missing() {
  return "this build has no CLI (configured with -DHFS_BUILD_CLI=OFF): the cases that start it run in a "
         "build with it (scripts/test stage 1)";
}

}  // namespace hfs::test

#define HFS_REQUIRE_CLI()                                                 \
  do {                                                                    \
    if (!::hfs::test::cli_built()) GTEST_SKIP() << ::hfs::test::cli_missing(); \
  } while (0)
