#include "server/grammar_cache.h"

#include <utility>

#include "constrain/compiled_grammar.h"

namespace hfs::server {

size_t GrammarCache::entry_bytes(std::string_view key, const Grammar& grammar) {
  const cst::CompiledGrammar& g = grammar.impl().g;
  size_t n = sizeof(Entry) + 2 * key.size() + sizeof(Grammar) + sizeof(Grammar::Impl) + 64;  // the key twice (list, index); 64: nodes
  n += g.elems.capacity() * sizeof(cst::Flat) + g.ranges.capacity() * sizeof(g.ranges[0]) +
       (g.alt_start.capacity() + g.rule_alts.capacity()) * sizeof(uint32_t) + g.names.capacity() * sizeof(std::string);
  for (const std::string& name : g.names) n += name.capacity();
  return n;
}

void GrammarCache::set_capacity(size_t capacity, size_t capacity_bytes) {
  std::lock_guard<std::mutex> l(mu_);
  capacity_ = capacity;
  capacity_bytes_ = capacity_bytes;
  trim();
}

void GrammarCache::trim() {
  while (!order_.empty() && (order_.size() > capacity_ || bytes_ > capacity_bytes_)) {
    bytes_ -= order_.back().bytes;
    index_.erase(order_.back().key);
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
      return Lookup{it->second->grammar, true};
    }
  }
  HFS_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, compile());
  const size_t bytes = entry_bytes(key, *grammar);
  std::lock_guard<std::mutex> l(mu_);
  if (capacity_ == 0 || bytes > capacity_bytes_ || index_.count(key)) return Lookup{grammar, false};
  order_.push_front(Entry{std::move(key), grammar, bytes});
  bytes_ += bytes;
  index_.emplace(order_.front().key, order_.begin());
  trim();
  return Lookup{std::move(grammar), false};
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return order_.size();
}

size_t GrammarCache::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return bytes_;
}

}  // namespace hfs::server
