// GBNF and regex parsing (errors with positions) and the byte matcher on hand-computed strings.
#include <gtest/gtest.h>

#include "hfstatic/constraint.h"

namespace hfs {
namespace {

std::shared_ptr<const Grammar> gbnf(const std::string& text) {
  auto g = Grammar::from_gbnf(text);
  EXPECT_TRUE(g) << g.error().to_string();
  return g ? *g : nullptr;
}

std::shared_ptr<const Grammar> regex(const std::string& re) {
  auto g = Grammar::from_regex(re);
  EXPECT_TRUE(g) << g.error().to_string();
  return g ? *g : nullptr;
}

// Whether `s` is accepted as a whole (fed in one piece).
bool accepts(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.feed(s) && m.complete();
}
bool prefix(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  GrammarMatcher m(g);
  return m.feed(s);
}

std::string error_of(const std::string& text) {
  auto g = Grammar::from_gbnf(text);
  EXPECT_FALSE(g);
  if (g) return "";
  EXPECT_EQ(g.error().code(), ErrorCode::kInvalidArgument);
  return g.error().message();
}

TEST(GbnfParser, ErrorsNameLineColumnAndWhatWasExpected) {
  EXPECT_EQ(error_of("root ::= value\n\nvalue \"x\"\n"),
            "grammar line 3, column 7: expected '::=' after rule name \"value\", got '\"'");
  EXPECT_EQ(error_of("root ::= \"a\" other\n"), "grammar line 1, column 14: undefined rule \"other\"");
  EXPECT_EQ(error_of("root ::= [a-z\n"), "grammar line 1, column 14: expected ']', got end of line");
  EXPECT_EQ(error_of("root ::= (\"a\" \n"), "grammar line 2, column 1: expected ')' to close the group, got end of input");
  EXPECT_EQ(error_of("root ::= \"a\"{3,1}\n"), "grammar line 1, column 17: repetition maximum 1 is below the minimum 3");
  EXPECT_EQ(error_of("root ::= \"\\q\"\n"),
            "grammar line 1, column 11: unknown escape 'q' (known: \\n \\t \\r \\\\ \\\" \\[ \\] \\- \\^ \\xHH \\uHHHH "
            "\\UHHHHHHHH)");
  EXPECT_EQ(error_of("start ::= \"a\"\n"), "grammar: no rule named \"root\" (the start rule)");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\"\n"), "grammar line 2, column 1: rule \"root\" is defined twice");
  // Columns count characters: the é before the error is one column.
  EXPECT_EQ(error_of("root ::= \"é\" ]\n"), "grammar line 1, column 14: expected end of line after rule \"root\", got ']'");
}

TEST(GbnfParser, LeftRecursionIsRejectedByName) {
  EXPECT_EQ(error_of("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n"),
            "grammar: left recursion (\"expr\" → \"expr\" without consuming input); rewrite it as repetition, "
            "e.g. x ::= y (\"+\" y)*");
  // Through a nullable rule: opt can match nothing, so a reaches itself without input.
  EXPECT_NE(error_of("root ::= a\na ::= opt a \"x\" | \"y\"\nopt ::= \"z\"?\n").find("left recursion"), std::string::npos);
  // Unused rules are fine.
  EXPECT_TRUE(Grammar::from_gbnf("root ::= \"a\"\nunused ::= \"b\"\n"));
}

TEST(GbnfParser, LayoutFormsOfTheSyntax) {
  // An empty first alternative, a body on the next line, '|' ending a line and starting one, newlines
  // inside parentheses, comments anywhere, a backslash class, names with '-' and '_'.
  auto g = gbnf(
      "root ::=\n"
      "  item-list ( # a comment inside a group\n"
      "    \";\" sp item-list\n"
      "  )*\n"
      "item-list ::= \"[\" sp (item_1 (\",\" sp item_1){0,2})? \"]\"   # trailing comment\n"
      "item_1 ::= [a-z]+ |\n"
      "  [\\\\] [nt]\n"
      "  | \"'\" [^'\\n]* \"'\"\n"
      "sp ::= | \" \" | \"\\n\" [ \\t]{0,4}\n");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, "[]"));
  EXPECT_TRUE(accepts(g, "[ ab,\\n,'x y'];\n\t[q]"));
  EXPECT_FALSE(prefix(g, "[a,b,c,"));  // at most three items
  EXPECT_FALSE(prefix(g, "[\n     a"));  // at most four spaces after a newline
}

