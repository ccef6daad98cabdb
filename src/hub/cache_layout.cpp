#include "hub/cache_layout.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "hfstatic/hub.h"

namespace hfs::hub {
namespace fs = std::filesystem;

std::string repo_cache_folder(const std::string& cache_dir, const std::string& repo_id) {
  std::string folder = "models--";
  for (char c : repo_id) folder += c == '/' ? std::string("--") : std::string(1, c);
  return (fs::path(cache_dir) / folder).string();
}

CacheLayout::CacheLayout(const std::string& cache_dir, const std::string& repo_id)
    : root_(repo_cache_folder(cache_dir, repo_id)) {}

bool is_commit_hash(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

std::optional<std::string> CacheLayout::cached_commit(const std::string& revision) const {
  std::error_code ec;
  if (is_commit_hash(revision) && fs::is_directory(snapshot(revision), ec)) return revision;
  std::ifstream f(ref(revision));
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string commit = ss.str();
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

Status CacheLayout::write_ref(const std::string& revision, const std::string& commit) const {
  const fs::path p = ref(revision);
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  const fs::path tmp = p.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << commit;
    if (!f) return make_error(ErrorCode::kIo, "cannot write '" + tmp.string() + "'");
  }
  fs::rename(tmp, p, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot rename '" + tmp.string() + "' to '" + p.string() + "': " + ec.message());
  return Ok{};
}

Status CacheLayout::link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const {
  const fs::path link = snapshot(commit) / file;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot create '" + link.parent_path().string() + "': " + ec.message());
  // Relative, so the cache folder can move (huggingface_hub writes the same form).
  const fs::path target = fs::path("..") / ".." / "blobs" / etag;
  std::string up;
  for (char c : file)
    if (c == '/') up += "../";
  // Made beside it and renamed over it: another process reading the snapshot meanwhile never finds the
  // file missing.
  const fs::path tmp = link.string() + ".tmp." + std::to_string(::getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(fs::path(up) / target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return make_error(ErrorCode::kIo, "cannot link '" + link.string() + "' to its blob: " + ec.message());
  }
  return Ok{};
}

void CacheLayout::mark_missing(const std::string& commit, const std::string& file) const {
  const fs::path p = no_exist(commit, file);
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
}

Result<BlobLock> BlobLock::acquire(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorCode::kIo, "cannot open the lock file '" + path.string() + "': " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    return make_error(ErrorCode::kIo, "cannot lock '" + path.string() + "': " + std::strerror(err));
  }
  return BlobLock(fd);
}

BlobLock::~BlobLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace hfs::hub
