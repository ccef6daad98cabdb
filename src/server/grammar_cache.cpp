#include "server/grammar_cache.h"

#include <utility>

namespace hfs::server {

void GrammarCache::set_capacity(size_t capacity) {
  std::lock_guard<std::mutex> l(mu_);
  capacity_ = capacity;
  trim();
}

void GrammarCache::trim() {
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

Result<GrammarCache::Lookup> GrammarCache::get(std::string_view kind, std::string_view text, const Compile& compile) {
  // The kind first and a NUL after it: no (kind, text) pair can spell another's key.
  std::string key;
  key.reserve(kind.size() + 1 + text.size());
  key.append(kind).push_back('\0');
  key.append(text);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return Lookup{it->second->second, true};
    }
  }
  HFS_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, compile());
  std::lock_guard<std::mutex> l(mu_);
  if (capacity_ == 0 || index_.count(key)) return Lookup{grammar, false};
  order_.emplace_front(std::move(key), grammar);
  index_.emplace(order_.front().first, order_.begin());
  trim();
  return Lookup{std::move(grammar), false};
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return order_.size();
}

}  // namespace hfs::server
