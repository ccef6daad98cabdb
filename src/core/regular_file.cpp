#include "core/regular_file.h"

#include <algorithm>
#include <limits>
#include <new>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hfs::io {

RegularFile& RegularFile::operator=(RegularFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    o.fd_ = -1;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

const char* file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

Result<RegularFile> open_regular_file(const std::string& path) {
  if (path.empty()) return make_error(ErrorCode::kInvalidArgument, "empty file path");
  // O_NOCTTY: opening a terminal device must not make it this process's controlling terminal.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      path + ": cannot open: " + std::strerror(err));
  }
  RegularFile file(fd, 0);  // closes fd on every error return below
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error(ErrorCode::kIo, path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return make_error(ErrorCode::kIo, path + ": not a regular file (" + file_kind(st.st_mode) + ")");
  // Back to blocking reads (regular files ignore the flag today; this keeps it from mattering).
  if (int fl = ::fcntl(fd, F_GETFL); fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return RegularFile(file.release(), static_cast<uint64_t>(st.st_size));
}

Result<std::string> read_regular_file(const std::string& path) {
  return read_regular_file(path, std::numeric_limits<uint64_t>::max());
}

namespace {

Error too_large(const std::string& path, const std::string& size, uint64_t max_bytes) {
  return Error(ErrorCode::kResourceExhausted,
               path + ": " + size + " is more than the limit of " + std::to_string(max_bytes) + " bytes for this file");
}

}  // namespace

Result<std::string> read_regular_file(const std::string& path, uint64_t max_bytes) {
  HFS_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path));
  if (file.size() > max_bytes) return too_large(path, std::to_string(file.size()) + " bytes", max_bytes);
  std::string out;
  try {
    out.resize(static_cast<size_t>(file.size()));
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted,
                      path + ": cannot allocate " + std::to_string(file.size()) + " bytes to read it");
  }
  size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      if (done >= max_bytes) {  // grew while read: one byte more than allowed is enough to say so
        char probe;
        ssize_t r = ::read(file.fd(), &probe, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r > 0) return too_large(path, "the file (growing while read)", max_bytes);
        if (r < 0) return make_error(ErrorCode::kIo, path + ": read failed: " + std::strerror(errno));
        break;
      }
      // The size fstat gave is read; one more byte says whether the file grew meanwhile.
      char probe;
      ssize_t r = ::read(file.fd(), &probe, 1);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return make_error(ErrorCode::kIo, path + ": read failed: " + std::strerror(errno));
      if (r == 0) break;
      try {
        out.push_back(probe);
        out.resize(static_cast<size_t>(std::min<uint64_t>(out.size() * 2, max_bytes)));
      } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::kResourceExhausted, path + ": cannot allocate memory to read it (it grew while read)");
      }
      done += 1;
      continue;
    }
    ssize_t r = ::read(file.fd(), out.data() + done, out.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return make_error(ErrorCode::kIo, path + ": read failed: " + std::strerror(errno));
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

}  // namespace hfs::io
