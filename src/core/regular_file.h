// Opening the files a loader reads (programs, checkpoint files, tokenizer files, prompt files): only
// regular files, and never blocking.
//
// open() on a FIFO with no writer waits for one, forever; a directory opens and then fails every read; a
// device such as /dev/zero never ends. So the path is opened with O_NONBLOCK (a FIFO open returns at once)
// and the opened descriptor is fstat'ed — not the path stat'ed before opening, which leaves a window for the
// path to be replaced — and anything but a regular file is refused with "<path>: not a regular file (a FIFO)".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>

#include "hfstatic/error.h"

namespace hfs::io {

// A read-only descriptor of a regular file (blocking mode) and the file's size when it was opened.
class RegularFile {
 public:
  RegularFile() = default;
  RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  RegularFile(RegularFile&& o) noexcept : fd_(o.fd_), size_(o.size_) { o.fd_ = -1; }
  RegularFile& operator=(RegularFile&& o) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  int release() { return std::exchange(fd_, -1); }  // the caller closes it

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// "a directory", "a FIFO", "a socket", "a character device", "a block device", "a symbolic link",
// "a regular file", or "a special file".
const char* file_kind(mode_t mode);

// Opens `path` for reading. Errors name the path: kNotFound when it does not exist, kIo otherwise
// ("<path>: not a regular file (a directory)", "<path>: cannot open: Permission denied").
Result<RegularFile> open_regular_file(const std::string& path);

// The whole content of a regular file, in one allocation of its size (plus growth if it grows while read).
Result<std::string> read_regular_file(const std::string& path);
// The same, refusing a file of more than `max_bytes` (before allocating, and if it grows past that while
// read) with kResourceExhausted naming the path, its size and the limit; an allocation that fails is the
// same error, never std::bad_alloc.
Result<std::string> read_regular_file(const std::string& path, uint64_t max_bytes);

}  // namespace hfs::io
