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

  // The commit a revision resolves to from the cache: the revision itself when it is a commit hash with
  // a snapshot folder, else the content of refs/<revision>; nullopt when neither.
  std::optional<std::string> cached_commit(const std::string& revision) const;
  // Writes refs/<revision> = commit (no trailing newline, as huggingface_hub writes it).
  Status write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<file> → ../../blobs/<etag> (one more "../" per '/' in file), replacing any link.
  Status link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const;
  // Records that an optional file is absent at this commit (an empty marker file).
  void mark_missing(const std::string& commit, const std::string& file) const;

 private:
  std::filesystem::path root_;
};

// A 40-hex-digit git commit hash.
bool is_commit_hash(const std::string& s);

}  // namespace hfs::hub