TEST(GrammarMatcher, EmptyMatchAlternationAndGroups) {
  auto g = gbnf("root ::= \"\" | \"ab\" | (\"c\" (\"d\" | \"e\"))\n");
  EXPECT_TRUE(accepts(g, ""));
  EXPECT_TRUE(accepts(g, "ab"));
  EXPECT_TRUE(accepts(g, "cd"));
  EXPECT_TRUE(accepts(g, "ce"));
  EXPECT_FALSE(accepts(g, "a"));
  EXPECT_TRUE(prefix(g, "a"));
  EXPECT_FALSE(prefix(g, "cf"));
  EXPECT_FALSE(prefix(g, "abx"));  // complete, nothing may follow
}

TEST(GrammarMatcher, RepetitionBounds) {
  auto zero = gbnf("root ::= \"x\" \"a\"{0} \"y\"\n");
  EXPECT_TRUE(accepts(zero, "xy"));
  EXPECT_FALSE(prefix(zero, "xa"));
  auto two3 = gbnf("root ::= [ab]{2,3}\n");
  EXPECT_FALSE(accepts(two3, "a"));
  EXPECT_TRUE(accepts(two3, "ab"));
  EXPECT_TRUE(accepts(two3, "bab"));
  EXPECT_FALSE(prefix(two3, "abab"));
  auto atleast = gbnf("root ::= \"a\"{2,} \"b\"? # comment\n");
  EXPECT_FALSE(accepts(atleast, "a"));
  EXPECT_TRUE(accepts(atleast, "aa"));
  EXPECT_TRUE(accepts(atleast, "aaaaab"));
  EXPECT_FALSE(prefix(atleast, "ab"));
  auto star = gbnf("root ::= (\"ab\")* \"c\"+\n");
  EXPECT_TRUE(accepts(star, "c"));
  EXPECT_TRUE(accepts(star, "ababccc"));
  EXPECT_FALSE(prefix(star, "aba" "c"));
}

TEST(GrammarMatcher, ClassesNegationEscapesAndNesting) {
  auto g = gbnf("root ::= item (\",\" item)*\nitem ::= [^,\\n\\x00-\\x1F] [0-9a-f]* | \"\\\"\" \"\\u00e9\"\n");
  EXPECT_TRUE(accepts(g, "x0f,y,\"\xC3\xA9"));
  EXPECT_FALSE(prefix(g, ",x"));
  EXPECT_FALSE(prefix(g, "\n"));
  EXPECT_FALSE(prefix(g, "xg"));
  auto dot = gbnf("root ::= . .\n");
  EXPECT_TRUE(accepts(dot, "\n\xF0\x9F\x98\x80"));  // GBNF's '.' is any character, \n included
}

TEST(GrammarMatcher, Utf8SplitAcrossFeeds) {
  auto g = gbnf("root ::= \"\\u00e9\" [\\u4e00-\\u9fff] \"\\U0001F600\"\n");  // é, a CJK character, 😀
  const std::string s = "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
  GrammarMatcher m(g);
  for (char c : s) {
    EXPECT_FALSE(m.complete());
    ASSERT_TRUE(m.feed(std::string_view(&c, 1)));
  }
  EXPECT_TRUE(m.complete());
  // A lead byte whose every completion falls outside the class is rejected at once, before the rest.
  GrammarMatcher bad(g);
  ASSERT_TRUE(bad.feed("\xC3\xA9"));
  EXPECT_FALSE(bad.feed("\xC3"));  // 2-byte characters are below U+4E00
  EXPECT_TRUE(bad.feed("\xE4"));   // failed feeds left the state unchanged; E4 xx xx is U+4000..U+4FFF
  EXPECT_FALSE(bad.feed("\x80"));  // E4 80 xx is U+4000..U+403F: below U+4E00
  EXPECT_TRUE(bad.feed("\xB8\xAD"));
}

TEST(GrammarMatcher, InvalidUtf8IsNeverAPrefix) {
  auto any = gbnf("root ::= .*\n");
  EXPECT_FALSE(prefix(any, "\x80"));
  EXPECT_FALSE(prefix(any, "\xFF"));
  EXPECT_FALSE(prefix(any, "\xC0\xAF"));      // overlong
  EXPECT_FALSE(prefix(any, "\xED\xA0\x80"));  // a surrogate
  EXPECT_TRUE(prefix(any, "\xE2\x82"));       // incomplete but completable
  GrammarMatcher m(any);
  ASSERT_TRUE(m.feed("\xE2\x82"));
  EXPECT_FALSE(m.complete());  // inside a character
}

