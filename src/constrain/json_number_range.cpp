#include "constrain/json_number_range.h"

#include <string>
#include <vector>

namespace hfs {
namespace {

std::string digits_class(char a, char b) {
  if (a == b) return std::string("\"") + a + "\"";
  return std::string("[") + a + "-" + b + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

// Alternatives (joined by " | ") for the digit strings of one length from x to y (x ≤ y, same length).
void same_length(const std::string& x, const std::string& y, const std::string& prefix, std::vector<std::string>& out) {
  const size_t n = x.size();
  if (n == 0) {
    out.push_back(prefix.empty() ? "\"\"" : prefix);
    return;
  }
  auto join = [&](const std::string& head) { return prefix.empty() ? head : prefix + " " + head; };
  if (x[0] == y[0]) return same_length(x.substr(1), y.substr(1), join(digits_class(x[0], x[0])), out);
  const std::string zeros(n - 1, '0'), nines(n - 1, '9');
  const bool x_low = x.substr(1) == zeros, y_high = y.substr(1) == nines;
  // x[0]... up to x[0]99..9 (or from x[0]00..0 with the middle block when x's rest is all zeros)
  const char mid_lo = x_low ? x[0] : static_cast<char>(x[0] + 1);
  const char mid_hi = y_high ? y[0] : static_cast<char>(y[0] - 1);
  if (!x_low) same_length(x.substr(1), nines, join(digits_class(x[0], x[0])), out);
  if (mid_lo <= mid_hi) {
    const std::string rest = any_digits(n - 1);
    out.push_back(join(digits_class(mid_lo, mid_hi)) + (rest.empty() ? "" : " " + rest));
  }
  if (!y_high) same_length(zeros, y.substr(1), join(digits_class(y[0], y[0])), out);
}

// Alternatives for the decimal forms (no leading zeros) of a..b, 0 ≤ a ≤ b.
void magnitude_range(int64_t a, int64_t b, std::vector<std::string>& out) {
  int64_t lo_of_len = 0, hi_of_len = 9;
  for (size_t len = 1; len <= 19 && lo_of_len <= b; ++len) {
    const int64_t x = std::max(a, lo_of_len), y = std::min(b, hi_of_len);
    if (x <= y) same_length(std::to_string(x), std::to_string(y), "", out);
    if (hi_of_len > INT64_MAX / 10) break;
    lo_of_len = hi_of_len + 1;
    hi_of_len = hi_of_len * 10 + 9;
  }
}

std::string alternatives(const std::vector<std::string>& alts) {
  std::string s;
  for (const std::string& a : alts) s += (s.empty() ? "" : " | ") + a;
  return alts.size() == 1 ? s : "(" + s + ")";
}

}  // namespace

std::string integer_range_gbnf(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  if (lo < 0) {  // negatives: "-" and the magnitudes max(1, -hi) .. -lo
    std::vector<std::string> neg;
    magnitude_range(std::max<int64_t>(1, hi < 0 ? -hi : 1), -lo, neg);
    alts.push_back("\"-\" " + alternatives(neg));
  }
  if (hi >= 0) magnitude_range(std::max<int64_t>(lo, 0), hi, alts);
  return alternatives(alts);
}

}  // namespace hfs
