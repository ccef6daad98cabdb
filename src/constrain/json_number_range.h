// constrain/json_number_range.h — JSON Schema numeric bounds as exact regular languages (GBNF expressions).
//
// An integer range [lo, hi] becomes alternatives over the decimal digits, as llama.cpp's
// json-schema-to-grammar builds them: per digit count, a fixed-length range split at its first differing
// digit ("[1-9][0-9]{2}" for 100..999). Every string produced is in JSON's integer form ("-"? ("0" | [1-9]
// [0-9]*)) and its value is inside the range, and every such integer is produced: the constraint is exact.
// The integers are those of the unbounded integer rule too: at most 16 digits (|n| < 10^16).
//
//   std::string e = hfs::integer_range_gbnf(-5, 120);   // ("-" [1-5] | [0-9] | [1-9] [0-9] | "1" [01] [0-9] | "120")
#pragma once

#include <cstdint>
#include <string>

namespace hfs {

// The largest magnitude the integer rule writes: 16 digits.
inline constexpr int64_t kMaxJsonInteger = 9'999'999'999'999'999;

// The expression for the integers in [lo, hi] (lo ≤ hi, both within ±kMaxJsonInteger), without trailing
// whitespace.
std::string integer_range_gbnf(int64_t lo, int64_t hi);

}  // namespace hfs
