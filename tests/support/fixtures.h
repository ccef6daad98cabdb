// tests/support/fixtures.h — the one place C++ tests and fuzz targets learn where the shared fixtures are
// (tests/fixtures.py is the Python twin). $HFS_SHARED_DIR is the shared fixtures folder; by default
// `shared` beside the repository root. A test that needs a missing fixture fails with how to provide it:
//
//   ASSERT_TRUE(hfs::test::fixture_exists(hfs::test::stories_dir())) << hfs::test::missing(hfs::test::stories_dir());
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

inline std::string missing(const std::string& path) {
  return "test fixture " + path + " is missing: set HFS_SHARED_DIR to the shared fixtures folder (default: ../shared "
         "beside the repository root, holding models/stories260K)";
}

// A fixture file's whole contents ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace hfs::test
