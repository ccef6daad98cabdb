#include "backends/cpu_fast/huge_slab.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace hfs::cpu_fast {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kAlign = 64;

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

struct Slab {
  uintptr_t base = 0;
  size_t size = 0;
  std::map<size_t, size_t> free;  // offset -> length: disjoint, never adjacent (coalesced)
};

// `size` bytes (a multiple of kHugePage) at a kHugePage-aligned address: map one huge page more, then
// unmap the misaligned head and the rest of the tail.
uintptr_t map_aligned(size_t size) {
  void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return 0;
  const auto r = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t a = round_up(r, kHugePage);
  if (a > r) munmap(raw, a - r);
  if (const size_t tail = kHugePage - (a - r); tail > 0) munmap(reinterpret_cast<void*>(a + size), tail);
  madvise(reinterpret_cast<void*>(a), size, MADV_HUGEPAGE);  // advice only: without THP, small pages
  return a;
}

// First fit in one slab; 0 if no free range holds `bytes`.
uintptr_t take(Slab& s, size_t bytes) {
  for (auto it = s.free.begin(); it != s.free.end(); ++it) {
    if (it->second < bytes) continue;
    const size_t off = it->first, len = it->second;
    s.free.erase(it);
    if (len > bytes) s.free.emplace(off + bytes, len - bytes);
    return s.base + off;
  }
  return 0;
}

}  // namespace

struct HugeSlabs::State {
  mutable std::mutex mu;
  std::vector<Slab> slabs;  // a handful: a 0.5B model's packed weights fill two or three
  size_t mapped = 0;
};

HugeSlabs::HugeSlabs() : s_(std::make_unique<State>()) {}

HugeSlabs::~HugeSlabs() {
  for (const Slab& s : s_->slabs) munmap(reinterpret_cast<void*>(s.base), s.size);
}

HugeSlabs& HugeSlabs::global() {
  static HugeSlabs* g = new HugeSlabs;
  return *g;
}

void* HugeSlabs::alloc(size_t bytes) {
  bytes = round_up(std::max<size_t>(bytes, 1), kAlign);
  std::lock_guard<std::mutex> lock(s_->mu);
  for (Slab& s : s_->slabs)
    if (const uintptr_t p = take(s, bytes)) return reinterpret_cast<void*>(p);
  Slab s;
  s.size = std::max(kSlabBytes, round_up(bytes, kHugePage));
  s.base = map_aligned(s.size);
  if (s.base == 0 && s.size > round_up(bytes, kHugePage)) {
    // Strict overcommit (vm.overcommit_memory=2) counts the whole reservation: ask for this block only.
    s.size = round_up(bytes, kHugePage);
    s.base = map_aligned(s.size);
  }
  if (s.base == 0) return nullptr;
  s.free.emplace(0, s.size);
  const uintptr_t p = take(s, bytes);
  s_->mapped += s.size;
  s_->slabs.push_back(std::move(s));
  return reinterpret_cast<void*>(p);
}

void HugeSlabs::free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  bytes = round_up(std::max<size_t>(bytes, 1), kAlign);
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(s_->mu);
  for (auto si = s_->slabs.begin(); si != s_->slabs.end(); ++si) {
    Slab& s = *si;
    if (p < s.base || p >= s.base + s.size) continue;
    size_t off = p - s.base, len = bytes;
    auto next = s.free.lower_bound(off);
    if (next != s.free.end() && next->first == off + len) {  // merge with the range after
      len += next->second;
      next = s.free.erase(next);
    }
    if (next != s.free.begin()) {  // and the one before
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        len += prev->second;
        s.free.erase(prev);
      }
    }
    if (off == 0 && len == s.size) {  // empty: give the pages back
      munmap(reinterpret_cast<void*>(s.base), s.size);
      s_->mapped -= s.size;
      s_->slabs.erase(si);
      return;
    }
    s.free.emplace(off, len);
    return;
  }
}

size_t HugeSlabs::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->mapped;
}

namespace {

void release_slab_block(void* data, size_t bytes, int) { HugeSlabs::global().free(data, bytes); }

class HugePageAllocator final : public Allocator {
 public:
  std::string_view name() const override { return "cpu_fast_huge_pages"; }

  Result<Buffer> allocate(size_t bytes) override {
    if (bytes < kSlabMinBytes || bytes > SIZE_MAX / 2) return heap_allocator()->allocate(bytes);  // and its errors
    // Whole cache lines, so that vector kernels may read a block's tail (as the heap allocator rounds).
    const size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    void* p = HugeSlabs::global().alloc(rounded);
    if (p == nullptr)
      return make_error(ErrorCode::kResourceExhausted, "cpu_fast allocator: cannot map " + std::to_string(bytes) + " bytes");
    std::memset(p, 0, rounded);
    return Buffer(p, bytes, -1, &release_slab_block);
  }
};

}  // namespace

std::shared_ptr<Allocator> huge_page_allocator() {
  static const std::shared_ptr<Allocator> a = std::make_shared<HugePageAllocator>();
  return a;
}

}  // namespace hfs::cpu_fast
