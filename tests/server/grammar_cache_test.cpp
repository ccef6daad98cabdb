// GrammarCache (server/grammar_cache.h): one compilation per (kind, schema text) while the entry is kept,
// least recently used entries dropped past the capacity, failures never kept, and the cached grammar is the
// compiled one (it accepts what the schema allows).
#include "server/grammar_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace hfs::server {
namespace {

// Compiles `text` as a regex, counting the compilations.
GrammarCache::Compile counting(const std::string& text, int& calls) {
  return [&calls, text]() -> Result<std::shared_ptr<const Grammar>> {
    ++calls;
    return Grammar::from_regex(text);
  };
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.feed(s) && m.complete();
}

TEST(GrammarCache, SecondRequestForTheSameTextIsAHitWithoutCompiling) {
  GrammarCache cache(4);
  int calls = 0;
  auto a = cache.get("regex", "a+", counting("a+", calls));
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_FALSE(a->hit);
  auto b = cache.get("regex", "a+", counting("a+", calls));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->hit);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(a->grammar, b->grammar);
  EXPECT_TRUE(accepts(b->grammar, "aaa"));
  EXPECT_FALSE(accepts(b->grammar, "ab"));
  // The kind is part of the key: the same text of another kind is compiled on its own.
  auto c = cache.get("other", "a+", counting("a+", calls));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->hit);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(GrammarCache, LeastRecentlyUsedEntryGoesFirst) {
  GrammarCache cache(2);
  int calls = 0;
  ASSERT_TRUE(cache.get("regex", "a", counting("a", calls)).ok());
  ASSERT_TRUE(cache.get("regex", "b", counting("b", calls)).ok());
  EXPECT_TRUE(cache.get("regex", "a", counting("a", calls))->hit);   // a is now the most recent
  EXPECT_FALSE(cache.get("regex", "c", counting("c", calls))->hit);  // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.get("regex", "a", counting("a", calls))->hit);
  EXPECT_TRUE(cache.get("regex", "c", counting("c", calls))->hit);
  EXPECT_FALSE(cache.get("regex", "b", counting("b", calls))->hit);  // compiled again
  EXPECT_EQ(calls, 4);
  cache.set_capacity(1);  // shrinking drops the oldest at once
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.get("regex", "b", counting("b", calls))->hit);
}

TEST(GrammarCache, CapacityZeroKeepsNothingAndFailuresAreNotKept) {
  GrammarCache none(0);
  int calls = 0;
  EXPECT_FALSE(none.get("regex", "a", counting("a", calls))->hit);
  EXPECT_FALSE(none.get("regex", "a", counting("a", calls))->hit);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(none.size(), 0u);

  GrammarCache cache(4);
  calls = 0;
  auto bad = cache.get("regex", "(?=a)", counting("(?=a)", calls));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'(?='"), std::string::npos) << bad.error().message();
  EXPECT_FALSE(cache.get("regex", "(?=a)", counting("(?=a)", calls)).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(GrammarCache, ThreadsShareEntries) {
  GrammarCache cache(8);
  std::atomic<int> compiled{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string text = "x{" + std::to_string((t + i) % 4) + "}";
        auto got = cache.get("regex", text, [&] {
          ++compiled;
          return Grammar::from_regex(text);
        });
        ASSERT_TRUE(got.ok());
        if (got->hit) ++hits;
        ASSERT_TRUE(accepts(got->grammar, std::string(static_cast<size_t>((t + i) % 4), 'x')));
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(compiled + hits, 400);
  EXPECT_GE(hits, 400 - 8 * 4);  // at most one compilation per thread and text (misses that raced)
}

TEST(GrammarCache, BytesBudgetDropsLeastRecentlyUsedAndSkipsGrammarsLargerThanIt) {
  int calls = 0;
  // The entry's size counts its compiled tables: a longer pattern is a larger grammar.
  auto small = Grammar::from_regex("a+");
  auto large = Grammar::from_regex("(abc|def|ghi|jkl|mno|pqr|stu|vwx)+[0-9]{2,9}");
  ASSERT_TRUE(small.ok() && large.ok());
  const size_t one = GrammarCache::entry_bytes(std::string("regex") + '\0' + "a+", **small);
  EXPECT_GT(GrammarCache::entry_bytes("k", **large), GrammarCache::entry_bytes("k", **small));
  GrammarCache cache(64, one + one / 2);  // room for one small entry, not two
  ASSERT_TRUE(cache.get("regex", "a+", counting("a+", calls)).ok());
  EXPECT_EQ(cache.bytes(), one);
  ASSERT_TRUE(cache.get("regex", "b+", counting("b+", calls)).ok());
  EXPECT_EQ(cache.size(), 1u);  // a+ went
  EXPECT_LE(cache.bytes(), one + one / 2);
  EXPECT_TRUE(cache.get("regex", "b+", counting("b+", calls))->hit);
  EXPECT_FALSE(cache.get("regex", "a+", counting("a+", calls))->hit);
  // Larger than the whole budget: compiled and returned, never kept, and nothing else is evicted for it.
  const std::string big = "(abc|def|ghi|jkl|mno|pqr|stu|vwx)+[0-9]{2,9}";
  auto got = cache.get("regex", big, counting(big, calls));
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(accepts(got->grammar, "abcdef12"));
  EXPECT_FALSE(cache.get("regex", big, counting(big, calls))->hit);
  EXPECT_TRUE(cache.get("regex", "a+", counting("a+", calls))->hit);
}

}  // namespace
}  // namespace hfs::server