TEST(RegexGrammar, WholeOutputMatches) {
  auto g = regex("[a-c]{2,4}-\\d{3}(x|yz)?");
  EXPECT_TRUE(accepts(g, "ab-123"));
  EXPECT_TRUE(accepts(g, "abca-123yz"));
  EXPECT_FALSE(accepts(g, "a-123"));
  EXPECT_FALSE(prefix(g, "abcab"));
  EXPECT_FALSE(accepts(g, "ab-12"));
  EXPECT_FALSE(prefix(g, "ab-123y1"));
  auto w = regex("^\\w+\\s[^\\d\\s]\\.?$");
  EXPECT_TRUE(accepts(w, "a_9 x."));
  EXPECT_FALSE(prefix(w, "a 1"));
  auto dot = regex("a.b");
  EXPECT_TRUE(accepts(dot, "a\xC3\xA9" "b"));
  EXPECT_FALSE(prefix(dot, "a\n"));  // a regex '.' excludes \n
  auto empty = regex("(ab)*");
  EXPECT_TRUE(accepts(empty, ""));
  EXPECT_TRUE(accepts(empty, "abab"));
}

TEST(RegexGrammar, RepeatedBodiesThatCanMatchNothing) {
  // A loop over a body that may be empty must neither hang nor be taken for left recursion.
  auto g = regex("(a|b?)+c");
  EXPECT_TRUE(accepts(g, "c"));
  EXPECT_TRUE(accepts(g, "abbac"));
  EXPECT_FALSE(prefix(g, "ad"));
  auto nested = regex("((a*)*|x)*y");
  EXPECT_TRUE(accepts(nested, "y"));
  EXPECT_TRUE(accepts(nested, "aaxay"));
  auto gb = gbnf("root ::= (\"a\"? \"b\"?)* \"c\"\n");
  EXPECT_TRUE(accepts(gb, "c"));
  EXPECT_TRUE(accepts(gb, "abbaac"));
  EXPECT_FALSE(prefix(gb, "ax"));
}

TEST(GrammarMatcher, PathologicallyAmbiguousGrammarsAreBounded) {
  // Nested loops: after n characters the parse can be inside any combination of the loops. The state is
  // capped (1024 stacks): past it the byte is refused rather than time and memory growing without bound.
  std::string text = "root ::= ";
  for (int i = 0; i < 14; ++i) text += "(";
  text += "\"a\"";
  for (int i = 0; i < 14; ++i) text += ")+";
  auto g = gbnf(text + "\n");
  GrammarMatcher m(g);
  int fed = 0;
  while (fed < 64 && m.feed("a")) ++fed;
  EXPECT_LT(fed, 64);
  EXPECT_GT(fed, 0);
  auto small = gbnf("root ::= ((\"a\")+)+\n");  // two levels stay far below the cap
  EXPECT_TRUE(accepts(small, std::string(200, 'a')));
}

TEST(RegexGrammar, UnsupportedConstructsAreNamed) {
  auto e = [](const char* re) {
    auto g = Grammar::from_regex(re);
    return g ? std::string() : g.error().message();
  };
  EXPECT_EQ(e("a(?=b)"), "regex: offset 2: group kind '(?=' is not supported (lookaround, flags and conditionals have no grammar form)");
  EXPECT_EQ(e("(a)\\1"), "regex: offset 4: escape '\\1' is not supported (word boundaries, backreferences and Unicode properties have no grammar form)");
  EXPECT_EQ(e("a{3,1}"), "regex: offset 6: quantifier maximum below its minimum");
  EXPECT_EQ(e("(ab"), "regex: offset 3: missing ')'");
  EXPECT_EQ(e("*a"), "regex: offset 0: quantifier '*' with nothing to repeat");
  EXPECT_EQ(e("a+**"), "regex: offset 2: multiple repeat (a quantifier after a quantifier, as Python's re refuses it)");
  EXPECT_TRUE(Grammar::from_regex("a+?b*+c{1,2}?"));  // lazy and possessive suffixes are not repeats
}

TEST(JsonObjectGrammar, AcceptsObjectsOnly) {
  auto g = Grammar::json_object();
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_TRUE(accepts(g, "{\"a\": [1, -2.5e3, true, null, {\"b\": \"\\u00e9\\n\"}], \"c\": \"x\"}"));
  EXPECT_FALSE(prefix(g, "[1]"));
  EXPECT_FALSE(prefix(g, "{\"a\": 01"));
  EXPECT_FALSE(prefix(g, "{\"a\" 1"));
  EXPECT_FALSE(prefix(g, "{\"a\": \"\x01"));
  EXPECT_FALSE(accepts(g, "{\"a\": 1"));
}

}  // namespace
}  // namespace hfs
