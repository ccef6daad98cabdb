// Heap allocator: 64-byte aligned (cache line / widest SIMD load), zero-filled so that planned arenas and
// fresh I/O buffers never expose stale bytes.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "hfstatic/ext/allocator.h"

namespace hfs {
namespace {

void release_heap(void* data, size_t, int) { std::free(data); }

class HeapAllocator final : public Allocator {
 public:
  std::string_view name() const override { return "heap"; }

  Result<Buffer> allocate(size_t bytes) override {
    if (bytes == 0) return Buffer();
    // Round up so that a block of `bytes` never ends mid cache line (vector kernels may read the tail).
    if (bytes > SIZE_MAX - (kBufferAlignment - 1))
      return make_error(ErrorCode::kResourceExhausted, "heap allocator: " + std::to_string(bytes) + " bytes is too large");
    size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    void* p = nullptr;
    int rc = posix_memalign(&p, kBufferAlignment, rounded);
    if (rc != 0 || p == nullptr)
      return make_error(ErrorCode::kResourceExhausted, "heap allocator: cannot allocate " + std::to_string(bytes) +
                                                           " bytes: " + std::strerror(rc ? rc : ENOMEM));
    std::memset(p, 0, rounded);
    return Buffer(p, bytes, -1, &release_heap);
  }
};

}  // namespace

std::shared_ptr<Allocator> heap_allocator() {
  static const std::shared_ptr<Allocator> a = std::make_shared<HeapAllocator>();
  return a;
}

}  // namespace hfs
