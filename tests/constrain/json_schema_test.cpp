// JSON Schema → GBNF (constrain/json_schema.h): for each schema, documents that validate are accepted by the
// compiled grammar and documents that do not are refused (judged by hand from the JSON Schema spec, and, for
// the valid ones, in the generated grammar's own whitespace and ordering conventions); unsupported keywords,
// unresolvable references and impossible bounds are errors naming the keyword and where it is.
#include "constrain/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>

#include <string>
#include <vector>

#include "hfstatic/constraint.h"

namespace hfs {
namespace {

std::shared_ptr<const Grammar> compile(const std::string& schema) {
  auto gbnf = json_schema_to_gbnf(schema);
  EXPECT_TRUE(gbnf.ok()) << gbnf.error().to_string();
  if (!gbnf) return nullptr;
  auto g = Grammar::from_gbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << g.error().to_string() << "\n" << *gbnf;
  return g ? *g : nullptr;
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& doc) {
  GrammarMatcher m(g);
  return m.feed(doc) && m.complete();
}

struct Case {
  std::string schema;
  std::vector<std::string> valid, invalid;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {R"({"type": "integer"})", {"0", "-12", "1234567890123456"}, {"01", "1.5", "\"1\"", ""}},
      {R"({"type": "number"})", {"0", "-0.5", "3.25e-7", "1E+3", "42"}, {".5", "1.", "--1", "1e", "NaN"}},
      {R"({"type": "boolean"})", {"true", "false"}, {"True", "1", "null"}},
      {R"({"type": ["string", "null"], "maxLength": 3})", {"null", "\"\"", "\"abc\"", "\"a\\\"c\""}, {"\"abcd\"", "1"}},
      {R"({"type": "string", "minLength": 2, "maxLength": 4})",
       {"\"ab\"", "\"é日\"", "\"\\u00e9x\"", "\"a\\nb\""},
       {"\"a\"", "\"abcde\"", "\"a\nb\"", "\"\\x41b\""}},
      {R"({"enum": ["red", "green", 3, null, "caf\u00e9 \"q\""]})",
       {"\"red\"", "3", "null", "\"café \\\"q\\\"\""},
       {"\"blue\"", "\"Red\"", "4", "\"café \"q\"\""}},
      {R"({"const": {"a": [1, "x"]}})", {"{\"a\":[1,\"x\"]}"}, {"{\"a\":[1,\"y\"]}", "{\"a\":[1]}"}},
      {R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
       {"[1]", "[1, 2, 3]", "[ 1,\n  2 ]"},
       {"[]", "[1, 2, 3, 4]", "[1,]", "[\"a\"]"}},
      {R"({"type": "array", "maxItems": 0})", {"[]", "[ ]"}, {"[1]"}},
      {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
       {"[\"a\", 1]"},
       {"[\"a\"]", "[\"a\", 1, 2]", "[1, \"a\"]"}},
      {R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name"], "additionalProperties": false})",
       {"{\"name\": \"Ann\"}", "{\"name\": \"Ann\", \"age\": 30}", "{\n  \"name\":\"A\",\n  \"age\":1\n}"},
       {"{}", "{\"age\": 30}", "{\"name\": \"Ann\", \"extra\": 1}", "{\"name\": 1}", "{\"name\": \"A\",}",
        "{\"name\": \"Ann\" \"age\": 30}"}},
      {R"({"properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}, "c": {"type": "null"}}})",
       {"{}", "{\"a\": 1}", "{\"b\": true}", "{\"c\": null}", "{\"a\": 1, \"c\": null}", "{\"b\": false, \"c\": null}"},
       {"{,}", "{\"a\": 1,}", "{\"d\": 1}", "{\"a\": 1 \"c\": null}", "{, \"b\": true}"}},
      {R"({"type": "object", "additionalProperties": {"type": "integer"}})",
       {"{}", "{\"x\": 1, \"y\": 2}"},
       {"{\"x\": \"1\"}"}},
      {R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"k": {"const": "v"}}, "required": ["k"]}]})",
       {"7", "{\"k\": \"v\"}"},
       {"\"7\"", "{\"k\": \"w\"}", "{}"}},
      {R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
          "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
          "required": ["v", "next"]}}})",
       {"{\"v\": 1, \"next\": null}", "{\"v\": 1, \"next\": {\"v\": 2, \"next\": null}}"},
       {"{\"v\": 1}", "{\"v\": 1, \"next\": {\"v\": 2}}"}},
      {R"({"type": "string", "format": "date-time"})",
       {"\"2024-02-28T13:05:09Z\"", "\"1999-12-01T00:00:00.5+02:00\""},
       {"\"2024-02-30T13:05:09Z\"", "\"2024-13-01T00:00:00Z\"", "\"2024-01-01 00:00:00Z\""}},
      {R"({"type": "string", "format": "uuid"})", {"\"123e4567-e89b-12d3-a456-426614174000\""}, {"\"123e4567\""}},
      {R"(true)", {"1", "\"s\"", "[{\"a\": null}]"}, {"", "nul"}},
      // pattern: an ECMA-262 regex searched for in the decoded string, so only ^ and $ anchor.
      {R"({"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3,5}$"})",
       {"\"AB-123\"", "\"XY-12345\""},
       {"\"AB-12\"", "\"ab-123\"", "\"AB-123456\"", "\" AB-123\"", "\"AB-123 \"", "\"AB123\""}},
      {R"({"type": "string", "pattern": "abc"})",
       {"\"abc\"", "\"xxabcyy\"", "\"\\nabc\\\"\"", "\"a\\\"abc\"", "\"日abc\\u0001\""},
       {"\"ab\"", "\"acb\"", "\"a\nabc\"", "\"ab\\nc\""}},
      {R"({"type": "string", "pattern": "^ab"})", {"\"ab\"", "\"abzz\""}, {"\"zab\"", "\"a\""}},
      {R"({"type": "string", "pattern": "ab$"})", {"\"ab\"", "\"zzab\""}, {"\"abz\"", "\"b\""}},
      {R"({"type": "string", "pattern": "^(cat|dog)s?$|^bird"})",
       {"\"cat\"", "\"dogs\"", "\"bird\"", "\"birds of prey\""},
       {"\"xcat\"", "\"catx\"", "\"a bird\"", "\"\""}},
      {R"({"type": "string", "pattern": "^cat$|dog"})",
       {"\"cat\"", "\"dog\"", "\"hotdogs\""},
       {"\"cats\"", "\"a cat\"", "\"do g\""}},
      // Characters JSON must escape come out escaped: '"', backslash and controls.
      {R"({"type": "string", "pattern": "^[\"\\\\]+$"})",
       {"\"\\\"\"", "\"\\\\\"", "\"\\\"\\\\\\\"\""},
       {"\"\"", "\"a\"", "\"\\n\""}},
      {R"({"type": "string", "pattern": "^\\t\\n\\x01\\x1f$"})",
       {"\"\\t\\n\\u0001\\u001f\""},
       {"\"\t\n\\u0001\\u001f\"", "\"\\t\\n\""}},
      {R"({"type": "string", "pattern": "^[^a]$"})",
       {"\"b\"", "\"\\\"\"", "\"\\\\\"", "\"\\u0000\"", "\"\\b\"", "\"é\""},
       {"\"a\"", "\"\"", "\"bb\""}},
      // ECMA-262's dot refuses every line terminator; its \S refuses U+00A0 (ECMAScript white space).
      {R"({"type": "string", "pattern": "^.$"})",
       {"\"a\"", "\"é\"", "\"\\t\""},
       {"\"\\n\"", "\"\\r\"", "\"\u2028\"", "\"ab\""}},
      {R"({"type": "string", "pattern": "^\\S+$"})", {"\"ab\""}, {"\"a\u00a0b\"", "\"a b\""}},
      {R"({"type": ["string", "null"], "pattern": "^x"})", {"null", "\"xy\""}, {"\"yx\"", "1"}},
      {R"({"pattern": "^$"})", {"\"\""}, {"\"a\"", "1"}},
      {R"({"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": true})",
       {"[]", "[\"a\"]", "[\"a\", \"c\"]", "[\"a\", \"b\", \"c\"]"},
       {"[\"a\", \"a\"]", "[\"a\", \"b\", \"c\", \"a\"]", "[\"d\"]"}},
      {R"({"type": "array", "items": {"enum": [1, 2, 3, 4]}, "uniqueItems": true, "minItems": 2, "maxItems": 3})",
       {"[1, 2]", "[2, 4]", "[1, 3, 4]"},
       {"[]", "[1]", "[4]", "[1, 2, 3, 4]", "[2, 2]", "[1, 2, 2]"}},
      {R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}, "required": ["a"]},
                     {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})",
       {"{\"a\": 1, \"b\": \"x\"}"}, {"{\"a\": 0, \"b\": \"x\"}", "{\"a\": 1}", "{\"b\": \"x\"}"}},
      {R"({"type": "string", "format": "ipv4"})", {"\"0.0.0.0\"", "\"255.255.255.255\"", "\"192.168.1.10\""},
       {"\"256.0.0.1\"", "\"01.2.3.4\"", "\"1.2.3\"", "\"1.2.3.4.5\""}},
      {R"({"type": "string", "format": "ipv6"})", {"\"2001:db8:0:0:0:0:2:1\""}, {"\"2001:db8::1\"", "\"1:2:3:4:5:6:7\""}},
      {R"({"type": "string", "format": "hostname"})", {"\"example.com\"", "\"a-b.c0\"", "\"x\""},
       {"\"-a.com\"", "\"a-.com\"", "\"a..b\"", "\"\""}},
      {R"({"type": "string", "format": "email"})", {"\"ann.lee+x@mail.example.org\""},
       {"\"ann@\"", "\".ann@x.org\"", "\"ann@x\"", "\"a b@x.org\""}},
      {R"({"type": "string", "format": "uri"})", {"\"https://example.com/a/b.html\"", "\"http://x\""},
       {"\"example.com\"", "\"https://\"", "\"ftp://x y\""}},
  };
  return c;
}

