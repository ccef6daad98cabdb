// server/prompt_cache.h — which finished sequence a new request should continue from.
//
// Finished sequences stay in the engine (their cache blocks intact) until their sequence index is needed.
// A new prompt forks the kept sequence that shares its longest prefix, so a chat's next turn (the same
// history plus one more message) or a common system prompt is not prefilled again. This class only keeps
// the bookkeeping (committed tokens, least recent use); the scheduler does the engine calls.
//
//   PromptCache c;
//   c.keep(7, {1, 5, 9, 12});
//   auto m = c.best(std::vector<int32_t>{1, 5, 9, 40});   // {7, 3}: fork sequence 7 after 3 tokens
//   std::optional<SequenceId> victim = c.evict();          // least recently used first
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hfstatic/engine.h"

namespace hfs::server {

class PromptCache {
 public:
  struct Match {
    SequenceId id = -1;
    int64_t length = 0;   // tokens shared with the prompt, at most prompt.size() - 1 (one token must be fed)
    int64_t held = 0;     // tokens the kept sequence holds
  };
  // The kept sequence sharing the longest prefix with `prompt`; nullopt when none shares a token.
  std::optional<Match> best(std::span<const int32_t> prompt) const;
  // A finished sequence and the tokens its caches hold, in order.
  void keep(SequenceId id, std::vector<int32_t> tokens);
  // Removes and returns the least recently kept or used sequence other than `except`; nullopt if none.
  std::optional<SequenceId> evict(SequenceId except = -1);
  void forget(SequenceId id);
  void touch(SequenceId id);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    SequenceId id;
    std::vector<int32_t> tokens;
    uint64_t used;
  };
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace hfs::server
