#include "constrain/json_number_range.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
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

// A digit string's set of continuations: whether it may end here, and the alternatives that go on (each
// non-empty).
struct Digits {
  bool end = false;
  std::vector<std::string> more;
};

// `head` then the rest `r` (nothing when `r` is empty).
void append(const std::string& head, const Digits& r, std::vector<std::string>& out) {
  if (r.more.empty()) {
    if (r.end) out.push_back(head);
    return;
  }
  out.push_back(head + " (" + [&] {
    std::string s;
    for (const std::string& a : r.more) s += (s.empty() ? "" : " | ") + a;
    return s;
  }() + ")" + (r.end ? "?" : ""));
}

std::string up_to(const std::string& unit, int n) {  // unit{1,n}
  return n == 1 ? unit : unit + "{1," + std::to_string(n) + "}";
}

// Fraction digit strings D of at most n digits with lo <= 0.D <= hi, where lo and hi are fraction digit
// strings without trailing zeros (nullopt: no bound on that side; lo "" is no bound either). On such strings
// lexicographic order is numeric order, so the first digit decides unless it equals the bound's.
Digits fraction_range(std::optional<std::string> lo, std::optional<std::string> hi, int n) {
  if (lo && lo->empty()) lo.reset();
  Digits d;
  d.end = !lo;  // 0.(nothing) = 0: inside when there is no lower bound (hi >= 0 always)
  if (n == 0) return d;
  if (!lo && !hi) {
    d.more.push_back(up_to("[0-9]", n));
    return d;
  }
  if (hi && hi->empty()) {  // 0.D <= 0: zeros only
    if (!lo) d.more.push_back(up_to("\"0\"", n));
    return d;
  }
  const char l0 = lo ? (*lo)[0] : '0', h0 = hi ? (*hi)[0] : '9';
  if (lo && hi && l0 > h0) return {};
  const auto rest = [](const std::optional<std::string>& b) {
    return b ? std::optional<std::string>(b->substr(1)) : std::nullopt;
  };
  if (lo && hi && l0 == h0) {
    append(digits_class(l0, l0), fraction_range(rest(lo), rest(hi), n - 1), d.more);
    return d;
  }
  if (lo) append(digits_class(l0, l0), fraction_range(rest(lo), std::nullopt, n - 1), d.more);
  const char free_lo = lo ? static_cast<char>(l0 + 1) : '0', free_hi = hi ? static_cast<char>(h0 - 1) : '9';
  if (free_lo <= free_hi) {
    const std::string tail = n > 1 ? " [0-9]{0," + std::to_string(n - 1) + "}" : "";
    d.more.push_back(digits_class(free_lo, free_hi) + tail);
  }
  if (hi) append(digits_class(h0, h0), fraction_range(std::nullopt, rest(hi), n - 1), d.more);
  return d;
}

// Integer parts [a, b] each followed by a fraction from `f`.
void with_fraction(int64_t a, int64_t b, const Digits& f, std::vector<std::string>& out) {
  if (a > b) return;
  std::string head = integer_range_gbnf(a, b);
  if (f.more.empty()) {
    if (f.end) out.push_back(head);
    return;
  }
  std::string alts;
  for (const std::string& m : f.more) alts += (alts.empty() ? "" : " | ") + m;
  out.push_back(head + " (\".\" " + (f.more.size() == 1 ? alts : "(" + alts + ")") + ")" + (f.end ? "?" : ""));
}

// Alternatives for the magnitudes (no sign) in [lo, hi], inclusive; lo nullopt is 0, hi nullopt is open.
void magnitude_decimal_range(std::optional<Decimal> lo, std::optional<Decimal> hi, std::vector<std::string>& out) {
  constexpr size_t kIntDigits = 16;
  if (lo && lo->int_digits.size() > kIntDigits) return;    // past every number the rule writes
  if (hi && hi->int_digits.size() > kIntDigits) hi.reset();  // beyond them all: open
  const int64_t ia = lo ? std::stoll(lo->int_digits) : 0, ib = hi ? std::stoll(hi->int_digits) : kMaxJsonInteger;
  const std::optional<std::string> fa = lo && !lo->frac_digits.empty() ? std::optional(lo->frac_digits) : std::nullopt;
  const std::optional<std::string> fb = hi ? std::optional(hi->frac_digits) : std::nullopt;
  const int n = kMaxJsonFractionDigits;
  if (ia > ib) return;
  if (ia == ib) return with_fraction(ia, ia, fraction_range(fa, fb, n), out);
  int64_t mid_lo = ia, mid_hi = ib;
  if (fa) {  // the lower bound's integer part: fractions from the bound's
    with_fraction(ia, ia, fraction_range(fa, std::nullopt, n), out);
    mid_lo = ia + 1;
  }
  if (fb) mid_hi = ib - 1;  // the upper bound's integer part: fractions up to the bound's
  with_fraction(mid_lo, mid_hi, fraction_range(std::nullopt, std::nullopt, n), out);
  if (fb) with_fraction(ib, ib, fraction_range(std::nullopt, fb, n), out);
}

