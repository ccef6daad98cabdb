// Tokenizer unit tests on small hand-written tokenizer.json files, with expectations worked out by hand
// from the HF / transformers.js semantics (the real-tokenizer parity runs are tests/tokenizer/tests.cmake).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hfstatic/tokenizer.h"
#include "tokenizer/components.h"
#include "tokenizer/regex.h"
#include "core/utf8.h"
#include "support/fixtures.h"
#include "support/require_cli.h"
#include "support/require_fixture.h"

namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

json base_tokenizer() {
  return json{{"version", "1.0"},
              {"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer", nullptr},
              {"post_processor", nullptr},
              {"decoder", nullptr},
              {"model",
               {{"type", "BPE"},
                {"unk_token", nullptr},
                {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}, {"aa", 5}, {" ", 6}}},
                {"merges", {"a b", "ab c", "a a"}}}}};
}

std::shared_ptr<const hfs::Tokenizer> load(const json& j, const json& cfg = json::object()) {
  auto t = hfs::Tokenizer::from_json(j.dump(), cfg.dump());
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().to_string());
  return t.ok() ? *t : nullptr;
}

Ids enc(const hfs::Tokenizer& t, const std::string& s, bool special = true) {
  auto r = t.encode(s, special);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? *r : Ids{};
}

TEST(TokenizerBpe, MergesLowestRankFirstLeftmostOnTies) {
  auto t = load(base_tokenizer());
  ASSERT_TRUE(t);
  EXPECT_EQ(enc(*t, "abc"), (Ids{4}));     // a b → ab, ab c → abc
  EXPECT_EQ(enc(*t, "abca"), (Ids{4, 0}));
  EXPECT_EQ(enc(*t, "aaa"), (Ids{5, 0}));  // leftmost "a a" first
  EXPECT_EQ(enc(*t, "cab"), (Ids{2, 3}));
}