TEST(JsonSchema, EachSchemaAcceptsItsValidDocumentsAndRefusesTheOthers) {
  for (const Case& c : cases()) {
    auto g = compile(c.schema);
    ASSERT_TRUE(g) << c.schema;
    for (const std::string& doc : c.valid) EXPECT_TRUE(accepts(g, doc)) << c.schema << "\nvalid: " << doc;
    for (const std::string& doc : c.invalid) EXPECT_FALSE(accepts(g, doc)) << c.schema << "\ninvalid: " << doc;
  }
}

// Property order follows the schema: a grammar that generated them in another order would still give
// valid documents, but the schema's order is what users expect to read.
TEST(JsonSchema, PropertiesComeInTheSchemasOrder) {
  auto g = compile(R"({"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "integer"}},
                       "required": ["z", "a"]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts(g, "{\"z\": 1, \"a\": 2}"));
  EXPECT_FALSE(accepts(g, "{\"a\": 2, \"z\": 1}"));
}

TEST(JsonSchema, UnsupportedOrBrokenSchemasAreErrorsNamingTheKeywordAndWhere) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}})",
       "json schema: /properties/tags: \"uniqueItems\" is supported only with \"items\" an enum"},
      {R"({"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": true, "minItems": 3})",
       "minItems 3 with \"uniqueItems\" over 2 values accepts no array"},
      {R"({"type": "object", "properties": {"n": {"type": "integer", "not": {"const": 1}}}})",
       "json schema: /properties/n: unsupported keyword \"not\""},
      {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})",
       "json schema: /allOf/1: \"allOf\": \"type\" in two branches with different values is not supported"},
      {R"({"allOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"a": {"type": "integer"}}}]})",
       "property \"a\" in two branches with different schemas"},
      {R"({"allOf": [{"properties": {"a": {"type": "string"}}}], "additionalProperties": false})",
       "\"allOf\": \"additionalProperties\" (at /) and \"properties\" (at /allOf/0) in different schemas"},
      {R"({"type": "array", "items": {"type": "string", "pattern": "(?<=a)b"}})",
       "json schema: /items: \"pattern\" \"(?<=a)b\": regex: offset 1: group kind '(?<' is not supported"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "\"pattern\" \"(a)\\\\1\": regex: offset 4: escape '\\1' is not supported"},
      {R"({"type": "string", "pattern": "a^b"})", "regex: offset 1: anchor '^' inside the pattern"},
      {R"({"type": "string", "pattern": "a[]"})", "the empty class '[]' matches nothing"},
      {R"({"type": "string", "pattern": "^a", "maxLength": 3})", "\"pattern\" with \"maxLength\" is not supported"},
      {R"({"type": "string", "pattern": "^a", "format": "date"})", "\"pattern\" with \"format\" is not supported"},
      {R"({"pattern": "^a", "enum": ["a", "b"]})", "\"pattern\" beside \"enum\" is not supported"},
      {R"({"enum": ["long"], "maxLength": 2})", "json schema: /: \"maxLength\" beside \"enum\" is not supported"},
      {R"({"const": 5, "minimum": 6})", "\"minimum\" beside \"const\" is not supported"},
      {R"({"type": "integer", "minimum": 5, "exclusiveMaximum": 5})", "no integer of at most 16 digits satisfies"},
      {R"({"type": "integer", "exclusiveMinimum": true})", "\"exclusiveMinimum\" as a boolean (draft 4) is not supported"},
      {R"({"type": "integer", "multipleOf": 2.5})", "\"multipleOf\" 2.5 is not supported"},
      {R"({"type": "integer", "multipleOf": 101})", "an integer in [1, 100] on an integer is"},
      {R"({"type": "integer", "multipleOf": 3, "minimum": 0})", "\"multipleOf\" together with minimum/maximum"},
      {R"({"type": "number", "multipleOf": 3})", "\"multipleOf\" on a number is not supported"},
      {R"({"type": "number", "minimum": 1e16})", "no number satisfies the bounds (at least 10000000000000000"},
      {R"({"type": "number", "exclusiveMinimum": 0.5, "maximum": 0.5})", "no number satisfies the bounds"},
      {R"({"type": "number", "minimum": 3, "exclusiveMaximum": 3})", "no number satisfies the bounds"},
      {R"({"const": "a", "enum": ["b"]})", "\"enum\" beside \"const\" is not supported"},
      {R"({"type": "string", "enum": ["a", 1]})", "\"enum\" value 1 is not of \"type\" \"string\""},
      {R"({"type": "integer", "const": 1.5})", "\"const\" value 1.5 is not of \"type\" \"integer\""},
      {R"({"type": "string", "pattern": 5})", "\"pattern\" must be a string (an ECMA-262 regex), got 5"},
      {R"(false)", "json schema: /: the schema false accepts no document"},
      {R"({"$ref": "#/$defs/missing"})", "\"$ref\": \"#/$defs/missing\" does not name a schema"},
      {R"({"$ref": "https://example.com/s.json"})", "only references inside this schema"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "minItems 3 > maxItems 2"},
      {R"({"type": "string", "minLength": -1})", "\"minLength\" must be a non-negative integer, got -1"},
      {R"({"type": "decimal"})", "unknown type \"decimal\""},
      {R"({"type": "string", "format": "iri"})", "unsupported \"format\": \"iri\""},
      {R"({"type": "object",)", "json schema: not valid JSON"},
      {R"({"enum": []})", "\"enum\" must be a non-empty array"},
      {R"({"anyOf": [{"type": "string"}], "type": "string"})", "\"anyOf\" beside \"type\""},
  };
  for (const auto& [schema, want] : bad) {
    auto g = json_schema_to_gbnf(schema);
    ASSERT_FALSE(g.ok()) << schema << "\n" << *g;
    EXPECT_EQ(g.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(g.error().message().find(want), std::string::npos) << g.error().message();
  }
}

// Annotations describe and never constrain: a schema full of them converts like the bare one.
// Integer bounds compile to an exact regular language: every integer of the window around each bound is
// accepted exactly when lo <= n <= hi (plain arithmetic is the reference), for bounds of every digit count and
// sign, exclusive and fractional forms included.
TEST(JsonSchema, IntegerBoundsAreExact) {
  struct Range {
    std::string keywords;
    int64_t lo, hi;
  };
  const int64_t big = 9'999'999'999'999'999;
  const std::vector<Range> ranges = {
      {R"("minimum": 0, "maximum": 9)", 0, 9},          {R"("minimum": -5, "maximum": 120)", -5, 120},
      {R"("minimum": 17, "maximum": 1234)", 17, 1234},  {R"("minimum": -1000, "maximum": -999)", -1000, -999},
      {R"("minimum": 100, "maximum": 999)", 100, 999},  {R"("minimum": 7, "maximum": 7)", 7, 7},
      {R"("exclusiveMinimum": 0, "exclusiveMaximum": 100)", 1, 99},
      {R"("minimum": 1.5, "maximum": 9.99)", 2, 9},     {R"("exclusiveMinimum": -2.5, "exclusiveMaximum": 3.0)", -2, 2},
      {R"("minimum": 18)", 18, big},                    {R"("maximum": -3)", -big, -3},
      {R"("minimum": 4095, "maximum": 65536)", 4095, 65536},
      {R"("minimum": -123456789, "maximum": 987654321)", -123456789, 987654321},
      {R"("minimum": 1e300)", 0, -1},  // (refused: checked below)
  };
  for (const Range& r : ranges) {
    const std::string schema = R"({"type": "integer", )" + r.keywords + "}";
    if (r.lo > r.hi) {
      EXPECT_FALSE(json_schema_to_gbnf(schema).ok()) << schema;
      continue;
    }
    auto g = compile(schema);
    ASSERT_TRUE(g) << schema;
    std::vector<int64_t> probes;
    for (int64_t b : {r.lo, r.hi, int64_t{0}, int64_t{9}, int64_t{10}, int64_t{99}, int64_t{100}, int64_t{-10}})
      for (int64_t d = -25; d <= 25; ++d)
        if (b + d >= -big && b + d <= big) probes.push_back(b + d);
    for (int64_t n : probes) {
      const bool in = n >= r.lo && n <= r.hi;
      EXPECT_EQ(accepts(g, std::to_string(n)), in) << schema << "\nn = " << n;
    }
    EXPECT_FALSE(accepts(g, "0" + std::to_string(r.lo < 0 ? 1 : r.lo))) << schema;  // no leading zeros
    EXPECT_FALSE(accepts(g, std::to_string(r.lo) + ".0")) << schema;                 // an integer's own form
  }
}

// Number bounds (integer-valued): every form over a grid of tenths around each bound is accepted exactly when
// plain arithmetic puts it inside (finer steps past a bound: NumberBoundsWithFractionsAreExact).
TEST(JsonSchema, NumberBoundsAcceptOnlyValuesInside) {
  struct Bounds {
    std::string keywords;
    double lo, hi;
    bool lo_incl, hi_incl;
  };
  const double inf = 1e300;
  const std::vector<Bounds> all = {
      {R"("minimum": 0)", 0, inf, true, true},           {R"("exclusiveMinimum": 0)", 0, inf, false, true},
      {R"("minimum": -3, "maximum": 7)", -3, 7, true, true}, {R"("exclusiveMinimum": -3, "exclusiveMaximum": 7)", -3, 7, false, false},
      {R"("maximum": 0)", -inf, 0, true, true},          {R"("exclusiveMaximum": 0)", -inf, 0, true, false},
      {R"("minimum": 10, "maximum": 12)", 10, 12, true, true}, {R"("maximum": -5)", -inf, -5, true, true},
      {R"("minimum": 2, "exclusiveMinimum": 2, "maximum": 5.0)", 2, 5, false, true},
  };
  for (const Bounds& b : all) {
    const std::string schema = R"({"type": "number", )" + b.keywords + "}";
    auto g = compile(schema);
    ASSERT_TRUE(g) << schema;
    int accepted = 0;
    for (int tenths = -150; tenths <= 150; ++tenths) {
      for (const char* suffix : {"", "0"}) {
        const double v = tenths / 10.0;
        const bool whole = tenths % 10 == 0;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%d.%d%s", tenths < 0 ? "-" : "", std::abs(tenths) / 10, std::abs(tenths) % 10, suffix);
        for (const std::string& text : {std::string(buf), whole ? std::to_string(tenths / 10) : std::string(buf)}) {
          const bool inside = (b.lo_incl ? v >= b.lo : v > b.lo) && (b.hi_incl ? v <= b.hi : v < b.hi);
          const bool acc = accepts(g, text);
          if (acc) ++accepted;
          EXPECT_EQ(acc, inside) << schema << "\n" << text;
        }
      }
    }
    EXPECT_GT(accepted, 0) << schema;
    EXPECT_FALSE(accepts(g, "1e2")) << schema;  // no exponent under bounds
  }
}

// Decimals as integers scaled by 10^16 (16 integer and 16 fraction digits fit in 128 bits): the test's own
// exact arithmetic, independent of the converter's digit-string comparisons.
__extension__ using Scaled = __int128;
constexpr int kFracDigits = 16;

Scaled scaled(const std::string& text) {
  const bool neg = text[0] == '-';
  const size_t dot = text.find('.');
  const std::string ip = text.substr(neg, dot == std::string::npos ? std::string::npos : dot - neg);
  const std::string fp = dot == std::string::npos ? "" : text.substr(dot + 1);
  Scaled v = 0;
  for (char c : ip) v = v * 10 + (c - '0');
  for (size_t k = 0; k < kFracDigits; ++k) v = v * 10 + (k < fp.size() ? fp[k] - '0' : 0);
  return neg ? -v : v;
}

Scaled pow10(int k) {
  Scaled p = 1;
  while (k-- > 0) p *= 10;
  return p;
}

// Plain text, the fraction without trailing zeros ("-0.015", "3").
std::string text_of(Scaled v) {
  const bool neg = v < 0;
  if (neg) v = -v;
  const Scaled one = pow10(kFracDigits);
  std::string ip;
  for (Scaled i = v / one; ip.empty() || i > 0; i /= 10) ip.insert(ip.begin(), static_cast<char>('0' + static_cast<int>(i % 10)));
  std::string fp(kFracDigits, '0');
  Scaled f = v % one;
  for (int k = kFracDigits - 1; k >= 0; --k, f /= 10) fp[static_cast<size_t>(k)] = static_cast<char>('0' + static_cast<int>(f % 10));
  fp.erase(fp.find_last_not_of('0') + 1);
  return (neg ? "-" : "") + ip + (fp.empty() ? "" : "." + fp);
}

struct NumberBound {
  std::string key, json;  // as the schema gives it
  std::string exact;      // its value in plain decimal (for the scaled reference)
};

// Inside every bound, read exactly and read as a double (what validators such as ajv compare).
bool inside_bounds(const std::vector<NumberBound>& bounds, const std::string& text) {
  const Scaled x = scaled(text);
  const double xd = std::strtod(text.c_str(), nullptr);
  for (const NumberBound& b : bounds) {
    const Scaled e = scaled(b.exact);
    const double ed = std::strtod(b.json.c_str(), nullptr);
    const bool ok = b.key == "minimum"            ? x >= e && xd >= ed
                    : b.key == "exclusiveMinimum" ? x > e && xd > ed
                    : b.key == "maximum"          ? x <= e && xd <= ed
                                                  : x < e && xd < ed;
    if (!ok) return false;
  }
  return true;
}

std::string number_schema(const std::vector<NumberBound>& bounds) {
  std::string s = R"({"type": "number")";
  for (const NumberBound& b : bounds) s += ", \"" + b.key + "\": " + b.json;
  return s + "}";
}

const std::vector<std::vector<NumberBound>>& fractional_bounds() {
  static const std::vector<std::vector<NumberBound>> all = {
      {{"minimum", "0.5", "0.5"}, {"exclusiveMaximum", "2.25", "2.25"}},
      {{"minimum", "-1.5e-2", "-0.015"}},
      {{"exclusiveMinimum", "-2.75", "-2.75"}, {"maximum", "-0.125", "-0.125"}},
      {{"exclusiveMinimum", "-0.5", "-0.5"}, {"exclusiveMaximum", "5e-1", "0.5"}},  // straddling zero
      {{"minimum", "0", "0"}, {"exclusiveMaximum", "1E-3", "0.001"}},
      {{"exclusiveMinimum", "0", "0"}, {"maximum", "0.1", "0.1"}},
      {{"exclusiveMaximum", "0", "0"}, {"minimum", "-0.1", "-0.1"}},
      {{"minimum", "1234.5678", "1234.5678"}, {"maximum", "1234.5679", "1234.5679"}},
      {{"exclusiveMinimum", "3", "3"}},  // an integer, exclusive: 3.5 is inside
      {{"maximum", "-0.0", "0"}},
      {{"minimum", "2.5E1", "25"}, {"maximum", "25.000", "25"}},  // a single value
      {{"exclusiveMinimum", "0.1", "0.1"}, {"maximum", "0.3", "0.3"}},
      {{"exclusiveMaximum", "999999999999999.5", "999999999999999.5"}},  // doubles 0.125 apart here
      {{"minimum", "-1e-16", "-0.0000000000000001"}, {"maximum", "1e-16", "0.0000000000000001"}},
      {{"exclusiveMinimum", "-1.0000000000000002", "-1.0000000000000002"},
       {"exclusiveMaximum", "1.0000000000000002", "1.0000000000000002"}},
      {{"exclusiveMinimum", "9.5", "9.5"}, {"minimum", "9.75", "9.75"}, {"maximum", "12", "12"}},  // the tighter
  };
  return all;
}

// Fractional bounds (and exponent forms): over a grid of decimals B - 10^-k, B, B + 10^-k (k = 0..16) around
// each bound and zero, in their trailing-zero and -0 forms, the grammar accepts exactly those inside the bounds
// by scaled-integer arithmetic and by double comparison.
TEST(JsonSchema, NumberBoundsWithFractionsAreExact) {
  for (const auto& bounds : fractional_bounds()) {
    const std::string schema = number_schema(bounds);
    auto g = compile(schema);
    ASSERT_TRUE(g) << schema;
    std::vector<Scaled> centers = {0};
    for (const NumberBound& b : bounds) centers.push_back(scaled(b.exact));
    int accepted = 0;
    for (Scaled c : centers)
      for (int k = 0; k <= kFracDigits; ++k)
        for (int sign : {-1, 0, 1}) {
          const Scaled v = c + sign * pow10(kFracDigits - k);
          const std::string text = text_of(v);
          std::vector<std::string> forms = {text};
          const size_t dot = text.find('.');
          if (dot == std::string::npos) forms.insert(forms.end(), {text + ".0", text + ".000"});
          else if (text.size() - dot - 1 < kFracDigits) forms.push_back(text + "0");
          if (v == 0) forms.insert(forms.end(), {"-0", "-0.0", "-0.00"});
          for (const std::string& f : forms) {
            const bool acc = accepts(g, f);
            accepted += acc;
            EXPECT_EQ(acc, inside_bounds(bounds, f)) << schema << "\n" << f;
          }
        }
    EXPECT_GT(accepted, 0) << schema;
    EXPECT_FALSE(accepts(g, "1e0")) << schema;  // no exponent under bounds
  }
}

// Documents from random walks over the compiled grammar (a uniformly random allowed character at each step,
// ending where allowed) are inside the bounds, exactly and as doubles, and vary, fractions included.
TEST(JsonSchema, NumberBoundsRandomWalksStayInside) {
  std::mt19937 rng(7);
  const std::string alphabet = "-.0123456789";
  for (const auto& bounds : fractional_bounds()) {
    const std::string schema = number_schema(bounds);
    auto g = compile(schema);
    ASSERT_TRUE(g) << schema;
    std::set<std::string> seen;
    for (int walk = 0; walk < 60; ++walk) {
      GrammarMatcher m(g);
      std::string doc;
      for (;;) {
        std::vector<char> next;
        for (char c : alphabet) {
          GrammarMatcher t = m;
          if (t.feed(std::string(1, c))) next.push_back(c);
        }
        const bool can_end = m.complete();
        ASSERT_TRUE(can_end || !next.empty()) << schema << "\ndead end after " << doc;
        const size_t pick = std::uniform_int_distribution<size_t>(0, next.size() - (can_end ? 0 : 1))(rng);
        if (pick == next.size()) break;
        ASSERT_TRUE(m.feed(std::string(1, next[pick])));
        doc += next[pick];
      }
      EXPECT_TRUE(inside_bounds(bounds, doc)) << schema << "\n" << doc;
      seen.insert(doc);
    }
    const bool single = bounds.size() == 2 && bounds[0].exact == bounds[1].exact;
    EXPECT_GT(seen.size(), single ? 1u : 5u) << schema;  // 25: "25", "25.0", ...
    if (!single) {
      EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [](const std::string& d) { return d.find('.') != std::string::npos; }))
          << schema;
    }
  }
}

