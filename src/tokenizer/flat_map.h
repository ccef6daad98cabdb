// Open-addressing uint64 → uint64 map for the BPE merge table (hot path: one lookup per adjacent pair).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tokenizer/huge_alloc.h"

namespace hfs::tok {

class FlatMap64 {
 public:
  // Capacity for `n` entries at a load factor of 0.7 (not a power of two: memory is what loading costs).
  void reserve(size_t n) {
    size_t cap = std::max<size_t>(16, n * 10 / 7 + 1);
    slots_.assign(cap, Entry{kEmpty, 0});
    size_ = 0;
  }
  // Inserts or overwrites.
  void put(uint64_t key, uint64_t val) {
    if ((size_ + 1) * 10 > slots_.size() * 7) grow();
    Entry& e = slots_[slot(key)];
    if (e.key == kEmpty) {
      e.key = key;
      ++size_;
    }
    e.val = val;
  }
  const uint64_t* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    const Entry& e = slots_[slot(key)];
    return e.key == kEmpty ? nullptr : &e.val;
  }
  size_t size() const { return size_; }
  void prefetch(uint64_t key) const {
    if (!slots_.empty())
      __builtin_prefetch(&slots_[static_cast<size_t>((static_cast<unsigned __int128>(hash(key)) * slots_.size()) >> 64)]);
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  size_t slot(uint64_t key) const {
    const size_t cap = slots_.size();
    size_t i = static_cast<size_t>((static_cast<unsigned __int128>(hash(key)) * cap) >> 64);
    while (slots_[i].key != kEmpty && slots_[i].key != key)
      if (++i == cap) i = 0;
    return i;
  }
  void grow() {
    auto old = std::move(slots_);
    reserve(old.empty() ? 16 : old.size());  // reserve(n) sizes for n / 0.7 entries: grows ~1.4x
    for (const Entry& e : old)
      if (e.key != kEmpty) put(e.key, e.val);
  }
  struct Entry {
    uint64_t key, val;
  };
  std::vector<Entry, HugeAlloc<Entry>> slots_;
  size_t size_ = 0;
};

}  // namespace hfs::tok
