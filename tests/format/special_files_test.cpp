// Paths that are not regular files: loading never blocks on them and says what they are; writing a
// program never replaces one, and replaces (never writes through) a symbolic link.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "core/regular_file.h"
#include "hfstatic/program.h"
#include "hfstatic/ext/program_writer.h"
#include "hfstatic/tokenizer.h"
#include "support/program_fixtures.h"

namespace hfs {
namespace {

// Runs `load` with a deadline. A FIFO open that blocks (the bug) is released by opening the FIFO for
// writing, so a regression fails the test instead of hanging it.
template <typename F>
auto with_deadline(const std::string& fifo, F load) {
  auto fut = std::async(std::launch::async, load);
  if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "loading " << fifo << " blocked";
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  return fut.get();
}

struct TempDir {
  std::string path = test::temp_path("special");
  TempDir() { EXPECT_EQ(::mkdir(path.c_str(), 0755), 0); }
  ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

TEST(SpecialFiles, ProgramLoadRefusesFifoDirectoryAndDeviceWithoutBlocking) {
  TempDir d;
  const std::string fifo = d / "prog.hfs";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  auto r = with_deadline(fifo, [&] { return Program::load(fifo); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIo);
  EXPECT_NE(r.error().message().find(fifo + ": not a regular file (a FIFO)"), std::string::npos) << r.error().message();

  auto dir = Program::load(d.path);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message().find("not a regular file (a directory)"), std::string::npos) << dir.error().message();

  auto dev = Program::load("/dev/zero");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.error().message().find("not a regular file (a character device)"), std::string::npos)
      << dev.error().message();

  auto missing = Program::load(d / "none.hfs");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(SpecialFiles, TokenizerDirWithFifoFilesIsAnErrorNotAHang) {
  TempDir d;
  const std::string fifo = d / "tokenizer.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  auto r = with_deadline(fifo, [&] { return Tokenizer::from_dir(d.path); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not a regular file (a FIFO)"), std::string::npos) << r.error().message();
}

TEST(SpecialFiles, ReadRegularFileReadsAllAndNamesWhatItRefuses) {
  TempDir d;
  const std::string f = d / "a.txt";
  ASSERT_TRUE(test::write_file_bytes(f, {std::byte{'h'}, std::byte{'i'}}).ok());
  auto text = io::read_regular_file(f);
  ASSERT_TRUE(text.ok()) << text.error().to_string();
  EXPECT_EQ(*text, "hi");
  auto empty_path = io::read_regular_file("");
  ASSERT_FALSE(empty_path.ok());
  EXPECT_EQ(empty_path.error().code(), ErrorCode::kInvalidArgument);
  auto dev = io::read_regular_file("/dev/null");
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().message(), "/dev/null: not a regular file (a character device)");
}

// A device node to write at. A writer that renames over its output (the bug tested for) must not get the
// real /dev/null where it could replace it (as root): a private node where mknod is allowed, else
// /dev/null only when /dev is not writable, else none ("").
std::string own_null(const TempDir& d) {
  const std::string node = d / "null";
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) return node;
  return ::access("/dev", W_OK) == 0 ? "" : "/dev/null";
}

TEST(SpecialFiles, WriterRefusesDirectoryFifoDeviceAndEmptyPathLeavingThemAlone) {
  TempDir d;
  ProgramWriter w;
  ASSERT_TRUE(test::build_tiny_program(w).ok());
  const std::string fifo = d / "out.hfs";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string dev = own_null(d);
  std::vector<std::string> bad_paths = {d.path, fifo};
  if (!dev.empty()) bad_paths.push_back(dev);
  for (const std::string& bad : bad_paths) {
    Status st = w.write(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(st.error().message().find(bad + ": not a regular file"), std::string::npos) << st.error().message();
  }
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  if (!dev.empty()) {
    ASSERT_EQ(::lstat(dev.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  Status empty = w.write("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("output path is empty"), std::string::npos);
  Status slash = ProgramWriter::check_destination(d / "sub/");
  ASSERT_FALSE(slash.ok());
  EXPECT_NE(slash.error().message().find("names a directory"), std::string::npos);
  // Nothing was created next to the refused paths (no temp file either).
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(d.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, dev == d / "null" ? (std::vector<std::string>{"null", "out.hfs"}) : (std::vector<std::string>{"out.hfs"}));
}

TEST(SpecialFiles, WriterReplacesASymlinkAndNeverWritesThroughIt) {
  TempDir d;
  const std::string target = d / "target.bin", link = d / "link.hfs";
  ASSERT_TRUE(test::write_file_bytes(target, {std::byte{'x'}}).ok());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ProgramWriter w;
  ASSERT_TRUE(test::build_tiny_program(w).ok());
  ASSERT_TRUE(w.write(link).ok());
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));  // the link itself is now the program
  auto target_bytes = test::read_file_bytes(target);
  ASSERT_TRUE(target_bytes.ok());
  EXPECT_EQ(target_bytes->size(), 1u);  // the link's target is untouched
  EXPECT_TRUE(Program::load(link).ok());
}

}  // namespace
}  // namespace hfs
