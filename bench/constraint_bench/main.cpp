// constraint_bench: the cost of one step's token mask (TokenConstraint::compute_mask) per tokenizer and
// grammar, walking a fixed target text with the tokens the mask allows (at each step the allowed token
// that covers the longest prefix of the rest), so every measured step is a real state along a valid output.
//
//   build/constraint_bench DIR...      (DIR holds tokenizer.json [+ tokenizer_config.json])
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "hfstatic/constraint.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  std::shared_ptr<const hfs::Grammar> grammar;
  std::string target;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TOKENIZER_DIR...\n", argv[0]);
    return 2;
  }
  auto re = hfs::Grammar::from_regex("[A-Z][a-z]{2,12}( [a-z]{1,12}){3,20}\\. \\(\\d{1,4}-\\d{1,4}\\)");
  if (!re) {
    std::fprintf(stderr, "%s\n", re.error().to_string().c_str());
    return 1;
  }
  // bench/grammar's JSON Schema, record and arithmetic grammars: bounded repetitions (char{0,12},
  // [0-9]{1,3}) make every step a new state, so these are the cold-walk cases.
  auto schema = hfs::Grammar::from_json_schema(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
      "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                                   "zip": {"type": "string", "maxLength": 5}},
                  "required": ["city"], "additionalProperties": false}},
      "required": ["name", "age"], "additionalProperties": false})");
  auto record = hfs::Grammar::from_gbnf(R"g(root ::= "{" ws "\"id\"" ws ":" ws num "," ws "\"name\"" ws ":" ws str ws "}"
num ::= "-"? [0-9]{1,6}
str ::= "\"" [a-zA-Z ]{0,12} "\""
ws ::= [ ]?
)g");
  auto arith = hfs::Grammar::from_gbnf(R"g(root ::= expr
expr ::= term (ws [-+] ws term){0,4}
term ::= factor (ws [*/] ws factor){0,3}
factor ::= [0-9]{1,3} | "(" ws expr ws ")"
ws ::= [ ]?
)g");
  for (const auto* r : {&schema, &record, &arith})
    if (!*r) {
      std::fprintf(stderr, "%s\n", r->error().to_string().c_str());
      return 1;
    }
  const std::vector<Case> cases = {
      {"json_object", hfs::Grammar::json_object(),
       R"({"name": "Ada Lovelace", "born": 1815, "tags": ["math", "engines", "notes"], "nested": {"ok": true, "n": null, "x": -12.5e3}, "text": "a longer string with several words in it"})"},
      {"regex", *re, "Once upon a time there was a little engine that counted. (12-345)"},
      {"json_schema", *schema,
       R"({"name": "Ada Lovelace", "age": 36, "tags": ["a", "b"], "address": {"city": "London", "zip": "12345"}})"},
      {"record", *record, R"({"id": 123, "name": "Ada Lovelace"})"},
      {"arithmetic", *arith, "12 + (3 * 45 - 6) / 7"},
  };
  std::printf("%-28s %-12s %7s %6s %10s %10s %10s\n", "tokenizer", "grammar", "vocab", "steps", "build_ms",
              "median_us", "mean_us");
  for (int a = 1; a < argc; ++a) {
    auto tok = hfs::Tokenizer::from_dir(argv[a]);
    if (!tok) {
      std::fprintf(stderr, "%s\n", tok.error().to_string().c_str());
      return 1;
    }
    auto t0 = Clock::now();
    auto vocab = hfs::token_vocabulary(**tok, (*tok)->eos_ids());
    const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!vocab) {
      std::fprintf(stderr, "%s\n", vocab.error().to_string().c_str());
      return 1;
    }
    std::vector<uint8_t> mask(static_cast<size_t>((*vocab)->size()));
    for (const Case& c : cases) {
      std::vector<double> us;
      for (int rep = 0; rep < 5; ++rep) {
        hfs::TokenConstraint tc(c.grammar, *vocab);
        size_t pos = 0;
        while (pos < c.target.size()) {
          auto s = Clock::now();
          tc.compute_mask(mask);
          us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
          int32_t best = -1;
          size_t best_len = 0;
          for (int32_t id = 0; id < (*vocab)->size(); ++id) {
            const std::string_view b = (*vocab)->bytes(id);
            if (mask[static_cast<size_t>(id)] && !b.empty() && b.size() > best_len &&
                c.target.compare(pos, b.size(), b) == 0)
              best = id, best_len = b.size();
          }
          if (best < 0 || !tc.accept(best)) break;
          pos += best_len;
        }
        if (pos != c.target.size()) std::fprintf(stderr, "%s: stopped at byte %zu of the target\n", c.name, pos);
      }
      double mean = 0;
      for (double u : us) mean += u;
      mean /= static_cast<double>(std::max<size_t>(1, us.size()));
      std::string name = argv[a];
      if (name.size() > 28) name = "…" + name.substr(name.size() - 26);
      std::printf("%-28s %-12s %7d %6zu %10.1f %10.1f %10.1f\n", name.c_str(), c.name, (*vocab)->size(),
                  us.size() / 5, build_ms, median(us), mean);
    }
  }
  return 0;
}
