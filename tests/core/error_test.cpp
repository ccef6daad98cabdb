#include "hfstatic/error.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace hfs {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::kOutOfRange, "expected > 0, got " + std::to_string(v));
  return v;
}

// Two assignments in one scope: each gets its own hidden Result, so this must compile and add.
Result<int> add_positive(int a, int b) {
  HFS_ASSIGN_OR_RETURN(int x, parse_positive(a));
  HFS_ASSIGN_OR_RETURN(const auto y, parse_positive(b));
  return x + y;
}

TEST(AssignOrReturn, DeclaresTheValueOrReturnsTheError) {
  auto ok = add_positive(2, 3);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 5);

  auto bad = add_positive(2, -7);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(bad.error().message(), "expected > 0, got -7");
}

Result<std::unique_ptr<std::vector<int>>> make_vec(bool fail) {
  if (fail) return make_error(ErrorCode::kInternal, "no vector");
  return std::make_unique<std::vector<int>>(std::vector<int>{1, 2, 3});
}

// A move-only value is moved out of the Result, not copied.
Result<size_t> vec_size(bool fail) {
  HFS_ASSIGN_OR_RETURN(auto v, make_vec(fail));
  static_assert(std::is_same_v<decltype(v), std::unique_ptr<std::vector<int>>>);
  return v->size();
}

TEST(AssignOrReturn, MovesMoveOnlyValues) {
  auto ok = vec_size(false);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3u);
  auto bad = vec_size(true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "no vector");
}

// The context expression runs only on failure and prefixes the message; the code is kept.
Status check_with_context(int v, int* context_calls) {
  auto context = [&] {
    ++*context_calls;
    return std::string("value ") + std::to_string(v);
  };
  HFS_ASSIGN_OR_RETURN_CTX(int x, parse_positive(v), context());
  if (x != v) return make_error(ErrorCode::kInternal, "value changed");
  return Ok{};
}

TEST(AssignOrReturn, ContextIsAddedOnlyOnFailure) {
  int calls = 0;
  EXPECT_TRUE(check_with_context(4, &calls).ok());
  EXPECT_EQ(calls, 0);

  Status st = check_with_context(-1, &calls);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(st.error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(st.error().message(), "value -1: expected > 0, got -1");
}

Status try_with_context(int v, int* calls) {
  auto context = [&] {
    ++*calls;
    return "check " + std::to_string(v);
  };
  HFS_TRY_CTX(parse_positive(v), context());
  return Ok{};
}

TEST(TryWithContext, ContextIsAddedOnlyOnFailure) {
  int calls = 0;
  EXPECT_TRUE(try_with_context(3, &calls).ok());
  EXPECT_EQ(calls, 0);
  Status st = try_with_context(0, &calls);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(st.error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(st.error().message(), "check 0: expected > 0, got 0");
}

}  // namespace
}  // namespace hfs

TEST(ResultAccess, ValueOrReturnsTheFallbackOnAnError) {
  hfs::Result<int> bad = hfs::make_error(hfs::ErrorCode::kNotFound, "no such tensor 'w_q_0'");
  hfs::Result<int> good = 7;
  EXPECT_EQ(bad.value_or(-1), -1);
  EXPECT_EQ(good.value_or(-1), 7);
  hfs::Result<std::string> moved = std::string("abc");
  EXPECT_EQ(std::move(moved).value_or("x"), "abc");
}

// value() on an error is a caller's bug: it aborts naming the error, and never throws bad_variant_access.
TEST(ResultAccessDeathTest, ValueOnAnErrorAbortsWithItsMessage) {
  hfs::Result<int> bad = hfs::make_error(hfs::ErrorCode::kNotFound, "no such tensor 'w_q_0'");
  EXPECT_DEATH((void)bad.value(), "Result::value\\(\\) called on an error: not_found: no such tensor 'w_q_0'");
  EXPECT_DEATH((void)*bad, "not_found: no such tensor");
  hfs::Result<int> good = 7;
  EXPECT_DEATH((void)good.error(), "Result::error\\(\\) called on a value");
}
