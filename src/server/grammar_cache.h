// server/grammar_cache.h — compiled response_format grammars shared by every request: a JSON Schema is
// compiled once (converted to GBNF, parsed, checked: milliseconds for a large schema) and its Grammar, which
// is immutable, serves every later request with the same schema. Keyed by the kind and the schema's canonical
// text (the request parser's compact dump, keys in the request's order, which is the order properties are
// generated in), so spellings that differ only in whitespace share an entry. Least recently used entries go
// first past either capacity: a count of entries (0 caches nothing) and the bytes they hold together (the
// compiled grammars and their keys; a grammar larger than the whole budget serves its request uncached).
// Thread-safe; compilation runs outside the lock, so a slow schema holds up no other request (two requests
// missing on the same schema at once both compile it, and one result is kept). Failures are not cached.
//
//   GrammarCache cache(64);
//   auto got = cache.get("json_schema", text, [&] { return Grammar::from_json_schema(text); });
//   if (!got) return got.error();   // got->grammar; got->hit says whether compilation was skipped
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "hfstatic/constraint.h"
#include "hfstatic/error.h"

namespace hfs::server {

class GrammarCache {
 public:
  using Compile = std::function<Result<std::shared_ptr<const Grammar>>()>;
  struct Lookup {
    std::shared_ptr<const Grammar> grammar;
    bool hit = false;
  };

  explicit GrammarCache(size_t capacity = 0, size_t capacity_bytes = SIZE_MAX)
      : capacity_(capacity), capacity_bytes_(capacity_bytes) {}
  void set_capacity(size_t capacity, size_t capacity_bytes = SIZE_MAX);

  // The grammar cached for (kind, text), or `compile`'s result (kept when it succeeds).
  Result<Lookup> get(std::string_view kind, std::string_view text, const Compile& compile);

  size_t size() const;
  size_t bytes() const;  // held by the cached entries

  // What one entry holds: its key and the grammar's compiled tables.
  static size_t entry_bytes(std::string_view key, const Grammar& grammar);

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Grammar> grammar;
    size_t bytes;
  };
  void trim();  // mu_ held

  mutable std::mutex mu_;
  size_t capacity_;
  size_t capacity_bytes_;
  size_t bytes_ = 0;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace hfs::server
