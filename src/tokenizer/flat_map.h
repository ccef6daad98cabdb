// Open-addressing uint64 → uint64 map for the BPE merge table (hot path: one lookup per adjacent pair).
#pragma once

#include <cstdint>
#include <vector>

namespace hfs::tok {

class FlatMap64 {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, 0);
    mask_ = cap - 1;
    size_ = 0;
  }
  // Inserts or overwrites.
  void put(uint64_t key, uint64_t val) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    size_t i = slot(key);
    if (keys_[i] == kEmpty) {
      keys_[i] = key;
      ++size_;
    }
    vals_[i] = val;
  }
  const uint64_t* find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    size_t i = slot(key);
    return keys_[i] == kEmpty ? nullptr : &vals_[i];
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  size_t slot(uint64_t key) const {
    size_t i = hash(key) & mask_;
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask_;
    return i;
  }
  void grow() {
    std::vector<uint64_t> k = std::move(keys_), v = std::move(vals_);
    reserve(k.empty() ? 16 : k.size());
    for (size_t i = 0; i < k.size(); ++i)
      if (k[i] != kEmpty) put(k[i], v[i]);
  }
  std::vector<uint64_t> keys_, vals_;
  size_t mask_ = 0, size_ = 0;
};

}  // namespace hfs::tok