// Exclusive bounds where doubles are 0.125 apart: a number reads as the nearer double, and on the midpoint
// as the one with an even significand (999999999999999.5 is even, .375 and .625 are odd), so the midpoint is
// past an exclusive bound only when it reads inward.
TEST(JsonSchema, ExclusiveNumberBoundsFollowDoubleRounding) {
  struct Probe {
    const char* schema_bound;
    const char* text;
    bool accepted;
  };
  const std::vector<Probe> probes = {
      {R"("exclusiveMaximum": 999999999999999.5)", "999999999999999.4374999999999999", true},  // reads as .375
      {R"("exclusiveMaximum": 999999999999999.5)", "999999999999999.4375", false},             // a tie: .5
      {R"("exclusiveMaximum": 999999999999999.5)", "999999999999999.49", false},               // below, reads as .5
      {R"("exclusiveMinimum": 999999999999999.5)", "999999999999999.5625", false},             // a tie: .5
      {R"("exclusiveMinimum": 999999999999999.5)", "999999999999999.5625000000000001", true},  // reads as .625
      {R"("exclusiveMaximum": 999999999999999.625)", "999999999999999.5625", true},            // a tie: .5
      {R"("exclusiveMaximum": 999999999999999.625)", "999999999999999.5625000000000001", false},
      {R"("exclusiveMaximum": 1.0000000000000002)", "1.0000000000000001", true},               // reads as 1
      {R"("exclusiveMinimum": 1)", "1.0000000000000001", false},                               // reads as 1
      {R"("exclusiveMinimum": 1)", "1.0000000000000002", true},
      // docs/structured-output.md's examples
      {R"("exclusiveMaximum": 2.25)", "2.2499999999999997", true},
      {R"("exclusiveMaximum": 2.25)", "2.2499999999999998", false},
      {R"("exclusiveMinimum": 3)", "3.0000000000000003", true},
      {R"("exclusiveMinimum": 3)", "3.0000000000000002", false},
      {R"("exclusiveMinimum": 3)", "3.5", true},
  };
  for (const Probe& p : probes) {
    const std::string schema = std::string(R"({"type": "number", )") + p.schema_bound + "}";
    auto g = compile(schema);
    ASSERT_TRUE(g) << schema;
    EXPECT_EQ(accepts(g, p.text), p.accepted) << schema << "\n" << p.text;
  }
}

