// The vocabulary's token byte strings as a trie: a node per distinct prefix, children stored contiguously,
// the ids whose bytes end at a node listed with it. Walking it with the matcher visits each shared prefix
// once and skips every subtree under a rejected prefix — most of the vocabulary at most steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hfstatic/constraint.h"

namespace hfs::cst {

struct TrieNode {
  uint32_t child_begin = 0, child_end = 0;  // children: nodes[child_begin, child_end)
  uint32_t id_begin = 0, id_end = 0;        // ids ending here: ids[id_begin, id_end)
  uint32_t subtree_end = 0;                 // ids of the whole subtree: ids[id_begin, subtree_end) (preorder)
  uint32_t summary = kNoSummary;            // index in TokenTrie::summaries, for subtrees of many ids
  uint16_t chars = 0;                       // UTF-8 characters begun on the path here (lead and ASCII bytes)
  uint8_t byte = 0;                         // the edge into this node
  static constexpr uint32_t kNoSummary = UINT32_MAX;
};

// What the tokens below a node add after its prefix, so that a walk can accept the whole subtree at once
// when the grammar state at the node takes each of those bytes the same way for long enough (inside a JSON
// string every ordinary character leads to the same next state).
struct SubtreeSummary {
  uint64_t ascii[2] = {0, 0};  // the ASCII bytes below the node
  uint16_t max_chars = 0;      // the most UTF-8 characters (lead and ASCII bytes) any token adds below it
  bool non_ascii = false;      // some byte below it is not ASCII
  bool valid = true;           // every token of the subtree is well-formed UTF-8 (ending mid-character allowed)
};

struct TokenTrie {
  std::vector<TrieNode> nodes;  // nodes[0]: the root (the empty prefix)
  std::vector<int32_t> ids;     // in preorder: a subtree's ids are contiguous
  std::vector<uint16_t> id_chars;  // [i]: TrieNode::chars of the node where ids[i] ends
  std::vector<SubtreeSummary> summaries;
  size_t max_depth = 0;
  // Nodes whose subtree holds fewer ids get no summary: walking them is as cheap as checking one.
  static constexpr uint32_t kSummaryMinIds = 8;
};

// Builds the trie over bytes[id] for the ids with `keep[id]` set and non-empty bytes.
TokenTrie build_trie(const std::vector<std::string>& bytes, const std::vector<char>& keep);

}  // namespace hfs::cst

namespace hfs {
struct TokenVocabulary::Impl {
  std::vector<std::string> bytes;
  std::vector<char> end;  // [id] ends generation
  std::vector<int32_t> end_ids;
  cst::TokenTrie trie;
};
}  // namespace hfs
