// The tokenizer files a program embeds, read back through Program::embedded_file, and the BOS/EOS texts
// a chat template gets (Tokenizer::bos_token / eos_token) — compared with the checkpoint's own files.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "hfstatic/program.h"
#include "hfstatic/tokenizer.h"
#include "support/fixtures.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

TEST(EmbeddedFiles, ProgramCarriesTheCheckpointsTokenizerFilesAndTheirSpecialTokens) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  ASSERT_TRUE(test::fixture_exists(test::stories_dir())) << test::missing(test::stories_dir());
  test::TinyModel m;
  m.tokenizer = true;  // the stories260K tokenizer files, embedded by the exporter
  auto program = Program::load(test::tiny_program(m));
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  const std::string config = test::read_text(test::stories_dir() + "/tokenizer_config.json");
  EXPECT_EQ((*program)->embedded_file("tokenizer_config.json"), config);
  EXPECT_EQ((*program)->embedded_file("no_such_file.json"), "");

  auto tok = Tokenizer::from_program(**program);
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  const auto cfg = nlohmann::json::parse(config);
  EXPECT_EQ((*tok)->bos_token(), cfg.at("bos_token").get<std::string>());
  EXPECT_EQ((*tok)->eos_token(), cfg.at("eos_token").get<std::string>());
}

TEST(EmbeddedFiles, NoSpecialTokensGiveEmptyTexts) {
  const std::string tj = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}})";
  auto tok = Tokenizer::from_json(tj, "{}");
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  EXPECT_EQ((*tok)->bos_token(), "");
  EXPECT_EQ((*tok)->eos_token(), "");
}

}  // namespace
}  // namespace hfs
