// constrain/json_number_range.h — JSON Schema numeric bounds as exact regular languages (GBNF expressions).
//
// An integer range [lo, hi] becomes alternatives over the decimal digits, as llama.cpp's
// json-schema-to-grammar builds them: per digit count, a fixed-length range split at its first differing
// digit ("[1-9][0-9]{2}" for 100..999). Every string produced is in JSON's integer form ("-"? ("0" | [1-9]
// [0-9]*)) and its value is inside the range, and every such integer is produced: the constraint is exact.
// The integers are those of the unbounded integer rule too: at most 16 digits (|n| < 10^16).
//
//   std::string e = hfs::integer_range_gbnf(-5, 120);   // ("-" [1-5] | [0-9] | [1-9] [0-9] | "1" [01] [0-9] | "120")
//
// A decimal range [lo, hi] (bounds with fractions, either side open) becomes the JSON numbers without an
// exponent inside it: per sign, the integer part as an integer range and, where it equals a bound's integer
// part, the fraction digits compared with the bound's digit by digit (on digit strings without trailing
// zeros, lexicographic order is numeric order: 0.5 < 0.51 < 0.6). Exact too, within the number rule's
// shape: every number of at most 16 integer and 16 fraction digits inside [lo, hi] is produced ("-0" and
// trailing zeros included), and nothing else.
//
//   auto lo = hfs::Decimal::parse("0.5"), hi = hfs::Decimal::parse("2.25");
//   std::string e = hfs::decimal_range_gbnf(lo, hi);   // "0" "." ("5" ... | [6-9] ...) | "1" ... | "2" ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hfs {

// The largest magnitude the integer rule writes: 16 digits.
inline constexpr int64_t kMaxJsonInteger = 9'999'999'999'999'999;

// The expression for the integers in [lo, hi] (lo ≤ hi, both within ±kMaxJsonInteger), without trailing
// whitespace.
std::string integer_range_gbnf(int64_t lo, int64_t hi);

// The most fraction digits the number rule writes.
inline constexpr int kMaxJsonFractionDigits = 16;

// A decimal number, exactly: no leading zeros in the integer part ("0" for none), no trailing zeros in the
// fraction, and zero is never negative (-0 == 0).
struct Decimal {
  bool negative = false;
  std::string int_digits = "0";
  std::string frac_digits;

  // From a JSON number's text, exponent included ("-1.5e-2", "12", "1E+300"); nullopt when it is not one
  // (or its exponent is past ±9999).
  static std::optional<Decimal> parse(std::string_view text);
  // Plain decimal text, no exponent ("-0.015").
  std::string to_string() const;
  // -1, 0 or 1 as this is below, equal to or above `o`.
  int compare(const Decimal& o) const;
};

// The shortest decimal that reads back as `d` (finite): what a bound's double stands for.
Decimal shortest_decimal(double d);

// An exclusive bound `d` (a double, as validators read it) as the inclusive bound, on the grid of
// kMaxJsonFractionDigits fraction digits, of the numbers x the rule writes that are past it both exactly and
// read as a double (x > d and double(x) > d for a lower bound; < for an upper one). The doubles beside d
// split where x rounds: x is past d exactly when it is past the midpoint between d and its neighbour inward
// (on it, when ties-to-even round it inward), so 1.0000000000000001 is below an exclusive maximum of
// 1.0000000000000002 (it reads as 1) but 2.2499999999999999 is not below 2.25 (it reads as 2.25).
Decimal exclusive_as_inclusive(double d, bool lower);

// The expression for the JSON numbers without an exponent, of at most 16 integer and kMaxJsonFractionDigits
// fraction digits, in [lo, hi] (inclusive; nullopt is an open side), without trailing whitespace; empty when
// there is none.
std::string decimal_range_gbnf(const std::optional<Decimal>& lo, const std::optional<Decimal>& hi);

}  // namespace hfs