// Bounds past what the number rule writes: beyond 16 fraction digits, beyond 16 integer digits, the largest double.
TEST(JsonSchema, NumberBoundsBeyondTheRulesDigits) {
  auto tiny = compile(R"({"type": "number", "minimum": 1e-20})");
  ASSERT_TRUE(tiny);
  for (const char* yes : {"0.0000000000000001", "0.5", "7"}) EXPECT_TRUE(accepts(tiny, yes)) << yes;
  for (const char* no : {"0", "0.0", "-0", "0.0000000000000000", "-0.0000000000000001"}) EXPECT_FALSE(accepts(tiny, no)) << no;
  auto below = compile(R"({"type": "number", "exclusiveMaximum": -1e-300})");
  ASSERT_TRUE(below);
  EXPECT_TRUE(accepts(below, "-0.0000000000000001"));
  EXPECT_FALSE(accepts(below, "-0"));
  EXPECT_FALSE(accepts(below, "0"));
  auto wide = compile(R"({"type": "number", "minimum": -1e300, "maximum": 1e20})");
  ASSERT_TRUE(wide);
  EXPECT_TRUE(accepts(wide, "9999999999999999.9999999999999999"));
  EXPECT_TRUE(accepts(wide, "-9999999999999999.5"));
  EXPECT_FALSE(json_schema_to_gbnf(R"({"type": "number", "exclusiveMinimum": 1.7976931348623157e308})").ok());
  EXPECT_FALSE(json_schema_to_gbnf(R"({"type": "number", "minimum": 1e-20, "maximum": 1e-18})").ok());
}