TEST(TokenizerBpe, PairMergeEncodingMatchesStringEncoding) {
  json j = base_tokenizer();
  j["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"ab", "c"}), json::array({"a", "a"})});
  auto t = load(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(enc(*t, "abcaaa"), (Ids{4, 5, 0}));
}

TEST(TokenizerBpe, ByteFallbackAndFusedUnk) {
  json j = base_tokenizer();
  j["model"]["byte_fallback"] = true;
  j["model"]["vocab"]["<0xC3>"] = 10;
  j["model"]["vocab"]["<0xA9>"] = 11;
  j["model"]["vocab"]["<unk>"] = 12;
  j["model"]["unk_token"] = "<unk>";
  j["model"]["fuse_unk"] = true;
  auto t = load(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(enc(*t, "a\xC3\xA9"), (Ids{0, 10, 11}));  // é = C3 A9
  // ü = C3 BC: <0xBC> is missing → unk; two such characters in a row fuse into one unk.
  EXPECT_EQ(enc(*t, "\xC3\xBC\xC3\xBC" "b"), (Ids{12, 1}));
}

TEST(TokenizerBpe, IgnoreMergesTakesWholeWordFromVocab) {
  json j = base_tokenizer();
  j["model"]["vocab"]["ba"] = 20;
  j["model"]["merges"] = {"a b"};
  auto t = load(j);
  EXPECT_EQ(enc(*t, "ba"), (Ids{1, 0}));  // no merge "b a"
  j["model"]["ignore_merges"] = true;
  t = load(j);
  EXPECT_EQ(enc(*t, "ba"), (Ids{20}));
}

TEST(TokenizerBpe, EndOfWordSuffixAndSubwordPrefix) {
  json j = base_tokenizer();
  j["model"]["vocab"] = {{"a", 0}, {"b</w>", 1}, {"ab</w>", 2}, {"##b", 3}};
  j["model"]["merges"] = {"a b</w>"};
  j["model"]["end_of_word_suffix"] = "</w>";
  auto t = load(j);
  EXPECT_EQ(enc(*t, "ab"), (Ids{2}));
  json k = base_tokenizer();
  k["model"]["vocab"] = {{"a", 0}, {"##b", 1}, {"a##b", 2}};
  k["model"]["merges"] = {"a ##b"};
  k["model"]["continuing_subword_prefix"] = "##";
  t = load(k);
  EXPECT_EQ(enc(*t, "ab"), (Ids{2}));
}

TEST(TokenizerLoad, UnsupportedModelNamesIt) {
  json j = base_tokenizer();
  j["model"]["type"] = "WordPiece";
  auto t = hfs::Tokenizer::from_json(j.dump(), "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), hfs::ErrorCode::kUnsupported);
  EXPECT_NE(t.error().message().find("WordPiece"), std::string::npos);
  j = base_tokenizer();
  j["model"]["type"] = "Unigram";
  t = hfs::Tokenizer::from_json(j.dump(), "");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("Unigram"), std::string::npos);
  for (const char* stage : {"normalizer", "pre_tokenizer", "decoder", "post_processor"}) {
    j = base_tokenizer();
    j[stage] = {{"type", "Frobnicate"}};
    t = hfs::Tokenizer::from_json(j.dump(), "");
    ASSERT_FALSE(t.ok()) << stage;
    EXPECT_EQ(t.error().code(), hfs::ErrorCode::kUnsupported) << stage;
    EXPECT_NE(t.error().message().find("Frobnicate"), std::string::npos) << t.error().message();
  }
}

TEST(TokenizerLoad, MalformedInputsGiveClearErrors) {
  struct Case {
    std::string text;
    std::string needle;
  };
  json no_vocab = base_tokenizer();
  no_vocab["model"]["vocab"] = json::array();
  json bad_merge = base_tokenizer();
  bad_merge["model"]["merges"] = {"ab"};
  json bad_id = base_tokenizer();
  bad_id["model"]["vocab"]["x"] = "seven";
  json bad_added = base_tokenizer();
  bad_added["added_tokens"] = json::array({json{{"content", "<s>"}}});
  json bad_split = base_tokenizer();
  bad_split["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}};
  json bad_behavior = base_tokenizer();
  bad_behavior["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Sideways"}};
  // Ids index dense tables: one far past anything the file could hold is refused before it is allocated
  // (a fuzzed file with a vocab id near 4·10^8 once took 1.7 GB), in the vocab and in added_tokens.
  json huge_id = base_tokenizer();
  huge_id["model"]["vocab"]["x"] = 400000000;
  json huge_added = base_tokenizer();
  huge_added["added_tokens"] = json::array({json{{"id", 400000000}, {"content", "<s>"}}});
  for (const Case& c : std::vector<Case>{{"{\"model\": ", "expected"},
                                         {huge_id.dump(), "model.vocab['x']: expected an id in [0, 1048576)"},
                                         {huge_added.dump(), "added_tokens[0]"},
                                         {"[1, 2]", "JSON object"},
                                         {json{{"normalizer", nullptr}}.dump(), "missing 'model'"},
                                         {no_vocab.dump(), "model.vocab"},
                                         {bad_merge.dump(), "model.merges[0]"},
                                         {bad_id.dump(), "model.vocab['x']"},
                                         {bad_added.dump(), "added_tokens[0]"},
                                         {bad_split.dump(), "does not compile"},
                                         {bad_behavior.dump(), "behavior"}}) {
    auto t = hfs::Tokenizer::from_json(c.text, "");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.error().message().find(c.needle), std::string::npos) << t.error().message();
  }
  auto cfg = hfs::Tokenizer::from_json(base_tokenizer().dump(), "{\"bos_token\": \"<nope>\"}");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().message().find("bos_token '<nope>'"), std::string::npos) << cfg.error().message();
  auto dir = hfs::Tokenizer::from_dir("/nonexistent/dir");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().code(), hfs::ErrorCode::kNotFound);
}

TEST(TokenizerEncode, RejectsInvalidUtf8AndDecodeRejectsUnknownIds) {
  auto t = load(base_tokenizer());
  auto r = t->encode("a\xFF" "b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), hfs::ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("offset 1"), std::string::npos);
  Ids bad{0, 99};
  auto d = t->decode(bad);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), hfs::ErrorCode::kOutOfRange);
}

