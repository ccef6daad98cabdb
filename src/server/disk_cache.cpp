#include "server/disk_cache.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace hfs::server {
namespace fs = std::filesystem;
namespace {

int64_t file_time(const std::string& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  return ec ? 0 : static_cast<int64_t>(t.time_since_epoch().count());
}

// FNV-1a of the token ids: the file name, so one conversation maps to one file.
std::string name_of(const std::vector<int32_t>& tokens) {
  uint64_t h = 1469598103934665603ULL;
  for (int32_t t : tokens)
    for (int i = 0; i < 4; ++i) h = (h ^ ((static_cast<uint32_t>(t) >> (8 * i)) & 0xff)) * 1099511628211ULL;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx.session", static_cast<unsigned long long>(h));
  return buf;
}

bool begins_with(std::span<const int32_t> a, std::span<const int32_t> prefix) {
  return prefix.size() <= a.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
}

}  // namespace

Result<DiskPromptCache> DiskPromptCache::open(Engine& engine, std::string dir, uint64_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::kIo, "--cache-dir '" + dir + "': " + ec.message());
  DiskPromptCache c;
  c.dir_ = std::move(dir);
  c.max_bytes_ = max_bytes;
  for (const fs::directory_entry& f : fs::directory_iterator(c.dir_, ec)) {
    if (!f.is_regular_file(ec) || f.path().extension() != ".session") continue;
    const std::string path = f.path().string();
    auto tokens = engine.session_tokens(path);
    if (!tokens || tokens->empty()) continue;  // another program's, or damaged: not ours to use or remove
    c.entries_.push_back({path, std::move(*tokens), static_cast<uint64_t>(f.file_size(ec)), file_time(path)});
    c.total_ += c.entries_.back().bytes;
  }
  if (ec) return make_error(ErrorCode::kIo, "--cache-dir '" + c.dir_ + "': " + ec.message());
  c.evict();
  return c;
}

std::optional<DiskPromptCache::Match> DiskPromptCache::best(std::span<const int32_t> prompt) const {
  std::optional<Match> m;
  for (const Entry& e : entries_)
    if (e.tokens.size() < prompt.size() && begins_with(prompt, e.tokens) && (!m || static_cast<int64_t>(e.tokens.size()) > m->length))
      m = Match{e.path, static_cast<int64_t>(e.tokens.size())};
  return m;
}

void DiskPromptCache::store(Engine& engine, SequenceId id, const std::vector<int32_t>& tokens) {
  if (tokens.empty() || max_bytes_ == 0) return;
  for (const Entry& e : entries_)
    if (begins_with(e.tokens, tokens)) return;  // already on disk, or a longer text of which it is the start
  const std::string path = (fs::path(dir_) / name_of(tokens)).string();
  if (!engine.save_session(id, path)) return;  // a full disk costs the cache entry, never the request
  std::error_code ec;
  const uint64_t bytes = static_cast<uint64_t>(fs::file_size(path, ec));
  // Files the new one extends are of no further use (it restores every prompt they would).
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (begins_with(tokens, it->tokens)) {
      fs::remove(it->path, ec);
      total_ -= it->bytes;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  entries_.push_back({path, tokens, bytes, file_time(path)});
  total_ += bytes;
  evict();
}

void DiskPromptCache::touch(const std::string& path) {
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
  if (ec) return forget(path);
  for (Entry& e : entries_)
    if (e.path == path) e.used = file_time(path);
}

void DiskPromptCache::forget(const std::string& path) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->path == path) {
      total_ -= it->bytes;
      entries_.erase(it);
      return;
    }
}

void DiskPromptCache::evict() {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.used > b.used; });
  std::error_code ec;
  while (total_ > max_bytes_ && !entries_.empty()) {
    fs::remove(entries_.back().path, ec);
    total_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

}  // namespace hfs::server
