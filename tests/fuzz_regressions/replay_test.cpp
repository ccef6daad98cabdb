// Replays the fuzz regression inputs (tests/fuzz_regressions/<target>/*) through the same entry points the
// libFuzzer targets call (fuzz/targets/<target>.h), in the normal (gcc) test suite: every input that once
// crashed or broke a property must now give "" (clean success or a clean hfs::Error). Run the suite with
// -DHFS_SANITIZE=ON to replay them under ASan+UBSan as the fuzzer did.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../../fuzz/targets/chat_template.h"
#include "../../fuzz/targets/grammar.h"
#include "../../fuzz/targets/json.h"
#include "../../fuzz/targets/program.h"
#include "../../fuzz/targets/safetensors.h"
#include "../../fuzz/targets/tokenizer_codec.h"
#include "../../fuzz/targets/tokenizer_json.h"
#include "support/program_fixtures.h"
#include "support/require_fixture.h"

namespace {

namespace fs = std::filesystem;
using Entry = std::function<std::string(const uint8_t*, size_t)>;

std::string call(const Entry& entry, const std::string& bytes) {
  return entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// Every file of tests/fuzz_regressions/<target>/, sorted; returns how many were replayed.
size_t replay_dir(const std::string& target, const Entry& entry) {
  fs::path dir = fs::path(HFS_SOURCE_DIR) / "tests" / "fuzz_regressions" / target;
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename().string()[0] != '.') files.push_back(e.path());
  std::sort(files.begin(), files.end());
  // Every target keeps at least one regression input, so an emptied or mistyped folder fails here
  // instead of passing by replaying nothing.
  EXPECT_GE(files.size(), 1u) << dir << " holds no regression input for the " << target << " target";
  for (const fs::path& f : files) {
    std::string bytes;
    EXPECT_TRUE(hfs::fuzz::read_text_file(f.string(), &bytes)) << f;
    EXPECT_EQ(call(entry, bytes), "") << "reproducer " << f;
  }
  return files.size();
}

TEST(FuzzReplay, Program) {
  replay_dir("program", hfs::fuzz::fuzz_program);
  // The entry point's own checks pass on a valid program (so a property violation is not a false alarm).
  auto bytes = hfs::test::tiny_program_bytes();
  ASSERT_TRUE(bytes.ok());
  std::string s(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  EXPECT_EQ(call(hfs::fuzz::fuzz_program, s), "");
  ASSERT_TRUE(hfs::Program::from_bytes(*bytes).ok());
}

TEST(FuzzReplay, Json) {
  replay_dir("json", hfs::fuzz::fuzz_json);
  EXPECT_EQ(call(hfs::fuzz::fuzz_json, R"({"a":[1,2.5,"x",null,true],"b":{"c":-3}})"), "");
}

TEST(FuzzReplay, Safetensors) {
  replay_dir("safetensors", hfs::fuzz::fuzz_safetensors);
  std::string header = R"({"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}})";
  std::string file(8, '\0');
  file[0] = static_cast<char>(header.size());
  EXPECT_EQ(call(hfs::fuzz::fuzz_safetensors, file + header + std::string(12, '\0')), "");
}

TEST(FuzzReplay, TokenizerJson) { replay_dir("tokenizer_json", hfs::fuzz::fuzz_tokenizer_json); }

TEST(FuzzReplay, TokenizerCodec) {
  HFS_REQUIRE_FIXTURE(hfs::test::stories_dir() + "/tokenizer.json");
  replay_dir("tokenizer_codec", hfs::fuzz::fuzz_tokenizer_codec);
  EXPECT_EQ(call(hfs::fuzz::fuzz_tokenizer_codec, std::string("\0Once upon a time", 17)), "");
}

TEST(FuzzReplay, ChatTemplate) {
  replay_dir("chat_template", hfs::fuzz::fuzz_chat_template);
  EXPECT_EQ(call(hfs::fuzz::fuzz_chat_template, "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"), "");
}

TEST(FuzzReplay, Grammar) {
  replay_dir("grammar", hfs::fuzz::fuzz_grammar);
  EXPECT_EQ(call(hfs::fuzz::fuzz_grammar, std::string("root ::= [a-c]+ \"x\"\n\x01" "abcx")), "");
}

}  // namespace
