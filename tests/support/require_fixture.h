// tests/support/require_fixture.h — HFS_REQUIRE_FIXTURE(path): the first line of a gtest body that needs a
// shared fixture (tests/support/fixtures.h). Missing, the test is skipped with one line saying what is
// missing and how to provide it; under CI=true it fails instead.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "support/fixtures.h"

#define HFS_REQUIRE_FIXTURE(path)                                                       \
  do {                                                                                  \
    const std::string hfs_fixture_path_ = (path);                                       \
    if (!::hfs::test::fixture_exists(hfs_fixture_path_)) {                              \
      if (::hfs::test::fixtures_required()) FAIL() << ::hfs::test::missing(hfs_fixture_path_); \
      GTEST_SKIP() << ::hfs::test::missing(hfs_fixture_path_);                          \
    }                                                                                   \
  } while (0)
