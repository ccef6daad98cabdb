// hfstatic/ext/allocator.h — where I/O buffers and arenas live.
//
// A backend names the allocator it wants its I/O buffers in (e.g. device-visible shared memory); the
// runner asks the selected backend and never knows which one it got.
//
//   std::shared_ptr<hfs::Allocator> a = hfs::heap_allocator();
//   hfs::Result<hfs::Buffer> b = a->allocate(4096);      // 64-byte aligned, zero-filled
//   float* p = static_cast<float*>(b->data());
//
//   auto shm = hfs::shared_memory_allocator();
//   auto sb = shm->allocate(1 << 20);
//   int fd = sb->fd();   // another process can mmap(fd) and see the same bytes
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// A caller can also hand the runner its own allocator for every I/O buffer (IOManagerOptions::io_allocator,
// Python `Runner(io_allocator=...)`): implement Allocator, return zero-filled memory aligned to
// kBufferAlignment, and give the Buffer a release function or an owner that frees it.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"

namespace hfs {

inline constexpr size_t kBufferAlignment = 64;

// An owned allocation (RAII). Move-only. Memory returned by every allocator here is zero-filled.
class HFS_API Buffer {
 public:
  Buffer() = default;
  Buffer(void* data, size_t size, int fd, void (*release)(void*, size_t, int))
      : data_(data), size_(size), fd_(fd), release_(release) {}
  // Memory that `owner` keeps alive (a stateful allocator's handle: a pool slot, a Python object).
  Buffer(void* data, size_t size, std::shared_ptr<void> owner) : data_(data), size_(size), owner_(std::move(owner)) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }  // -1 unless the memory is shareable (shared-memory allocator)
  void reset();

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  void (*release_)(void*, size_t, int) = nullptr;
  std::shared_ptr<void> owner_;
};

class HFS_API Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string_view name() const = 0;
  // At least `bytes` zero-filled bytes aligned to kBufferAlignment; `bytes` == 0 may return an empty
  // buffer. Fails with kResourceExhausted rather than aborting.
  [[nodiscard]] virtual Result<Buffer> allocate(size_t bytes) = 0;
};

// 64-byte-aligned, zero-filled heap memory.
HFS_API std::shared_ptr<Allocator> heap_allocator();
// memfd_create + mmap(MAP_SHARED), zero-filled; Buffer::fd() exposes the memfd (our analogue of
// Qualcomm's rpcmem: a second process or a driver maps the same pages).
HFS_API std::shared_ptr<Allocator> shared_memory_allocator();

}  // namespace hfs
