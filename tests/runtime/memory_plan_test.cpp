#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "hfstatic/ext/method.h"

namespace hfs {
namespace {

size_t aligned(size_t n) { return (n + 63) / 64 * 64; }

// Independent checker: every pair of items with intersecting lifetimes has disjoint byte ranges.
std::string first_overlap(const std::vector<PlanItem>& items) {
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = i + 1; j < items.size(); ++j) {
      const PlanItem& a = items[i];
      const PlanItem& b = items[j];
      if (a.size == 0 || b.size == 0) continue;
      bool live_together = !(a.last < b.first || b.last < a.first);
      bool bytes_overlap = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      if (live_together && bytes_overlap) return std::to_string(i) + " and " + std::to_string(j);
    }
  return "";
}

TEST(PlanArena, DisjointLifetimesShareBytes) {
  std::vector<PlanItem> items = {{256, 0, 1, 99}, {256, 2, 3, 99}, {256, 4, 4, 99}};
  EXPECT_EQ(plan_arena(items), 256u);
  for (const PlanItem& it : items) EXPECT_EQ(it.offset, 0u);
}

TEST(PlanArena, HandComputedPlacement) {
  // Sorted by size: C(200) at 0; A(100, steps 0-2) does not meet C (3-4) → 0; B(64, 1-3) meets both → 256.
  std::vector<PlanItem> items = {{100, 0, 2}, {64, 1, 3}, {200, 3, 4}};
  EXPECT_EQ(plan_arena(items), 320u);
  EXPECT_EQ(items[0].offset, 0u);
  EXPECT_EQ(items[1].offset, 256u);
  EXPECT_EQ(items[2].offset, 0u);
}

TEST(PlanArena, FillsGapsBetweenLiveBlocks) {
  // Items whose lifetimes do not meet reuse the same offset above the long-lived ones:
  // X(64,0-5)@0, Y(64,0-5)@64, Z(64, 2-3) meets both → 128; W(64, 4-5) meets X, Y only → 128 too.
  std::vector<PlanItem> items = {{64, 0, 5}, {64, 0, 5}, {64, 2, 3}, {64, 4, 5}};
  EXPECT_EQ(plan_arena(items), 192u);
  EXPECT_EQ(items[2].offset, 128u);
  EXPECT_EQ(items[3].offset, 128u);
}

TEST(PlanArena, ZeroSizedAndEmpty) {
  std::vector<PlanItem> none;
  EXPECT_EQ(plan_arena(none), 0u);
  std::vector<PlanItem> items = {{0, 0, 9}, {10, 0, 9}};
  EXPECT_EQ(plan_arena(items), 10u);
  EXPECT_EQ(items[1].offset, 0u);
}

TEST(PlanArena, RandomizedNeverOverlapsLiveItems) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 600; ++round) {
    size_t n = 1 + rng() % 40;
    size_t steps = 1 + rng() % 30;
    std::vector<PlanItem> items(n);
    for (PlanItem& it : items) {
      it.size = rng() % 5 == 0 ? rng() % 64 : rng() % 5000;
      it.first = rng() % steps;
      it.last = it.first + rng() % (steps - it.first);
    }
    size_t total = plan_arena(items);
    ASSERT_EQ(first_overlap(items), "") << "round " << round;
    size_t sum = 0, end = 0;
    for (const PlanItem& it : items) {
      ASSERT_EQ(it.offset % 64, 0u);
      sum += aligned(it.size);
      end = std::max(end, it.offset + it.size);
    }
    EXPECT_EQ(total, end);
    EXPECT_LE(total, sum);
    // Lower bound: the bytes live at the busiest step must fit.
    for (size_t s = 0; s < steps; ++s) {
      size_t live = 0;
      for (const PlanItem& it : items)
        if (it.first <= s && s <= it.last) live += it.size;
      EXPECT_GE(total, live);
    }
  }
}

}  // namespace
}  // namespace hfs
