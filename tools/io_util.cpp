#include "io_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <csignal>
#include <cstring>

#include "common.h"

namespace hfs::cli {
namespace {
int g_stdout_errno = 0;  // the first failed stdout write's errno (stdio is used from the main thread only)
}  // namespace

void ignore_write_signals() {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
}

bool out(std::string_view s) {
  if (g_stdout_errno) return false;
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0) {
    g_stdout_errno = errno ? errno : EIO;
    return false;
  }
  return true;
}

bool outf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
  va_end(ap2);
  return out(s);
}

bool stdout_ok() { return g_stdout_errno == 0 && !std::ferror(stdout); }

int finish_stdout(int rc) {
  errno = 0;
  if (std::fflush(stdout) != 0 && !g_stdout_errno) g_stdout_errno = errno ? errno : EIO;
  // A printf that failed earlier and left nothing buffered sets only the stream's error flag.
  if (!g_stdout_errno && std::ferror(stdout)) g_stdout_errno = EIO;
  if (!g_stdout_errno) return rc;
  fail(make_error(ErrorCode::kIo, std::string("writing to stdout: ") + std::strerror(g_stdout_errno)));
  return rc ? rc : 1;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Error OutputFile::fail(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (regular_) ::unlink(path_.c_str());  // no partial file left behind
  regular_ = false;
  return make_error(ErrorCode::kIo, path_ + ": " + what + ": " + std::strerror(err));
}

Status OutputFile::open(const std::string& path) {
  path_ = path;
  if (path.empty()) return make_error(ErrorCode::kInvalidArgument, "output file: the path is empty");
  // O_NONBLOCK: opening a FIFO nobody reads fails with ENXIO at once instead of waiting for a reader.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENXIO) return make_error(ErrorCode::kIo, path + ": cannot open: a FIFO with no reader");
    return make_error(ErrorCode::kIo, path + ": cannot open for writing: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return fail("cannot stat", errno);
  regular_ = S_ISREG(st.st_mode);
  if (int fl = ::fcntl(fd_, F_GETFL); fl >= 0) (void)::fcntl(fd_, F_SETFL, fl & ~O_NONBLOCK);
  return Ok{};
}

Status OutputFile::write(const void* data, size_t n) {
  if (fd_ < 0) return make_error(ErrorCode::kIo, path_ + ": not open for writing");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t r = ::write(fd_, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return fail("write failed", r < 0 ? errno : EIO);
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Ok{};
}

Status OutputFile::close() {
  if (fd_ < 0) return Ok{};
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    return fail("close failed", err);
  }
  return Ok{};
}

}  // namespace hfs::cli
