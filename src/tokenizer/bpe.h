// The BPE model: vocabulary as a symbol table, the merge table, and word → ids.
//
// Every string that can take part in a merge gets a symbol number (vocabulary entries, merge operands
// and merge results, even those outside the vocabulary). A word starts as one symbol per character;
// adjacent pairs merge lowest rank first, leftmost first on ties (what both HF and transformers.js do).
// Symbols that are not tokens fall back to <0xXX> byte tokens (byte_fallback) or the unk token.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hfstatic/error.h"
#include "tokenizer/flat_map.h"

namespace hfs::tok {

class SymbolTable {
 public:
  int32_t find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? -1 : it->second;
  }
  int32_t intern(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    strs_.emplace_back(s);
    int32_t id = static_cast<int32_t>(strs_.size() - 1);
    index_.emplace(strs_.back(), id);
    return id;
  }
  const std::string& str(int32_t sym) const { return strs_[static_cast<size_t>(sym)]; }
  size_t size() const { return strs_.size(); }
  void reserve(size_t n) { index_.reserve(n); }

 private:
  std::deque<std::string> strs_;  // stable addresses: index_ keys view into them
  std::unordered_map<std::string_view, int32_t> index_;
};

struct BpeOptions {
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool fuse_unk = false;
  std::string unk_token;  // empty: none
  bool has_unk = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
};

class BpeModel {
 public:
  BpeOptions opt;
  SymbolTable syms;
  std::vector<int32_t> vocab_id;  // per symbol: the model's id for that string (-1: not in the vocabulary)
  std::vector<int32_t> final_id;  // per symbol: the id encode emits (added tokens take precedence)
  FlatMap64 merges;               // (left sym << 32 | right sym) → (rank << 32 | merged sym)
  int32_t byte_ids[256];          // <0xXX> ids, -1 when missing
  int32_t unk_id = -1;            // final id of unk_token (-1: none or not in the vocabulary)

  // Appends the ids of one pre-token.
  [[nodiscard]] Status encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  [[nodiscard]] Status encode_uncached(std::string_view word, std::vector<int32_t>& out) const;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace hfs::tok
