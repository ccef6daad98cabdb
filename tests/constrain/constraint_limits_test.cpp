// ConstraintLimits: nesting that would exhaust the stack, repetitions that would exhaust memory and
// compiles that would take minutes all end quickly in an error naming the limit; constraints within the
// limits compile and match as before.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "constrain/json_schema.h"
#include "hfstatic/constraint.h"

namespace hfs {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string repeated(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// An error naming `limit`. Which limit refuses is what the tests check; the time bound only catches the
// unbounded paths, which took minutes or crashed, and is loose enough for a sanitizer build on a busy
// machine (the limits themselves are counts, except max_compile_ms).
template <typename R>
void expect_refused(const R& r, const std::string& limit, Clock::time_point t0) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find(limit), std::string::npos) << r.error().message();
  EXPECT_LT(seconds_since(t0), 60.0);
}

// The default limits with no compile-time budget, so that a count limit, not the clock, decides.
ConstraintLimits untimed() {
  ConstraintLimits l;
  l.max_compile_ms = 3'600'000;
  return l;
}

bool accepts(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.feed(s) && m.complete();
}

TEST(ConstraintLimits, DeeplyNestedJsonSchemaDocumentIsRefusedBeforeParsing) {
  for (const int n : {200, 100000}) {
    const std::string schema = repeated(R"({"type": "array", "items": )", n) + "true" + repeated("}", n);
    const auto t0 = Clock::now();
    expect_refused(Grammar::from_json_schema(schema), "max_nesting", t0);
    expect_refused(json_schema_to_gbnf(schema), "max_nesting", t0);
  }
  // A deep array of anything (not even a schema) too: the text is scanned before any parser sees it.
  const auto t0 = Clock::now();
  expect_refused(Grammar::from_json_schema(repeated("[", 1000000)), "max_nesting", t0);
}

TEST(ConstraintLimits, SchemaNestingIsCountedThroughRefChains) {
  // A flat document (three JSON levels) whose $refs chain 5000 schemas deep.
  std::string defs;
  for (int i = 0; i < 5000; ++i)
    defs += (i ? "," : "") + std::string(R"("d)") + std::to_string(i) + R"(": {"$ref": "#/$defs/d)" + std::to_string(i + 1) + "\"}";
  defs += R"(, "d5000": {"type": "integer"})";
  const std::string schema = R"({"$defs": {)" + defs + R"(}, "$ref": "#/$defs/d0"})";
  // Untimed: the nesting count must refuse it, whatever the clock; with the default 2 s compile budget an
  // emulated or overloaded run could end in the budget's error first.
  const auto t0 = Clock::now();
  auto r = Grammar::from_json_schema(schema, untimed());
  expect_refused(r, "max_nesting", t0);
  EXPECT_NE(r.error().message().find("json schema: /$defs/d"), std::string::npos) << r.error().message();
}

TEST(ConstraintLimits, NestingWithinTheLimitCompilesAndTheLimitIsConfigurable) {
  const int n = 30;  // 30 nested arrays: 31 schemas
  const std::string schema = repeated(R"({"type": "array", "items": )", n) + R"({"type": "integer"})" + repeated("}", n);
  auto g = Grammar::from_json_schema(schema);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(accepts(*g, repeated("[", n) + "7" + repeated("]", n)));
  EXPECT_FALSE(accepts(*g, repeated("[", n - 1) + "7" + repeated("]", n - 1)));
  ConstraintLimits tight;
  tight.max_nesting = 10;
  // The document itself: 31 levels of JSON, more than 2 × 10 + 1.
  auto refused = Grammar::from_json_schema(schema, tight);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("nests deeper than 21 levels"), std::string::npos) << refused.error().message();
  // A flat document whose $refs chain 12 schemas deep.
  std::string defs;
  for (int i = 0; i < 12; ++i)
    defs += (i ? "," : "") + std::string(R"("d)") + std::to_string(i) + R"(": {"$ref": "#/$defs/d)" + std::to_string(i + 1) + "\"}";
  const std::string chain = R"({"$defs": {)" + defs + R"(, "d12": {"type": "integer"}}, "$ref": "#/$defs/d0"})";
  auto deep = Grammar::from_json_schema(chain, tight);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message().find("nesting deeper than 10 levels (ConstraintLimits::max_nesting)"), std::string::npos)
      << deep.error().message();
  auto fine = Grammar::from_json_schema(chain);
  ASSERT_TRUE(fine.ok()) << fine.error().to_string();
  EXPECT_TRUE(accepts(*fine, "42"));
}

TEST(ConstraintLimits, DeeplyNestedRegexGroupsAreRefused) {
  for (const int n : {65, 200000}) {
    const auto t0 = Clock::now();
    auto r = Grammar::from_regex(repeated("(", n) + "a" + repeated(")", n));
    expect_refused(r, "max_nesting", t0);
    EXPECT_NE(r.error().message().find("regex: offset 64"), std::string::npos) << r.error().message();
  }
  auto ok = Grammar::from_regex(repeated("(", 64) + "a" + repeated(")", 64));
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_TRUE(accepts(*ok, "a"));
}

TEST(ConstraintLimits, DeeplyNestedGbnfGroupsAreRefused) {
  const auto t0 = Clock::now();
  auto r = Grammar::from_gbnf("root ::= " + repeated("(", 200000) + "\"a\"" + repeated(")", 200000) + "\n");
  expect_refused(r, "max_nesting", t0);
  EXPECT_NE(r.error().message().find("grammar line 1, column 74"), std::string::npos) << r.error().message();
}

