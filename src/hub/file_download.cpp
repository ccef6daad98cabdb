#include "hub/file_download.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "hub/http.h"
#include "hub/sha256.h"

namespace hfs::hub {
namespace fs = std::filesystem;
namespace {

// Percent-encodes everything but unreserved characters (a revision like "refs/pr/1" is one path segment,
// as huggingface_hub quotes it with safe="").
std::string encode_segment(const std::string& s, bool keep_slash) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string normalize_etag(std::string e) {
  if (e.starts_with("W/")) e.erase(0, 2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

int64_t parse_size(const std::string& s) {
  if (s.empty()) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string origin_of(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t path = url.find('/', scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// The Hub's own explanation of an error answer, when it sent one.
std::string hub_says(const HttpResponse& r) {
  std::string m = r.header("x-error-message");
  return m.empty() ? std::string() : " (the Hub says: " + m + ")";
}

Error http_error(const HubContext& ctx, const HttpResponse& r, const std::string& revision, const std::string& file,
                 const std::string& url) {
  const std::string repo = "'" + ctx.ref.repo_id + "'";
  const std::string status = "HTTP " + std::to_string(r.status) + " for " + url;
  if (r.status == 401 || r.status == 403) {
    const bool sent = !ctx.options->token.empty();
    return make_error(ErrorCode::kPermissionDenied,
                      "Hub repository " + repo + ": access denied (" + status + ")" + hub_says(r) + ": " +
                          (sent ? "the token in HF_TOKEN (or $HF_HOME/token) was refused; check that it is valid and that "
                                  "its account accepted the model's license at " + ctx.options->endpoint + "/" + ctx.ref.repo_id
                                : "the repository is gated or private (or does not exist): set HF_TOKEN to an access token "
                                  "and accept the model's license at " + ctx.options->endpoint + "/" + ctx.ref.repo_id));
  }
  if (r.status == 404) {
    const std::string code = r.header("x-error-code");
    if (code == "RepoNotFound")
      return make_error(ErrorCode::kNotFound, "Hub repository " + repo + " not found (" + status + ")" + hub_says(r));
    if (code == "RevisionNotFound")
      return make_error(ErrorCode::kNotFound, "Hub repository " + repo + " has no revision '" + revision + "' (" + status + ")" + hub_says(r));
    return make_error(ErrorCode::kNotFound, "Hub repository " + repo + " at revision '" + revision + "' has no file '" + file +
                                                "' (" + status + ")" + hub_says(r));
  }
  return make_error(ErrorCode::kNetwork, "Hub repository " + repo + ", file '" + file + "': unexpected " + status + hub_says(r));
}

}  // namespace

std::string HubContext::resolve_url(const std::string& revision, const std::string& file) const {
  return options->endpoint + "/" + ref.repo_id + "/resolve/" + encode_segment(revision, false) + "/" + encode_segment(file, true);
}

std::vector<std::string> HubContext::auth_headers() const {
  if (options->token.empty()) return {};
  return {"Authorization: Bearer " + options->token};
}

bool FileMeta::lfs() const {
  if (etag.size() != 64) return false;
  for (char c : etag)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

Result<FileMeta> head_file(const HubContext& ctx, const std::string& revision, const std::string& file) {
  std::string url = ctx.resolve_url(revision, file);
  std::vector<std::string> headers = ctx.auth_headers();
  headers.push_back("Accept-Encoding: identity");  // the size of the file, not of a compressed answer
  for (int hops = 0;; ++hops) {
    HFS_ASSIGN_OR_RETURN(HttpResponse r, http_head(url, headers));
    std::string location = r.header("location");
    // A relative redirect is the Hub's own (a renamed repository): follow it. An absolute one is the
    // LFS file's CDN: its headers already carry the metadata.
    if (r.status >= 300 && r.status < 400 && location.starts_with("/") && hops < 5) {
      url = ctx.options->endpoint + location;
      continue;
    }
    if (r.status >= 400 || r.status < 200) return http_error(ctx, r, revision, file, url);
    FileMeta m;
    m.commit = r.header("x-repo-commit");
    m.etag = normalize_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
    m.size = parse_size(!r.header("x-linked-size").empty() ? r.header("x-linked-size") : r.header("content-length"));
    if (r.status >= 300) m.location = location;
    if (m.commit.empty() || m.etag.empty())
      return make_error(ErrorCode::kNetwork, "HEAD " + url + ": HTTP " + std::to_string(r.status) + " without " +
                                                 (m.commit.empty() ? "X-Repo-Commit" : "an ETag") +
                                                 ": is HF_ENDPOINT (" + ctx.options->endpoint + ") a Hugging Face Hub?");
    if (!is_commit_hash(m.commit))
      return make_error(ErrorCode::kNetwork, "HEAD " + url + ": X-Repo-Commit '" + m.commit + "' is not a commit hash");
    // The etag names a file under blobs/: nothing that could leave that folder.
    if (m.etag.find('/') != std::string::npos || m.etag.find("..") != std::string::npos || m.etag.size() > 128)
      return make_error(ErrorCode::kNetwork, "HEAD " + url + ": unusable ETag '" + m.etag + "'");
    return m;
  }
}

Status fetch_file(const HubContext& ctx, const FileMeta& meta, const std::string& file) {
  const CacheLayout& L = ctx.layout;
  const fs::path link = L.snapshot(meta.commit) / file;
  const fs::path blob = L.blob(meta.etag);
  std::error_code ec;
  auto cached = [&] { return fs::exists(blob, ec) && (meta.size < 0 || static_cast<int64_t>(fs::file_size(blob, ec)) == meta.size); };
  if (cached()) {
    if (fs::exists(link, ec)) return Ok{};  // linked already (by us or by huggingface_hub)
    return L.link_snapshot(meta.commit, file, meta.etag);
  }
  // One writer per blob across processes; whoever waited finds the blob the other one finished.
  HFS_ASSIGN_OR_RETURN(BlobLock lock, BlobLock::acquire(L.lock(meta.etag)));
  if (cached()) return L.link_snapshot(meta.commit, file, meta.etag);
  fs::create_directories(blob.parent_path(), ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot create the cache folder '" + blob.parent_path().string() + "': " + ec.message());
  const fs::path part = L.incomplete(meta.etag);
  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(part.c_str(), "ab"), &std::fclose);
  if (!out) return make_error(ErrorCode::kIo, "cannot open '" + part.string() + "' for writing: " + std::strerror(errno));
  int64_t offset = static_cast<int64_t>(fs::file_size(part, ec));
  if (ec || (meta.size >= 0 && offset > meta.size)) {  // longer than the file: start over
    if (ftruncate(fileno(out.get()), 0) != 0) return make_error(ErrorCode::kIo, "cannot truncate '" + part.string() + "'");
    offset = 0;
  }
  // The body: from the CDN the HEAD pointed at, or from the resolve URL pinned to the commit (so every
  // file of a snapshot comes from one commit even if the branch moves meanwhile). The token goes only to
  // the endpoint's own origin (curl drops it on redirects to another host).
  const bool cdn = !meta.location.empty();
  const std::string url = cdn ? meta.location : ctx.resolve_url(meta.commit, file);
  const std::vector<std::string> headers =
      (!cdn || origin_of(url) == origin_of(ctx.options->endpoint)) ? ctx.auth_headers() : std::vector<std::string>{};
  const auto& progress = ctx.options->on_progress;
  DownloadProgress p;
  p.file = file;
  p.total = meta.size;
  p.resumed_from = offset;
  p.done = offset;
  if (progress) progress(p);
  // An LFS file's sha256 is computed as the bytes arrive (a resumed file's first part read back once), so
  // a multi-GB checkpoint is not read a second time; a restart from 0 restarts the hash.
  Sha256 sha;
  int64_t hashed = 0;
  if (meta.lfs() && offset > 0) {
    HFS_TRY(hash_file(part.string(), offset, &sha));
    hashed = offset;
  }
  auto last = std::chrono::steady_clock::now();
  const OnData on_data = [&](int64_t at, const char* data, size_t n) {
    if (meta.lfs()) {
      if (at == 0 && hashed != 0) sha = Sha256(), hashed = 0;
      if (at == hashed) sha.update(data, n), hashed += static_cast<int64_t>(n);
    }
    p.done = at + static_cast<int64_t>(n);
    const auto now = std::chrono::steady_clock::now();
    if (progress && now - last >= std::chrono::milliseconds(100)) {
      last = now;
      progress(p);
    }
  };
  const int attempts = std::max(1, ctx.options->max_attempts);
  for (int attempt = 1;; ++attempt) {
    // Never more than the announced size (a server or proxy that keeps sending is cut off at once), and a
    // body announced by no one is capped too.
    const int64_t limit = meta.size >= 0 ? meta.size : std::max<int64_t>(0, ctx.options->max_unsized_bytes);
    auto r = http_get_to_file(url, headers, out.get(), &offset, on_data, limit);
    std::fflush(out.get());
    if (!r && r.error().code() == ErrorCode::kChecksumMismatch) {
      out.reset();
      fs::remove(part, ec);
      return make_error(ErrorCode::kChecksumMismatch,
                        "Hub repository '" + ctx.ref.repo_id + "', file '" + file + "': the server sent more than " +
                            (meta.size >= 0 ? "the announced " + std::to_string(meta.size) + " bytes"
                                            : std::to_string(limit) + " bytes, the limit for a file whose size is not "
                                              "announced (HubOptions::max_unsized_bytes)") +
                            "; the transfer was stopped there and the download deleted");
    }
    if (r && (r->status == 200 || r->status == 206)) break;
    if (r && r->status == 416) {  // the range is past the end: the partial file is stale, start over
      if (ftruncate(fileno(out.get()), 0) != 0 || std::fseek(out.get(), 0, SEEK_SET) != 0)
        return make_error(ErrorCode::kIo, "cannot truncate '" + part.string() + "'");
      offset = 0;
      if (attempt < attempts) continue;
    }
    if (r) return http_error(ctx, *r, meta.commit, file, url);
    if (r.error().code() != ErrorCode::kNetwork) return r.error();
    const int64_t have = static_cast<int64_t>(fs::file_size(part, ec));
    const std::string at = mib(have) + (meta.size >= 0 ? " of " + mib(meta.size) : "");
    if (attempt >= attempts)
      return make_error(ErrorCode::kNetwork, "Hub repository '" + ctx.ref.repo_id + "', file '" + file + "': the download stopped at " + at +
                                                 " after " + std::to_string(attempts) + " attempts: " + r.error().message() +
                                                 "; the part is kept in '" + part.string() + "' and the next run resumes it");
    if (ctx.options->on_note) ctx.options->on_note(file + ": transfer interrupted at " + at + " (" + r.error().message() + "); resuming");
    offset = have;
  }
  out.reset();
  // Checks before the blob is visible: a wrong size or hash never reaches snapshots/.
  const int64_t got = static_cast<int64_t>(fs::file_size(part, ec));
  if (meta.size >= 0 && got != meta.size) {
    fs::remove(part, ec);
    return make_error(ErrorCode::kChecksumMismatch, "Hub repository '" + ctx.ref.repo_id + "', file '" + file + "': received " +
                                                        std::to_string(got) + " bytes, the server announced " + std::to_string(meta.size) +
                                                        "; the download was deleted");
  }
  if (meta.lfs()) {
    std::string digest;
    if (hashed == got) {
      digest = sha.hex_digest();
    } else {  // the pieces seen do not add up to the file (cannot happen unless written elsewhere): read it
      HFS_ASSIGN_OR_RETURN(digest, sha256_file(part.string()));
    }
    std::string want = meta.etag;
    for (char& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (digest != want) {
      fs::remove(part, ec);
      return make_error(ErrorCode::kChecksumMismatch, "Hub repository '" + ctx.ref.repo_id + "', file '" + file + "': sha256 " + digest +
                                                          " differs from the expected " + want + " (its LFS etag); the corrupt download was deleted");
    }
  }
  fs::rename(part, blob, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot rename '" + part.string() + "' to '" + blob.string() + "': " + ec.message());
  p.done = got;
  p.finished = true;
  if (progress) progress(p);
  return L.link_snapshot(meta.commit, file, meta.etag);
}

}  // namespace hfs::hub