// Decimal digits of n times `factor`^times (small factors: 2 or 5).
std::string times_power(uint64_t n, int factor, int64_t times) {
  std::vector<int> rev;  // little-endian digits
  for (; n > 0; n /= 10) rev.push_back(static_cast<int>(n % 10));
  if (rev.empty()) rev.push_back(0);
  for (int64_t t = 0; t < times; ++t) {
    int carry = 0;
    for (int& dgt : rev) {
      const int v = dgt * factor + carry;
      dgt = v % 10;
      carry = v / 10;
    }
    for (; carry > 0; carry /= 10) rev.push_back(carry % 10);
  }
  std::string s;
  for (auto it = rev.rbegin(); it != rev.rend(); ++it) s += static_cast<char>('0' + *it);
  return s;
}

// (a + b) / 2 exactly, for adjacent finite doubles (one sign, or one of them zero), and its text.
std::string midpoint_text(double a, double b) {
  const bool negative = a < 0 || b < 0;
  int ea = 0, eb = 0;
  // |x| = m * 2^e with m an integer below 2^53 (frexp's fraction has at most 53 significant bits).
  uint64_t ma = static_cast<uint64_t>(std::ldexp(std::frexp(std::fabs(a), &ea), 53));
  uint64_t mb = static_cast<uint64_t>(std::ldexp(std::frexp(std::fabs(b), &eb), 53));
  ea -= 53, eb -= 53;
  if (ma == 0) ea = eb;
  if (mb == 0) eb = ea;
  const int e0 = std::min(ea, eb);  // adjacent: the exponents differ by at most one
  const uint64_t sum = (ma << (ea - e0)) + (mb << (eb - e0));
  const int64_t k = int64_t{e0} - 1;  // (a + b) / 2 = sum * 2^k
  const std::string sign = negative ? "-" : "";
  if (k >= 0) return sign + times_power(sum, 2, k);
  return sign + times_power(sum, 5, -k) + "e-" + std::to_string(-k);  // sum * 5^-k * 10^k
}

// The nearest value on the grid of kMaxJsonFractionDigits fraction digits at or past `d` toward +inf (up) or
// -inf, strictly past it when `strict`.
Decimal grid_round(const Decimal& d, bool up, bool strict) {
  const size_t n = kMaxJsonFractionDigits;
  if (d.int_digits.size() > 16) return d;  // beyond every number written: it bounds them as it is
  std::string frac = d.frac_digits;
  const bool rest = frac.size() > n;  // digits below the grid (non-zero: no trailing zeros)
  frac.resize(n, '0');
  std::string digits = d.int_digits + frac;  // the magnitude in units of 10^-n, truncated
  const bool away = up != d.negative;  // the magnitude grows
  // Units of 10^-n added to the magnitude: the truncation is already below d when digits were cut.
  int step = away ? (rest || strict ? 1 : 0) : (!rest && strict ? -1 : 0);
  bool negative = d.negative;
  if (step < 0 && digits.find_first_not_of('0') == std::string::npos) {  // 0 strictly down: -10^-n
    negative = true;
    step = 1;
  }
  if (step > 0) {
    size_t i = digits.size();
    while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
    if (i == 0) digits.insert(digits.begin(), '1');
    else ++digits[i - 1];
  } else if (step < 0) {
    size_t i = digits.size();
    while (i > 0 && digits[i - 1] == '0') digits[--i] = '9';
    --digits[i - 1];  // non-zero: checked above
  }
  const std::string text = (negative ? "-" : "") + digits.substr(0, digits.size() - n) + "." + digits.substr(digits.size() - n);
  return *Decimal::parse(text);
}

}  // namespace

Decimal shortest_decimal(double d) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);  // shortest round trip
  return *Decimal::parse(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
}

