// Exact decimal integers: the digits themselves, checked for range without overflowing.
#include "core/exact_int.h"

namespace hfs {

std::optional<int64_t> parse_exact_int(std::string_view s, int64_t lo, int64_t hi) {
  const bool negative = !s.empty() && s.front() == '-';
  const std::string_view digits = negative ? s.substr(1) : s;
  if (digits.empty() || digits.size() > 19) return std::nullopt;
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;  // "0300": leading zeros
  if (negative && digits == "0") return std::nullopt;                    // "-0"
  uint64_t v = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');  // 19 digits fit in uint64_t
  }
  if (negative) {
    if (v > uint64_t{1} << 63) return std::nullopt;
    const int64_t n = v == uint64_t{1} << 63 ? INT64_MIN : -static_cast<int64_t>(v);
    if (n < lo || n > hi) return std::nullopt;
    return n;
  }
  if (v > static_cast<uint64_t>(INT64_MAX) || static_cast<int64_t>(v) < lo || static_cast<int64_t>(v) > hi) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace hfs