TEST(TokenizerAddedTokens, SpecialSplitStripAndSingleWord) {
  json j = base_tokenizer();
  j["added_tokens"] = json::array({
      json{{"id", 30}, {"content", "<s>"}, {"special", true}, {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"single_word", false}},
      json{{"id", 31}, {"content", "<x>"}, {"special", true}, {"lstrip", true}, {"rstrip", true}, {"normalized", false}, {"single_word", false}},
      json{{"id", 32}, {"content", "cab"}, {"special", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"single_word", true}},
  });
  auto t = load(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(enc(*t, "ab<s>c"), (Ids{3, 30, 2}));
  EXPECT_EQ(enc(*t, "a <x> b"), (Ids{0, 31, 1}));        // spaces around <x> stripped
  EXPECT_EQ(enc(*t, "a <s> b"), (Ids{0, 6, 30, 6, 1}));  // kept around <s>
  EXPECT_EQ(enc(*t, "cab"), (Ids{32}));
  EXPECT_EQ(enc(*t, "acab"), (Ids{0, 2, 3}));  // single_word: "cab" inside a word does not match
  auto d = t->decode(Ids{3, 30, 2}, /*skip_special=*/true);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "ab c");  // no decoder: tokens joined by spaces
  EXPECT_TRUE(t->is_special(30));
  EXPECT_FALSE(t->is_special(32));
  EXPECT_EQ(t->token_to_id("<x>"), 31);
  EXPECT_EQ(t->id_to_token(4), "abc");
  EXPECT_EQ(t->id_to_token(1000), std::nullopt);
}

std::vector<std::string> pre(const json& node, std::string text, size_t section = 0) {
  auto p = hfs::tok::make_pre_tokenizer(node);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().to_string());
  std::vector<std::string> pieces{std::move(text)};
  if (p.ok()) {
    EXPECT_TRUE((*p)->pre_tokenize(pieces, section).ok());
  }
  return pieces;
}

using Strs = std::vector<std::string>;

