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
  uint8_t byte = 0;                         // the edge into this node
};

struct TokenTrie {
  std::vector<TrieNode> nodes;  // nodes[0]: the root (the empty prefix)
  std::vector<int32_t> ids;
  size_t max_depth = 0;
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
