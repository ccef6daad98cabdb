// Buffer: the one owning handle for allocator memory; the allocator's release function travels with it.
#include "hfstatic/ext/allocator.h"

namespace hfs {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_;
    size_ = o.size_;
    fd_ = o.fd_;
    release_ = o.release_;
    owner_ = std::move(o.owner_);
    o.data_ = nullptr;
    o.size_ = 0;
    o.fd_ = -1;
    o.release_ = nullptr;
  }
  return *this;
}

void Buffer::reset() {
  if (release_ && (data_ || fd_ >= 0)) release_(data_, size_, fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
  release_ = nullptr;
  owner_.reset();
}

}  // namespace hfs