TEST(TokenizerPreTokenizer, SplitBehavioursFromHfDocs) {
  // The HF tokenizers documentation's example: pattern "-" on "the-final--countdown".
  auto split = [](const char* behavior, bool invert = false) {
    return pre({{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}},
               "the-final--countdown");
  };
  EXPECT_EQ(split("Removed"), (Strs{"the", "final", "countdown"}));
  EXPECT_EQ(split("Isolated"), (Strs{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithPrevious"), (Strs{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithNext"), (Strs{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split("Contiguous"), (Strs{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split("Removed", true), (Strs{"-", "-", "-"}));  // invert: words are the matches, each dash kept alone
}

TEST(TokenizerPreTokenizer, ByteLevelMetaspaceDigitsWhitespace) {
  // GPT-2 regex splits; ByteLevel maps ' ' to 'Ġ' (U+0120) and '\n' to 'Ċ' (U+010A).
  EXPECT_EQ(pre({{"type", "ByteLevel"}, {"add_prefix_space", false}}, "Hi  you's\n"),
            (Strs{"Hi", "\xC4\xA0", "\xC4\xA0you", "'s", "\xC4\x8A"}));
  EXPECT_EQ(pre({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}, "a b"), (Strs{"\xC4\xA0" "a\xC4\xA0" "b"}));
  const std::string m = "\xE2\x96\x81";  // ▁
  json ms = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(pre(ms, "hello  world"), (Strs{m + "hello", m, m + "world"}));
  ms["split"] = false;
  EXPECT_EQ(pre(ms, "hello world"), (Strs{m + "hello" + m + "world"}));
  ms["prepend_scheme"] = "first";
  EXPECT_EQ(pre(ms, "x", 1), (Strs{"x"}));
  EXPECT_EQ(pre(ms, "x", 0), (Strs{m + "x"}));
  ms["prepend_scheme"] = "never";
  EXPECT_EQ(pre(ms, "x", 0), (Strs{"x"}));
  EXPECT_EQ(pre({{"type", "Digits"}, {"individual_digits", true}}, "ab123c"), (Strs{"ab", "1", "2", "3", "c"}));
  EXPECT_EQ(pre({{"type", "Digits"}, {"individual_digits", false}}, "ab123c"), (Strs{"ab", "123", "c"}));
  EXPECT_EQ(pre({{"type", "Whitespace"}}, "Hey, you!  ok"), (Strs{"Hey", ",", "you", "!", "ok"}));
  EXPECT_EQ(pre({{"type", "Sequence"},
                 {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", true}}}}},
                "a1 b22"),
            (Strs{"a", "1", "b", "2", "2"}));
}

std::string norm(const json& node, const std::string& text) {
  auto n = hfs::tok::make_normalizer(node);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().to_string());
  if (!n.ok()) return "";
  auto r = (*n)->normalize(text);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : "";
}

TEST(TokenizerNormalizer, Forms) {
  EXPECT_EQ(norm({{"type", "NFC"}}, "e\xCC\x81"), "\xC3\xA9");            // e + U+0301 → é
  EXPECT_EQ(norm({{"type", "NFKC"}}, "\xEF\xAC\x81" "x"), "fix");         // ﬁ ligature → fi
  EXPECT_EQ(norm({{"type", "NFD"}}, "\xC3\xA9"), "e\xCC\x81");
  EXPECT_EQ(norm({{"type", "Lowercase"}}, "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3"), "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82");  // ΟΔΟΣ → οδος
  EXPECT_EQ(norm({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, " \t x \n"), "x \n");
  EXPECT_EQ(norm({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, "\xE3\x80\x80x\xEF\xBB\xBF"), "x");
  EXPECT_EQ(norm({{"type", "Sequence"},
                  {"normalizers", {{{"type", "Prepend"}, {"prepend", "_"}},
                                   {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}}}}},
                 "a b"),
            "_a_b");
  EXPECT_EQ(norm({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}, "a \t\n b"), "a b");
}

TEST(TokenizerRegex, OnigurumaRewritesFollowTransformersJs) {
  auto matches = [](const std::string& hf, const std::string& text) {
    auto p = hfs::tok::translate_hf_regex(hf, "test");
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().to_string());
    auto re = hfs::tok::Regex::compile(*p, "test");
    EXPECT_TRUE(re.ok()) << (re.ok() ? "" : re.error().to_string());
    std::vector<hfs::tok::Span> m;
    (*re)->find_all(text, m);
    Strs out;
    for (auto [b, e] : m) out.push_back(text.substr(b, e - b));
    return out;
  };
  EXPECT_EQ(matches("(?i:'s|'t)", "it'S 'T"), (Strs{"'S", "'T"}));
  EXPECT_EQ(matches("(?i:'s)", "'\xC5\xBF"), Strs{});                   // ſ does not fold to s (ASCII only)
  EXPECT_EQ(matches("\\s+", "a\xC2\x85" "b\xEF\xBB\xBF" "c"), (Strs{"\xC2\x85"}));  // White_Space: NEL yes, BOM no
  EXPECT_EQ(matches("\\p{N}{1,3}", "12345"), (Strs{"123", "45"}));
  EXPECT_EQ(matches("a{1,2}+", "aaaaa"), (Strs{"aaaaa"}));  // Oniguruma: repeated repetition, not possessive
  EXPECT_EQ(matches(".", "\n"), Strs{});
  auto bad = hfs::tok::translate_hf_regex("[a&&b]", "pre_tokenizer Split");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), hfs::ErrorCode::kUnsupported);
}

TEST(TokenizerUtf8, WhatwgReplacement) {
  using hfs::decode_utf8_lossy;
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(decode_utf8_lossy("\xE2\x82"), r);            // truncated sequence: one U+FFFD
  EXPECT_EQ(decode_utf8_lossy("\xF0\x80"), r + r);        // 80 is out of F0's range: two
  EXPECT_EQ(decode_utf8_lossy("\xC3(" ), r + "(");
  EXPECT_EQ(decode_utf8_lossy("\xED\xA0\x80"), r + r + r);  // surrogate: each byte
  EXPECT_EQ(decode_utf8_lossy("\xEF\xBB\xBFx", true), "x");
  EXPECT_EQ(decode_utf8_lossy("\xEF\xBB\xBFx", false), "\xEF\xBB\xBFx");
}

// The real stories260K tokenizer (shared fixtures) with its transformers.js golden lines; "" when missing
// (the tests then fail with how to provide it).
std::string stories_dir() {
  const std::string d = hfs::test::stories_dir();
  if (hfs::test::fixture_exists(d + "/tokenizer.json")) return d;
  ADD_FAILURE() << hfs::test::missing(d);
  return "";
}

json golden_line(size_t i) {
  std::ifstream f(std::string(HFS_SOURCE_DIR) + "/tests/tokenizer/golden/stories260K.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    json j = json::parse(line);
    if (j.contains("i") && j["i"] == i) return j;
  }
  return json();
}

TEST(TokenizerReal, StoriesBosEosAndStreaming) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  std::string dir = stories_dir();
  ASSERT_FALSE(dir.empty()) << "stories260K fixture missing";
  auto t = hfs::Tokenizer::from_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ((*t)->bos_id(), 1);  // tokenizer_config.json: bos "<s>", eos "</s>"
  EXPECT_EQ((*t)->eos_ids(), (Ids{2}));
  // "𝔘" (F0 9D 94 98) has no token: after "▁" (410) come byte tokens, "<0xXX>" having id 3 + XX in this
  // vocabulary. A stream holds the character back until its last byte.
  Ids euro = enc(**t, "\xF0\x9D\x94\x98", false);
  ASSERT_EQ(euro, (Ids{410, 3 + 0xF0, 3 + 0x9D, 3 + 0x94, 3 + 0x98}));
  hfs::StreamDecoder s(**t);
  std::string out;
  for (size_t k = 0; k < euro.size(); ++k) {
    auto piece = s.feed(euro[k]);
    ASSERT_TRUE(piece.ok());
    if (k >= 1 && k + 1 < euro.size()) {
      EXPECT_EQ(*piece, "") << k;
    }
    out += *piece;
  }
  EXPECT_EQ(out, (*(*t)->decode(euro)));
  // Leading space: the first word has none, later words keep theirs.
  json g = golden_line(1);  // "Hello world"
  ASSERT_FALSE(g.is_null());
  hfs::StreamDecoder s2(**t, /*skip_special=*/true);
  std::string acc;
  for (int32_t id : g["ids"].get<Ids>()) acc += *s2.feed(id);
  acc += *s2.flush();
  EXPECT_EQ(acc, "Hello world");
}

// A generation's stream continues its prompt's text: primed with "Hello", the ids of " world" stream as
// " world" (Metaspace drops the space of the text's first word only).
TEST(TokenizerReal, StreamPrimedWithPromptContinuesIt) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  std::string dir = stories_dir();
  ASSERT_FALSE(dir.empty()) << "stories260K fixture missing";
  auto t = hfs::Tokenizer::from_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  json g = golden_line(1);  // "Hello world" with BOS, reference ids from transformers.js
  ASSERT_FALSE(g.is_null());
  Ids ids = g["ids"].get<Ids>();
  size_t k = 1;
  while (k < ids.size() && *(*t)->decode(std::span(ids).first(k), true) != "Hello") ++k;
  ASSERT_LT(k, ids.size());
  auto stream = [&](std::span<const int32_t> prompt) {
    hfs::StreamDecoder s(**t, /*skip_special=*/true);
    EXPECT_TRUE(s.prime(prompt).ok());
    std::string acc;
    for (size_t i = k; i < ids.size(); ++i) acc += *s.feed(ids[i]);
    return acc + *s.flush();
  };
  EXPECT_EQ(stream(std::span(ids).first(k)), " world");
  // A context of special tokens only decodes to nothing: the window grows back to its start, and the
  // first word is the text's first (no space).
  Ids specials(100000, 1);
  specials.insert(specials.end(), ids.begin() + 1, ids.begin() + static_cast<std::ptrdiff_t>(k));
  EXPECT_EQ(stream(specials), " world");
  EXPECT_EQ(stream(Ids(50000, 1)), "world");
}

TEST(TokenizerStream, PrimeWithUnknownIdIsAnErrorAndLeavesTheStreamReset) {
  auto t = load(base_tokenizer());  // no unk token: unknown ids cannot decode
  hfs::StreamDecoder s(*t);
  auto st = s.prime(Ids{0, 99});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), hfs::ErrorCode::kOutOfRange);
  EXPECT_EQ(*s.feed(0), *t->decode(Ids{0}));
}