Decimal exclusive_as_inclusive(double d, bool lower) {
  const double inward = std::nextafter(d, lower ? HUGE_VAL : -HUGE_VAL);
  if (std::isinf(inward)) return *Decimal::parse(lower ? "1e400" : "-1e400");  // nothing is past it
  const std::string mid = midpoint_text(d, inward);
  // On the midpoint, x reads as whichever double ties-to-even picks (strtod rounds correctly, as JSON.parse does).
  const bool tie_inward = std::strtod(mid.c_str(), nullptr) == inward;
  return grid_round(*Decimal::parse(mid), lower, !tie_inward);
}

std::optional<Decimal> Decimal::parse(std::string_view t) {
  Decimal d;
  size_t i = 0;
  const bool neg = i < t.size() && t[i] == '-';
  if (neg || (i < t.size() && t[i] == '+')) ++i;
  std::string digits;
  int64_t point = -1;  // digits before the decimal point
  for (; i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.'); ++i) {
    if (t[i] == '.') {
      if (point >= 0) return std::nullopt;
      point = static_cast<int64_t>(digits.size());
    } else {
      digits += t[i];
    }
  }
  if (digits.empty()) return std::nullopt;
  if (point < 0) point = static_cast<int64_t>(digits.size());
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    const bool eneg = i < t.size() && t[i] == '-';
    if (eneg || (i < t.size() && t[i] == '+')) ++i;
    int64_t e = 0;
    const size_t from = i;
    for (; i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])); ++i) {
      e = e * 10 + (t[i] - '0');
      if (e > 9999) return std::nullopt;
    }
    if (i == from) return std::nullopt;
    point += eneg ? -e : e;
  }
  if (i != t.size()) return std::nullopt;
  if (point <= 0) {
    d.int_digits = "0";
    d.frac_digits = std::string(static_cast<size_t>(-point), '0') + digits;
  } else if (point >= static_cast<int64_t>(digits.size())) {
    d.int_digits = digits + std::string(static_cast<size_t>(point) - digits.size(), '0');
  } else {
    d.int_digits = digits.substr(0, static_cast<size_t>(point));
    d.frac_digits = digits.substr(static_cast<size_t>(point));
  }
  d.int_digits.erase(0, std::min(d.int_digits.find_first_not_of('0'), d.int_digits.size() - 1));
  d.frac_digits.erase(d.frac_digits.find_last_not_of('0') + 1);  // npos + 1 == 0: all zeros go
  d.negative = neg && (d.int_digits != "0" || !d.frac_digits.empty());
  return d;
}

std::string Decimal::to_string() const {
  return (negative ? "-" : "") + int_digits + (frac_digits.empty() ? "" : "." + frac_digits);
}

int Decimal::compare(const Decimal& o) const {
  if (negative != o.negative) return negative ? -1 : 1;
  int mag = int_digits.size() != o.int_digits.size() ? (int_digits.size() < o.int_digits.size() ? -1 : 1)
                                                       : int_digits.compare(o.int_digits);
  if (mag == 0) mag = frac_digits.compare(o.frac_digits);  // no trailing zeros: lexicographic is numeric
  mag = mag < 0 ? -1 : mag > 0 ? 1 : 0;
  return negative ? -mag : mag;
}

std::string decimal_range_gbnf(const std::optional<Decimal>& lo, const std::optional<Decimal>& hi) {
  std::vector<std::string> alts;
  const auto magnitude = [](const Decimal& d) { return Decimal{false, d.int_digits, d.frac_digits}; };
  if (!(lo && hi && lo->compare(*hi) > 0)) {
    // Non-negative x: x in [max(lo, 0), hi], when hi >= 0.
    if (!hi || !hi->negative)
      magnitude_decimal_range(lo && !lo->negative ? std::optional(*lo) : std::nullopt, hi, alts);
    // Negative x = -m (and -0): m in [max(-hi, 0), -lo], when lo <= 0.
    if (!lo || lo->negative || (lo->int_digits == "0" && lo->frac_digits.empty())) {
      std::vector<std::string> neg;
      magnitude_decimal_range(hi && hi->negative ? std::optional(magnitude(*hi)) : std::nullopt,
                              lo ? std::optional(magnitude(*lo)) : std::nullopt, neg);
      if (!neg.empty()) alts.push_back("\"-\" " + alternatives(neg));
    }
  }
  if (alts.empty()) return "";
  return alternatives(alts);
}

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
