// tests/support/random_floats.h — random test data drawn straight from a generator's bits.
//
//   std::mt19937 rng(7);
//   hfs::test::Normal<float> d(0.0f, 1.0f);      // drop-in for hfs::test::Normal<float>
//   hfs::test::Uniform<float> u(-1.0f, 1.0f);    // drop-in for hfs::test::Uniform<float>
//   float x = d(rng), y = u(rng);
//
// Why not the std:: distributions: libstdc++'s std::generate_canonical, under every std:: real
// distribution, computes in long double, which on aarch64 is software quad precision — emulated under qemu
// (the aarch64 test stage) it made data generation the slowest part of several kernel tests. These draw
// the mantissa's worth of high bits (24 for float, 53 for double) and, for the normal, use Box-Muller in
// double. The values are fixed by the seed and the same on every platform (the std:: ones are not
// specified bit for bit across standard libraries either).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

namespace hfs::test {

// `bits` (1..64) high bits of fresh output of a full-range 32- or 64-bit generator (std::mt19937,
// std::mt19937_64), as an integer.
template <class Rng>
uint64_t random_high_bits(Rng& rng, int bits) {
  // The word size from max(), not result_type: std::mt19937's result_type is uint_fast32_t, 64 bits on
  // LP64 Linux.
  constexpr int kWord = std::bit_width(static_cast<uint64_t>(Rng::max()));
  static_assert(kWord == 32 || kWord == 64, "a 32- or 64-bit generator");
  static_assert(Rng::min() == 0 && static_cast<uint64_t>(Rng::max()) == (~uint64_t{0} >> (64 - kWord)),
                "a full-range generator");
  uint64_t v = static_cast<uint64_t>(rng());
  if (kWord == 32 && bits > 32) v = (v << 32) | static_cast<uint64_t>(rng());
  const int have = kWord == 32 && bits > 32 ? 64 : kWord;
  return v >> (have - bits);
}

// Uniform in [lo, hi): a [0, 1) value with T's mantissa of random bits, scaled.
template <class T>
class Uniform {
 public:
  Uniform(T lo, T hi) : lo_(lo), span_(hi - lo) {}
  template <class Rng>
  T operator()(Rng& rng) const {
    constexpr int kBits = std::numeric_limits<T>::digits;
    const T unit = static_cast<T>(random_high_bits(rng, kBits)) * std::ldexp(T(1), -kBits);  // [0, 1)
    return lo_ + span_ * unit;
  }

 private:
  T lo_, span_;
};

// Normal(mean, stddev) by Box-Muller in double; the second value of each pair is kept for the next call,
// as std::normal_distribution does.
template <class T>
class Normal {
 public:
  Normal(T mean, T stddev) : mean_(mean), stddev_(stddev) {}
  template <class Rng>
  T operator()(Rng& rng) {
    if (has_spare_) {
      has_spare_ = false;
      return static_cast<T>(mean_ + stddev_ * spare_);
    }
    // u1 in (0, 1] keeps log() finite; u2 in [0, 1).
    const double u1 = (static_cast<double>(random_high_bits(rng, 53)) + 1.0) * 0x1p-53;
    const double u2 = static_cast<double>(random_high_bits(rng, 53)) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return static_cast<T>(mean_ + stddev_ * (r * std::cos(a)));
  }

 private:
  double mean_, stddev_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace hfs::test
