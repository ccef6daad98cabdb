#include "server/prompt_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace hfs::server {
namespace {

TEST(PromptCache, LongestSharedPrefixLeavingOneTokenToFeed) {
  PromptCache c;
  c.keep(1, {1, 5, 9});
  c.keep(2, {1, 5, 9, 12, 13});
  c.keep(3, {2, 5});
  auto m = c.best(std::vector<int32_t>{1, 5, 9, 12, 40});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->id, 2);
  EXPECT_EQ(m->length, 4);
  EXPECT_EQ(m->held, 5);
  // The whole prompt cached: one token is still fed (its logits start the generation).
  m = c.best(std::vector<int32_t>{1, 5, 9});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->length, 2);
  EXPECT_FALSE(c.best(std::vector<int32_t>{7, 5, 9}));
  EXPECT_FALSE(c.best(std::vector<int32_t>{1}));
}

TEST(PromptCache, EvictsLeastRecentlyUsedSparingTheMatch) {
  PromptCache c;
  c.keep(1, {1});
  c.keep(2, {2});
  c.keep(3, {3});
  c.touch(1);
  EXPECT_EQ(c.evict(2), 3);  // 2 is oldest but spared
  EXPECT_EQ(c.evict(), 2);
  EXPECT_EQ(c.evict(1), std::nullopt);
  c.forget(1);
  EXPECT_EQ(c.size(), 0u);
}

}  // namespace
}  // namespace hfs::server
