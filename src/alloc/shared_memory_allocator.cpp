// Shared-memory allocator: an anonymous memfd mapped MAP_SHARED. The fd is what another process or a
// driver maps to see the same pages (our analogue of Qualcomm's rpcmem). Pages come zero-filled from
// the kernel, and mmap alignment (a page) exceeds kBufferAlignment.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "hfstatic/ext/allocator.h"

namespace hfs {
namespace {

void release_shared(void* data, size_t size, int fd) {
  if (data) munmap(data, size);
  if (fd >= 0) close(fd);
}

Error shm_error(size_t bytes, const char* step, int err) {
  return make_error(ErrorCode::kResourceExhausted, "shared-memory allocator: " + std::string(step) + " failed for " +
                                                       std::to_string(bytes) + " bytes: " + std::strerror(err));
}

class SharedMemoryAllocator final : public Allocator {
 public:
  std::string_view name() const override { return "shared_memory"; }

  Result<Buffer> allocate(size_t bytes) override {
    if (bytes == 0) return Buffer();
    if (bytes > static_cast<size_t>(INT64_MAX)) return shm_error(bytes, "size check", EOVERFLOW);
    int fd = memfd_create("hfstatic", MFD_CLOEXEC);
    if (fd < 0) return shm_error(bytes, "memfd_create", errno);
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      int err = errno;
      close(fd);
      return shm_error(bytes, "ftruncate", err);
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      close(fd);
      return shm_error(bytes, "mmap", err);
    }
    return Buffer(p, bytes, fd, &release_shared);
  }
};

}  // namespace

std::shared_ptr<Allocator> shared_memory_allocator() {
  static const std::shared_ptr<Allocator> a = std::make_shared<SharedMemoryAllocator>();
  return a;
}

}  // namespace hfs
