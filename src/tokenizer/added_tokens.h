// Added tokens and the splitter that cuts text at their occurrences (longest match at the leftmost
// position, as transformers.js's DictionarySplitter does).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hfs::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, lstrip = false, rstrip = false, normalized = false, single_word = false;
};

class AddedSplitter {
 public:
  // `token_index[i]` is what a match of `words[i]` reports.
  void build(const std::vector<std::string>& words, const std::vector<int32_t>& token_index,
             const std::vector<AddedToken>* tokens);
  struct Piece {
    std::string_view text;
    int32_t token = -1;  // index into the added tokens, -1 for plain text
  };
  // Splits `text`; consecutive plain text forms one piece. single_word tokens only match when not
  // touching a word character on either side.
  void split(std::string_view text, std::vector<Piece>& out) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;
    int32_t token = -1;
  };
  int32_t child(int32_t node, unsigned char c) const {
    for (auto [k, v] : nodes_[static_cast<size_t>(node)].next)
      if (k == c) return v;
    return -1;
  }
  std::vector<Node> nodes_{Node{}};
  bool first_byte_[256] = {};
  const std::vector<AddedToken>* tokens_ = nullptr;
};

}  // namespace hfs::tok
