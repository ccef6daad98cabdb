#include "server/prompt_cache.h"

#include <algorithm>

namespace hfs::server {

std::optional<PromptCache::Match> PromptCache::best(std::span<const int32_t> prompt) const {
  std::optional<Match> out;
  if (prompt.size() < 2) return out;
  const size_t limit = prompt.size() - 1;
  for (const Entry& e : entries_) {
    const size_t n = std::min(limit, e.tokens.size());
    size_t k = 0;
    while (k < n && e.tokens[k] == prompt[k]) ++k;
    if (k > 0 && (!out || static_cast<int64_t>(k) > out->length))
      out = Match{e.id, static_cast<int64_t>(k), static_cast<int64_t>(e.tokens.size())};
  }
  return out;
}

void PromptCache::keep(SequenceId id, std::vector<int32_t> tokens) {
  forget(id);
  entries_.push_back({id, std::move(tokens), ++clock_});
}

std::optional<SequenceId> PromptCache::evict(SequenceId except) {
  auto victim = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->id != except && (victim == entries_.end() || it->used < victim->used)) victim = it;
  if (victim == entries_.end()) return std::nullopt;
  const SequenceId id = victim->id;
  entries_.erase(victim);
  return id;
}

void PromptCache::forget(SequenceId id) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.id == id; }),
                 entries_.end());
}

void PromptCache::touch(SequenceId id) {
  for (Entry& e : entries_)
    if (e.id == id) e.used = ++clock_;
}

}  // namespace hfs::server