TEST(ConstraintLimits, LongChainsOfRulesAreRefusedWithoutRecursing) {
  // r0 ::= r1, r1 ::= r2, ...: no nesting in the text, but the matcher would expand 200 000 rules deep.
  // Untimed: on a busy or emulated machine parsing 200 000 rules can outlast the default time budget, and
  // the count limit is what this test is about.
  std::string text = "root ::= r0\n";
  for (int i = 0; i < 200000; ++i) text += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  text += "r200000 ::= \"a\"\n";
  const auto t0 = Clock::now();
  auto r = Grammar::from_gbnf(text, "root", untimed());
  expect_refused(r, "nested rules", t0);
  EXPECT_NE(r.error().message().find("ConstraintLimits::max_nesting"), std::string::npos) << r.error().message();
  // A left-recursive chain that long is still named as left recursion, not a crash.
  std::string cyc = "root ::= r0\n";
  for (int i = 0; i < 100000; ++i) cyc += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"x\" | \"y\"\n";
  cyc += "r100000 ::= r0\n";
  auto c = Grammar::from_gbnf(cyc, "root", untimed());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("left recursion"), std::string::npos) << c.error().message().substr(0, 200);
}

TEST(ConstraintLimits, RepetitionsPastTheElementBudgetAreRefused) {
  const auto t0 = Clock::now();
  // A literal's characters are copied per repetition: 20 × 100000 × 10 rules would be 20 million elements.
  auto r = Grammar::from_gbnf(repeated("r ::= \"abcdefghijklmnopqrst\"{100000}\n", 1) + "root ::= r r r r r r r r r r\n",
                              "root", untimed());
  expect_refused(r, "ConstraintLimits::max_elements", t0);
  EXPECT_NE(r.error().message().find("grammar line 1"), std::string::npos) << r.error().message();
  auto re = Grammar::from_regex(repeated("a{100000}", 6), untimed());
  expect_refused(re, "ConstraintLimits::max_elements", t0);
  EXPECT_NE(re.error().message().find("regex: offset"), std::string::npos) << re.error().message();
  // A schema whose string lengths add up the same way.
  std::string props;
  for (int i = 0; i < 40; ++i)
    props += (i ? "," : "") + std::string(R"("p)") + std::to_string(i) + R"(": {"type": "string", "maxLength": 100000})";
  auto s = Grammar::from_json_schema(R"({"type": "object", "properties": {)" + props + "}}", untimed());
  expect_refused(s, "ConstraintLimits::max_elements", t0);
  ConstraintLimits more;
  more.max_elements = 50;
  auto small = Grammar::from_regex("a{60}", more);
  expect_refused(small, "50 elements", t0);
  auto fits = Grammar::from_regex("a{10}", more);
  ASSERT_TRUE(fits.ok()) << fits.error().to_string();
  EXPECT_TRUE(accepts(*fits, std::string(10, 'a')));
}

TEST(ConstraintLimits, FortyOptionalPropertiesCompileQuickly) {
  std::string props;
  for (int i = 0; i < 40; ++i)
    props += (i ? "," : "") + std::string(R"("p)") + std::to_string(i) + R"(": {"type": ["string", "integer", "null"]})";
  const auto t0 = Clock::now();
  auto g = Grammar::from_json_schema(R"({"type": "object", "properties": {)" + props + "}}", untimed());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_LT(seconds_since(t0), 10.0);  // 0.25 s under ASan; the shape that once took a minute
  EXPECT_TRUE(accepts(*g, R"({"p3": 4, "p39": null})"));
  EXPECT_FALSE(accepts(*g, R"({"p39": null, "p3": 4})"));  // the schema's order
}

TEST(ConstraintLimits, CompileTimeBudgetEndsAnExpensiveCompile) {
  ConstraintLimits quick;
  quick.max_compile_ms = 0;  // already past: the first check refuses
  const auto t0 = Clock::now();
  auto r = Grammar::from_json_schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})", quick);
  expect_refused(r, "compiling took longer than 0 ms (ConstraintLimits::max_compile_ms", t0);
  // A large grammar under a 1 ms budget: the first check passes, so the refusal shows the clock is read
  // during the expensive part of the compile, not only at its start.
  std::string text = "root ::= ";
  for (int i = 0; i < 20000; ++i) text += (i ? " | " : "") + std::string("\"k") + std::to_string(i) + "\" [a-z]{0,20}";
  ConstraintLimits ms1;
  ms1.max_compile_ms = 1;
  const auto t1 = Clock::now();
  auto big = Grammar::from_gbnf(text + "\n", "root", ms1);
  expect_refused(big, "compiling took longer than 1 ms (ConstraintLimits::max_compile_ms", t1);
}

TEST(ConstraintLimits, StateBudgetRefusesTheCharacterThatWouldExceedIt) {
  // (a|a|a|a)* reaches the same stacks along many paths; (a?){n}a{n} keeps n + 1 distinct stacks alive.
  auto g = Grammar::from_regex("(a?){40}a{40}");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(accepts(*g, std::string(40, 'a')));
  ConstraintLimits few;
  few.max_states = 8;
  auto bounded = Grammar::from_regex("(a?){40}a{40}", few);
  ASSERT_TRUE(bounded.ok()) << bounded.error().to_string();
  GrammarMatcher m(*bounded);
  bool refused = false;
  for (int i = 0; i < 80 && !refused; ++i) refused = !m.feed("a");
  EXPECT_TRUE(refused) << "more than 8 stacks were kept";
}

}  // namespace
}  // namespace hfs
