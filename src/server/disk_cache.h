// server/disk_cache.h — the prompt cache's disk tier (`serve --cache-dir DIR --cache-size BYTES`).
//
// Finished conversations are saved as session files (docs/sessions.md) in DIR, named by a hash of their
// tokens, and indexed by those tokens; their total size stays within the budget by removing the least
// recently used files (file times record use, so the order survives a restart). A new request whose prompt
// begins with a file's tokens (all of them, and at least one token more) restores that file into a new
// engine sequence and continues it, instead of prefilling. Files of another program, or that fail their
// checks, are left alone and never indexed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/engine.h"

namespace hfs::server {

class DiskPromptCache {
 public:
  // Indexes DIR's *.session files of the engine's program (DIR is created when missing).
  [[nodiscard]] static Result<DiskPromptCache> open(Engine& engine, std::string dir, uint64_t max_bytes);

  struct Match {
    std::string path;
    int64_t length = 0;  // the file's tokens: a proper prefix of the prompt
  };
  // The longest file whose tokens the prompt begins with (and goes on past), nullopt if none.
  std::optional<Match> best(std::span<const int32_t> prompt) const;
  // Saves a finished sequence holding `tokens` (skipped when a file already holds them or more of the same
  // text, or when it alone is over the budget), then removes the least recently used files over the budget.
  void store(Engine& engine, SequenceId id, const std::vector<int32_t>& tokens);
  // Marks a file used now (restored); a file that is gone is forgotten.
  void touch(const std::string& path);
  void forget(const std::string& path);
  size_t size() const { return entries_.size(); }
  uint64_t bytes() const { return total_; }

 private:
  struct Entry {
    std::string path;
    std::vector<int32_t> tokens;
    uint64_t bytes = 0;
    int64_t used = 0;  // file time, ns
  };
  void evict();
  std::string dir_;
  uint64_t max_bytes_ = 0;
  uint64_t total_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace hfs::server
