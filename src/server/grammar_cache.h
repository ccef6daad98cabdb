// server/grammar_cache.h — compiled response_format grammars shared by every request: a JSON Schema is
// compiled once (converted to GBNF, parsed, checked: milliseconds for a large schema) and its Grammar, which
// is immutable, serves every later request with the same schema. Keyed by the kind and the schema's canonical
// text (the request parser's compact dump, keys in the request's order, which is the order properties are
// generated in), so spellings that differ only in whitespace share an entry. Least recently used entries go
// first past the capacity; 0 caches nothing.
// Thread-safe; compilation runs outside the lock, so a slow schema holds up no other request (two requests
// missing on the same schema at once both compile it, and one result is kept). Failures are not cached.
//
//   GrammarCache cache(64);
//   auto got = cache.get("json_schema", text, [&] { return Grammar::from_json_schema(text); });
//   if (!got) return got.error();   // got->grammar; got->hit says whether compilation was skipped
#pragma once

#include <cstddef>
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

  explicit GrammarCache(size_t capacity = 0) : capacity_(capacity) {}
  void set_capacity(size_t capacity);

  // The grammar cached for (kind, text), or `compile`'s result (kept when it succeeds).
  Result<Lookup> get(std::string_view kind, std::string_view text, const Compile& compile);

  size_t size() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Grammar>>;  // key, grammar
  void trim();  // mu_ held

  mutable std::mutex mu_;
  size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace hfs::server
