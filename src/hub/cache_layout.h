// The huggingface_hub cache layout of one repository (see include/hfstatic/hub.h for the picture):
// where blobs, snapshot links, refs and "does not exist" markers live, and the few file operations on
// them that must match what huggingface_hub writes (relative symlinks, refs without a newline).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "hfstatic/error.h"

namespace hfs::hub {

class CacheLayout {
 public:
  CacheLayout(const std::string& cache_dir, const std::string& repo_id);
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(const std::string& etag) const { return root_ / "blobs" / etag; }
  std::filesystem::path incomplete(const std::string& etag) const { return root_ / "blobs" / (etag + ".incomplete"); }
  std::filesystem::path snapshot(const std::string& commit) const { return root_ / "snapshots" / commit; }
  std::filesystem::path ref(const std::string& revision) const { return root_ / "refs" / revision; }
  std::filesystem::path no_exist(const std::string& commit, const std::string& file) const {
    return root_ / ".no_exist" / commit / file;
  }
  // <cache>/.locks/models--ORG--NAME/<etag>.lock: huggingface_hub's lock file for one blob.
  std::filesystem::path lock(const std::string& etag) const {
    return root_.parent_path() / ".locks" / root_.filename() / (etag + ".lock");
  }

  // The commit a revision resolves to from the cache: the revision itself when it is a commit hash with
  // a snapshot folder, else the content of refs/<revision>; nullopt when neither.
  std::optional<std::string> cached_commit(const std::string& revision) const;
  // Writes refs/<revision> = commit (no trailing newline, as huggingface_hub writes it), atomically.
  Status write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<file> → ../../blobs/<etag> (one more "../" per '/' in file), replacing any link
  // atomically (a rename).
  Status link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const;
  // Records that an optional file is absent at this commit (an empty marker file).
  void mark_missing(const std::string& commit, const std::string& file) const;

 private:
  std::filesystem::path root_;
};

// An exclusive flock(2) on a lock file, released when destroyed. huggingface_hub's filelock takes flock on
// the same file, so a Python download and ours of one blob wait for each other instead of interleaving.
class BlobLock {
 public:
  static Result<BlobLock> acquire(const std::filesystem::path& path);
  BlobLock(BlobLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;
  BlobLock& operator=(BlobLock&&) = delete;
  ~BlobLock();

 private:
  explicit BlobLock(int fd) : fd_(fd) {}
  int fd_;
};

// A 40-hex-digit git commit hash.
bool is_commit_hash(const std::string& s);

}  // namespace hfs::hub