TEST(TokenizerCli, EncodeDecodeStoriesDirectory) {
  HFS_REQUIRE_CLI();
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  std::string dir = stories_dir();
  ASSERT_FALSE(dir.empty());
  json g = golden_line(1);  // "Hello world", reference ids from transformers.js
  auto run = [](const std::string& args) {
    std::string cmd = std::string(HFS_CLI_PATH) + " tokenize " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int rc = pclose(p);
    return std::make_pair(rc, out);
  };
  auto [rc, out] = run("-m " + dir + " --json 'Hello world'");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(json::parse(out)["ids"], g["ids"]);
  auto [rc2, out2] = run("-m " + dir + " --json --no-special 'Hello world'");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_EQ(json::parse(out2)["ids"], g.contains("plain") ? g["plain"] : g["ids"]);
  std::string ids;
  for (auto& v : g["ids"]) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(v.get<int>());
  }
  auto [rc3, out3] = run("-m " + dir + " --decode " + ids);
  ASSERT_EQ(rc3, 0) << out3;
  EXPECT_EQ(out3, g["dec"].get<std::string>() + "\n");
  auto [rc4, out4] = run("-m " + dir + " --decode 1,x");
  EXPECT_NE(rc4, 0);
  EXPECT_NE(out4.find("'x'"), std::string::npos) << out4;
  auto [rc5, out5] = run("-m /nonexistent/model.hfs 'x'");
  EXPECT_NE(rc5, 0);
}

}  // namespace