TEST(JsonSchema, IntegerMultiplesAreExact) {
  for (int k : {2, 3, 7, 10, 12, 100}) {
    const std::string schema = R"({"type": "integer", "multipleOf": )" + std::to_string(k) + "}";
    auto g = compile(schema);
    ASSERT_TRUE(g) << schema;
    for (int64_t n = -1100; n <= 2100; ++n) EXPECT_EQ(accepts(g, std::to_string(n)), n % k == 0) << schema << " " << n;
    EXPECT_TRUE(accepts(g, std::to_string(int64_t{k} * 1234567890123))) << schema;
    EXPECT_FALSE(accepts(g, std::to_string(int64_t{k} * 1234567890123 + 1))) << schema;
    // At most 15 digits (below 2^53: validators reading doubles agree).
    const int64_t largest = 999'999'999'999'999 / k * k;
    EXPECT_TRUE(accepts(g, std::to_string(largest))) << schema;
    EXPECT_TRUE(accepts(g, "-" + std::to_string(largest))) << schema;
    EXPECT_FALSE(accepts(g, std::to_string(largest * 10))) << schema;
  }
}

TEST(JsonSchema, AnnotationsAreIgnored) {
  auto plain = json_schema_to_gbnf(R"({"type": "integer"})");
  auto annotated = json_schema_to_gbnf(R"({"$schema": "https://json-schema.org/draft/2020-12/schema",
      "title": "n", "description": "a number", "default": 1, "examples": [2], "$comment": "c", "type": "integer"})");
  ASSERT_TRUE(plain.ok() && annotated.ok());
  EXPECT_EQ(*plain, *annotated);
}

}  // namespace
}  // namespace hfs
