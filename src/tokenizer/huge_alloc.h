// Allocator for the big load-time tables (symbol index, merge table): blocks of 1 MiB and more are
// 2 MiB-aligned and advised as transparent huge pages. Random probes into multi-MiB tables otherwise
// pay a TLB miss (and, on virtual machines, a costly first-touch fault) per 4 KiB page.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace hfs::tok {

template <typename T>
struct HugeAlloc {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;
  HugeAlloc() = default;
  template <typename U>
  HugeAlloc(const HugeAlloc<U>&) {}  // NOLINT: allocator rebinding
  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < (size_t{1} << 20)) return static_cast<T*>(::operator new(bytes));
    size_t rounded = (bytes + kHuge - 1) & ~(kHuge - 1);
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure just means small pages
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < (size_t{1} << 20)) ::operator delete(p);
    else std::free(p);
  }
  template <typename U>
  bool operator==(const HugeAlloc<U>&) const { return true; }
};

}  // namespace hfs::tok
