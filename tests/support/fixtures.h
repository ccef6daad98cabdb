// tests/support/fixtures.h — the one place C++ tests and fuzz targets learn where the shared fixtures are
// (tests/fixtures.py is the Python twin). $HFS_SHARED_DIR is the shared fixtures folder; by default
// `shared` beside the repository root. A test that needs a missing fixture skips with one line saying what
// is missing and how to provide it; under CI=true (scripts/test in CI) it fails instead, so CI never passes
// by skipping. In a gtest body (tests/support/require_fixture.h):
//
//   HFS_REQUIRE_FIXTURE(hfs::test::stories_dir() + "/config.json");
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#ifndef HFS_SOURCE_DIR
#error "HFS_SOURCE_DIR (the repository root) must be defined by the build"
#endif

namespace hfs::test {

inline std::string shared_dir() {
  const char* env = std::getenv("HFS_SHARED_DIR");
  if (env && *env) return env;
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::path(HFS_SOURCE_DIR) / ".." / "shared", ec);
  return ec ? std::string(HFS_SOURCE_DIR) + "/../shared" : p.string();
}

inline std::string stories_dir() { return shared_dir() + "/models/stories260K"; }

inline bool fixture_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// True when a missing fixture is a failure, not a skip: CI=true (as CI services set it).
inline bool fixtures_required() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

inline std::string missing(const std::string& path) {
  return "test fixture " + path + " is missing: set HFS_SHARED_DIR to a folder holding models/stories260K "
         "(karpathy/tinyllamas' stories260K in HF layout; default: ../shared beside the repository root)";
}

// A fixture file's whole contents ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace hfs::test
