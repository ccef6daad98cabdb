// The BPE model: vocabulary as a symbol table, the merge table, and word → ids.
//
// Every string that can take part in a merge gets a symbol number (vocabulary entries, merge operands
// and merge results, even those outside the vocabulary). A word starts as one symbol per character;
// adjacent pairs merge lowest rank first, leftmost first on ties (what both HF and transformers.js do).
// Symbols that are not tokens fall back to <0xXX> byte tokens (byte_fallback) or the unk token.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hfstatic/error.h"
#include "tokenizer/flat_map.h"
#include "tokenizer/huge_alloc.h"

namespace hfs::tok {

// Interned strings: one arena of bytes plus an open-addressing index. Compact on purpose: loading a
// 262k-token vocabulary must touch as little fresh memory as possible.
class SymbolTable {
 public:
  int32_t find(std::string_view s) const { return find_hashed(s, hash(s)); }
  int32_t find_hashed(std::string_view s, uint32_t h) const {
    if (slots_.empty()) return -1;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& e = slots_[i];
      if (e.sym < 0) return -1;
      if (e.hash == h && e.len == s.size() && std::string_view(arena_.data() + e.off, e.len) == s) return e.sym;
    }
  }
  int32_t intern(std::string_view s) { return intern_hashed(s, hash(s)); }
  int32_t intern_hashed(std::string_view s, uint32_t h) {
    if ((spans_.size() + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 1024 : slots_.size() * 2);
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      const Slot& e = slots_[i];
      if (e.sym < 0) break;
      if (e.hash == h && e.len == s.size() && std::string_view(arena_.data() + e.off, e.len) == s) return e.sym;
    }
    int32_t sym = static_cast<int32_t>(spans_.size());
    uint32_t off = static_cast<uint32_t>(arena_.size());
    spans_.push_back((static_cast<uint64_t>(off) << 32) | s.size());
    arena_.insert(arena_.end(), s.begin(), s.end());
    slots_[i] = Slot{h, sym, off, static_cast<uint32_t>(s.size())};
    return sym;
  }
  // Load-time latency hiding: touch the slot (and the first candidate's bytes) a lookup will need.
  void prefetch_slot(uint32_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[h & mask_]);
  }
  void prefetch_bytes(uint32_t h) const {
    if (slots_.empty()) return;
    const Slot& e = slots_[h & mask_];
    if (e.sym >= 0) __builtin_prefetch(arena_.data() + e.off);
  }
  std::string_view view(int32_t sym) const {
    uint64_t sp = spans_[static_cast<size_t>(sym)];
    return std::string_view(arena_.data() + (sp >> 32), sp & 0xffffffffu);
  }
  std::string str(int32_t sym) const { return std::string(view(sym)); }
  size_t size() const { return spans_.size(); }
  void reserve(size_t n, size_t bytes) {
    spans_.reserve(n);
    arena_.reserve(bytes);
    size_t cap = 1024;
    while (cap < n * 2) cap <<= 1;
    if (cap > slots_.size()) rehash(cap);
  }
  static uint32_t hash(std::string_view s) {  // FNV-1a, folded
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return static_cast<uint32_t>(h ^ (h >> 32));
  }

 private:
  // Hash, length and bytes' offset sit in the slot so a probe costs one memory access plus the compare.
  struct Slot {
    uint32_t hash = 0;
    int32_t sym = -1;
    uint32_t off = 0, len = 0;
  };
  void rehash(size_t cap) {
    std::vector<Slot, HugeAlloc<Slot>> old(cap);
    old.swap(slots_);
    mask_ = cap - 1;
    for (const Slot& e : old) {
      if (e.sym < 0) continue;
      size_t i = e.hash & mask_;
      while (slots_[i].sym >= 0) i = (i + 1) & mask_;
      slots_[i] = e;
    }
  }
  std::vector<char, HugeAlloc<char>> arena_;
  std::vector<uint64_t, HugeAlloc<uint64_t>> spans_;  // per symbol: offset << 32 | length
  std::vector<Slot, HugeAlloc<Slot>> slots_;
  size_t mask_ = 0;
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
  // Words longer than this (a whole prompt, under tokenizers whose pre-tokenizer does not split words, such
  // as SentencePiece-style Llama/Gemma ones) are merged in spans of about this size, cut where no merge can
  // reach across: the per-character merge state stays bounded instead of ~40 bytes per character of prompt.
  // The ids are the same for any value (tests set a tiny one to cut often).
  size_t merge_span_bytes = size_t{64} << 10;

  // Appends the ids of one pre-token.
  [[nodiscard]] Status encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  [[nodiscard]] Status encode_uncached(std::string_view word, std::vector<int32_t>& out) const;
  [[nodiscard]] Status merge_span(std::string_view word, std::vector<int32_t>& out) const;
  // A place in a long word where no merge can ever apply across, at or after `from`; word.size() if none.
  size_t safe_cut(std::string_view word, size_t from) const;
  // Bit (a << 8 | b) set when bytes a, b are adjacent in some symbol: only then can a merge span them.
  mutable std::once_flag pairs_once_;
  mutable std::vector<uint64_t> pair_bits_;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace hfs::tok
