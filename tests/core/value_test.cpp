#include <gtest/gtest.h>

#include "hfstatic/value.h"

namespace hfs {
namespace {

TEST(Value, RoundTripsJson) {
  Value v = Value::object();
  v.set("n", Value(int64_t{5}));
  v.set("f", Value(0.25));
  v.set("s", Value("x"));
  v.set("a", Value::int_array({1, 2, 3}));
  auto back = Value::parse_json(v.to_json());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
  EXPECT_EQ(back->get("n")->as_int(), 5);
  EXPECT_EQ(back->get("a")->as_array()[2].as_int(), 3);
}

TEST(Value, CopiesAreIndependent) {
  Value a = Value::object();
  a.set("k", Value(1));
  Value b = a;
  b.set("k", Value(2));
  EXPECT_EQ(a.get("k")->as_int(), 1);
  EXPECT_EQ(b.get("k")->as_int(), 2);
}

TEST(Value, RejectsDeepNestingAndGarbage) {
  std::string deep(100, '[');
  EXPECT_EQ(Value::parse_json(deep).error().code(), ErrorCode::kBadManifest);
  EXPECT_FALSE(Value::parse_json("{\"a\":").ok());
  EXPECT_FALSE(Value::parse_json("{}", 1).ok());
}

}  // namespace
}  // namespace hfs
