// hfstatic/hub.h — checkpoints by Hugging Face Hub name, downloaded into huggingface_hub's cache.
//
//   hfs::hub::HubOptions opt = hfs::hub::HubOptions::from_env();   // HF_ENDPOINT, HF_HOME, HF_TOKEN, ...
//   auto ref = hfs::hub::parse_repo_ref("HuggingFaceTB/SmolLM2-135M-Instruct@main");
//   if (!ref) return ref.error();
//   auto dir = hfs::hub::download_checkpoint(*ref, opt);   // the snapshot directory, a checkpoint dir
//   if (!dir) return dir.error();                          // names the repo, file, URL and HTTP status
//   HFS_TRY(hfs::export_checkpoint(*dir, "smol.hfs", {}));
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// What is fetched: config.json (required), tokenizer.json, tokenizer_config.json, generation_config.json
// (each optional: a 404 is remembered, not an error), and the weights: model.safetensors, or else
// model.safetensors.index.json and every shard its weight_map names.
//
// The cache is huggingface_hub's, so either tool reuses what the other downloaded:
//   $HF_HUB_CACHE (default $HF_HOME/hub, HF_HOME default ~/.cache/huggingface)
//     models--ORG--NAME/blobs/<etag>                   the bytes; an LFS file's etag is its sha256
//     models--ORG--NAME/snapshots/<commit>/<file>      relative symlink to ../../blobs/<etag>
//     models--ORG--NAME/refs/<revision>                the commit a branch or tag last resolved to
//     models--ORG--NAME/.no_exist/<commit>/<file>      an optional file the repository does not have
// Protocol: HEAD {endpoint}/{repo}/resolve/{revision}/{file} without following absolute redirects gives
// X-Repo-Commit, X-Linked-Etag/ETag and X-Linked-Size/Content-Length; the body comes from a GET (an LFS
// file's 302 Location, a CDN) into blobs/<etag>.incomplete, resumed with a Range request after an
// interrupted transfer (this run retries; a later run continues the same file). A body whose size or
// sha256 (LFS) differs from the announced one is deleted and reported, never linked into snapshots/.
//
// Offline: HubOptions::offline (HF_HUB_OFFLINE=1) resolves only from the cache (refs/<revision>, or a
// commit hash directly). Online, a request that fails for want of a network falls back to a complete
// cached snapshot of refs/<revision> with a note, as huggingface_hub does; without one it is an error
// naming the URL and curl's reason.
//
// Concurrency: a blob is written under an flock of <cache>/.locks/models--ORG--NAME/<etag>.lock, the lock
// file huggingface_hub takes too, so two downloads of one blob (ours or Python's) wait for each other.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"

namespace hfs::hub {

// "ORG/NAME" or "ORG/NAME@REVISION" (a branch, tag or commit hash; default "main").
struct HFS_API RepoRef {
  std::string repo_id;             // "ORG/NAME"
  std::string revision = "main";
};

// Parses "ORG/NAME[@REVISION]". ORG and NAME: letters, digits, '-', '_', '.', not starting or ending with
// '-' or '.', no "--" or "..", at most 96 characters together (the Hub's rules). REVISION: non-empty, no
// ".." path segment, no leading '/', no control characters. kInvalidArgument names the part at fault.
HFS_API Result<RepoRef> parse_repo_ref(std::string_view text);

// True when `text` parses as a RepoRef and does not end in ".hfs": how the CLI tells a Hub name from a
// program path that does not exist (the caller checks the file system first).
HFS_API bool looks_like_repo_ref(std::string_view text);

// Progress of one file: called with done = 0 when its transfer starts, as bytes arrive (at most ~10 times a
// second), and once with finished = true. total is -1 when the server did not say. Not called for files
// the cache already holds.
struct HFS_API DownloadProgress {
  std::string file;        // path inside the repository, e.g. "model.safetensors"
  int64_t done = 0;        // bytes of the file present, including a resumed part
  int64_t total = -1;
  int64_t resumed_from = 0;  // bytes already present from an interrupted transfer
  bool finished = false;
};

struct HFS_API HubOptions {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string cache_dir;                            // the hub cache root (models--*/ live here)
  std::string token;                                // sent as "Authorization: Bearer <token>"; "" = none
  bool offline = false;
  int max_attempts = 3;                             // transfers of one file per call (resumed each time)
  // A file is never downloaded past its announced size (Content-Length, X-Linked-Size); one announced by
  // no header (a chunked answer) stops at this many bytes. The Hub stores anything over 10 MB in LFS,
  // which always announces its size, so only small files are ever unsized.
  int64_t max_unsized_bytes = int64_t{256} << 20;
  std::function<void(const DownloadProgress&)> on_progress;
  std::function<void(const std::string&)> on_note;  // e.g. "network unreachable: using the cached snapshot"

  // HF_ENDPOINT; HF_HUB_CACHE, else $HF_HOME/hub (HF_HOME default $XDG_CACHE_HOME/huggingface, else
  // ~/.cache/huggingface); HF_TOKEN, else the file $HF_TOKEN_PATH or $HF_HOME/token (trimmed);
  // HF_HUB_OFFLINE=1|true|yes|on.
  static HubOptions from_env();
};

// Downloads (or finds in the cache) the checkpoint files of `ref` and returns the snapshot directory,
// models--ORG--NAME/snapshots/<commit>, an ordinary HF checkpoint directory. Errors:
//   kNotFound          the repository, revision or a required file (404), or offline and not cached
//   kPermissionDenied  401/403: gated or private (set HF_TOKEN, accept the license on the model page)
//   kNetwork           no answer (curl's reason and the URL), nothing usable cached
//   kChecksumMismatch  a body of the wrong size or sha256, or longer than announced (or than
//                      max_unsized_bytes): stopped there, the partial file deleted
//   kBadCheckpoint     a malformed model.safetensors.index.json or an unsafe shard name
//   kIo                the cache cannot be written
HFS_API Result<std::string> download_checkpoint(const RepoRef& ref, const HubOptions& options);

// The cache folder of a repository: <cache_dir>/models--ORG--NAME.
HFS_API std::string repo_cache_folder(const std::string& cache_dir, const std::string& repo_id);

}  // namespace hfs::hub
