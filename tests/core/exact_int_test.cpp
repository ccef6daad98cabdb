// Exact integers: what strtoll accepts but a token id or count must not be.
#include "core/exact_int.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace hfs {
namespace {

TEST(ExactInt, DigitsInRangeAreTheirValue) {
  EXPECT_EQ(parse_exact_int("300", 0, INT32_MAX), 300);
  EXPECT_EQ(parse_exact_int("0", 0, INT32_MAX), 0);
  EXPECT_EQ(parse_exact_int("2147483647", 0, INT32_MAX), INT32_MAX);
  EXPECT_EQ(parse_exact_int("-5", -10, 10), -5);
  EXPECT_EQ(parse_exact_int("-9223372036854775808", INT64_MIN, 0), INT64_MIN);
  EXPECT_EQ(parse_exact_int("9223372036854775807", 0, INT64_MAX), INT64_MAX);
}

TEST(ExactInt, AnythingStrtollWouldStretchIsRefused) {
  for (const char* s : {" 300", "300 ", "+300", "0300", "00", "3e2", "300.0", "0x12C", "", "-", "-0", "３００", "30\n0",
                        "2147483648", "9223372036854775808", "99999999999999999999", "-1"})
    EXPECT_FALSE(parse_exact_int(s, 0, INT32_MAX).has_value()) << "'" << s << "'";
  EXPECT_FALSE(parse_exact_int("-11", -10, 10).has_value());
}

}  // namespace
}  // namespace hfs
