#include "tokenizer/added_tokens.h"

#include <unicode/uchar.h>

#include "core/utf8.h"

namespace hfs::tok {
namespace {

bool is_word_char(uint32_t cp) {
  return cp == '_' || u_isalnum(static_cast<UChar32>(cp)) || (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_M_MASK);
}

uint32_t cp_before(std::string_view s, size_t pos) {
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return next_cp(s, b);
}

}  // namespace

void AddedSplitter::build(const std::vector<std::string>& words, const std::vector<int32_t>& token_index,
                          const std::vector<AddedToken>* tokens) {
  tokens_ = tokens;
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& s = words[w];
    if (s.empty()) continue;
    first_byte_[static_cast<unsigned char>(s[0])] = true;
    int32_t node = 0;
    for (unsigned char c : s) {
      int32_t nx = child(node, c);
      if (nx < 0) {
        nx = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        nodes_[static_cast<size_t>(node)].next.emplace_back(c, nx);
      }
      node = nx;
    }
    nodes_[static_cast<size_t>(node)].token = token_index[w];
  }
}

void AddedSplitter::split(std::string_view text, std::vector<Piece>& out) const {
  size_t start = 0, i = 0;
  const size_t n = text.size();
  while (i < n) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    int32_t node = 0, match = -1;
    size_t match_end = 0;
    for (size_t j = i; j < n; ++j) {
      node = child(node, static_cast<unsigned char>(text[j]));
      if (node < 0) break;
      int32_t t = nodes_[static_cast<size_t>(node)].token;
      if (t >= 0) {
        const AddedToken& tok = (*tokens_)[static_cast<size_t>(t)];
        bool ok = true;
        if (tok.single_word) {
          size_t k = j + 1;
          ok = (i == 0 || !is_word_char(cp_before(text, i))) && (k >= n || !is_word_char(next_cp(text, k)));
        }
        if (ok) {
          match = t;
          match_end = j + 1;
        }
      }
    }
    if (match < 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    out.push_back({text.substr(i, match_end - i), match});
    i = start = match_end;
  }
  if (start < n) out.push_back({text.substr(start), -1});
}

}  // namespace hfs::tok
