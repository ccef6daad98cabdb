// One file of a repository into the cache: its metadata from a HEAD on the resolve URL, then its bytes
// into blobs/<etag> (through <etag>.incomplete, resumed with Range, size- and sha256-checked) and the
// snapshot link. The Hub's answers become errors that name the repository, file, revision and URL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hfstatic/hub.h"
#include "hub/cache_layout.h"

namespace hfs::hub {

// What one download_checkpoint call shares across its files.
struct HubContext {
  RepoRef ref;
  const HubOptions* options = nullptr;
  CacheLayout layout;
  // "{endpoint}/{repo}/resolve/{revision, URL-encoded}/{file}"
  std::string resolve_url(const std::string& revision, const std::string& file) const;
  // The Authorization header when a token is set, else nothing.
  std::vector<std::string> auth_headers() const;
};

struct FileMeta {
  std::string commit;    // X-Repo-Commit
  std::string etag;      // X-Linked-Etag or ETag, without quotes or W/
  int64_t size = -1;     // X-Linked-Size or Content-Length; -1 when not given
  std::string location;  // an absolute redirect's target (an LFS file's CDN URL), else ""
  bool lfs() const;      // the etag is a sha256 (64 hex digits), so the content can be checked
};

// HEAD of `file` at `revision`. Errors: kNotFound (404: repository, revision or file, as the Hub's
// X-Error-Code says), kPermissionDenied (401/403), kNetwork (no answer, or an answer without the Hub's
// headers).
Result<FileMeta> head_file(const HubContext& ctx, const std::string& revision, const std::string& file);

// Makes snapshots/<meta.commit>/<file> point at a checked blob, downloading it unless the cache has it.
Status fetch_file(const HubContext& ctx, const FileMeta& meta, const std::string& file);

}  // namespace hfs::hub
