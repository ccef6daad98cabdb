// Trie construction (from the ids sorted by their bytes) and TokenVocabulary.
#include "constrain/token_trie.h"

#include <algorithm>
#include <numeric>

#include "hfstatic/tokenizer.h"

namespace hfs::cst {
namespace {

// Fills node `n` from sorted[b, e), whose bytes share their first `depth` bytes.
void fill(TokenTrie& t, const std::vector<std::string>& bytes, const std::vector<int32_t>& sorted, size_t b, size_t e,
          size_t depth, uint32_t n) {
  t.max_depth = std::max(t.max_depth, depth);
  t.nodes[n].id_begin = static_cast<uint32_t>(t.ids.size());
  while (b < e && bytes[static_cast<size_t>(sorted[b])].size() == depth) t.ids.push_back(sorted[b++]);  // shortest sort first
  t.nodes[n].id_end = static_cast<uint32_t>(t.ids.size());
  // Children: one per distinct next byte, allocated together so they are contiguous.
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = b; i < e;) {
    const char c = bytes[static_cast<size_t>(sorted[i])][depth];
    size_t j = i;
    while (j < e && bytes[static_cast<size_t>(sorted[j])][depth] == c) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const uint32_t first = static_cast<uint32_t>(t.nodes.size());
  t.nodes.resize(t.nodes.size() + groups.size());
  t.nodes[n].child_begin = first;
  t.nodes[n].child_end = first + static_cast<uint32_t>(groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    const uint32_t c = first + static_cast<uint32_t>(k);
    t.nodes[c].byte = static_cast<uint8_t>(bytes[static_cast<size_t>(sorted[groups[k].first])][depth]);
    fill(t, bytes, sorted, groups[k].first, groups[k].second, depth + 1, c);
  }
}

}  // namespace

TokenTrie build_trie(const std::vector<std::string>& bytes, const std::vector<char>& keep) {
  std::vector<int32_t> sorted;
  for (size_t id = 0; id < bytes.size(); ++id)
    if (keep[id] && !bytes[id].empty()) sorted.push_back(static_cast<int32_t>(id));
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    const std::string& x = bytes[static_cast<size_t>(a)];
    const std::string& y = bytes[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;  // a prefix sorts before its extensions
  });
  TokenTrie t;
  t.nodes.resize(1);
  fill(t, bytes, sorted, 0, sorted.size(), 0, 0);
  return t;
}

}  // namespace hfs::cst

namespace hfs {

TokenVocabulary::TokenVocabulary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TokenVocabulary::~TokenVocabulary() = default;

Result<std::shared_ptr<const TokenVocabulary>> TokenVocabulary::create(std::vector<std::string> bytes,
                                                                       std::span<const int32_t> excluded,
                                                                       std::span<const int32_t> end_ids) {
  const int64_t n = static_cast<int64_t>(bytes.size());
  auto check = [&](std::span<const int32_t> ids, const char* what) -> Status {
    for (int32_t id : ids)
      if (id < 0 || id >= n)
        return make_error(ErrorCode::kInvalidArgument, std::string("TokenVocabulary: ") + what + " id " +
                                                           std::to_string(id) + " outside the vocabulary [0, " +
                                                           std::to_string(n) + ")");
    return Ok{};
  };
  HFS_TRY(check(excluded, "excluded"));
  HFS_TRY(check(end_ids, "end"));
  auto impl = std::make_unique<Impl>();
  std::vector<char> keep(bytes.size(), 1);
  for (int32_t id : excluded) {
    keep[static_cast<size_t>(id)] = 0;
    bytes[static_cast<size_t>(id)].clear();  // never output: accept() refuses an empty token
  }
  impl->end.assign(bytes.size(), 0);
  for (int32_t id : end_ids) {
    keep[static_cast<size_t>(id)] = 0;  // an end token's text is never output
    impl->end[static_cast<size_t>(id)] = 1;
    impl->end_ids.push_back(id);
  }
  impl->trie = cst::build_trie(bytes, keep);
  impl->bytes = std::move(bytes);
  return std::shared_ptr<const TokenVocabulary>(new TokenVocabulary(std::move(impl)));
}

Result<std::shared_ptr<const TokenVocabulary>> TokenVocabulary::from_tokenizer(const Tokenizer& tok,
                                                                               std::span<const int32_t> end_ids) {
  std::vector<std::string> bytes(static_cast<size_t>(tok.vocab_size()));
  std::vector<int32_t> excluded;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    std::optional<std::string> b = tok.token_bytes(id);
    if (!b || tok.is_special(id)) {
      excluded.push_back(id);
      continue;
    }
    bytes[static_cast<size_t>(id)] = std::move(*b);
  }
  std::vector<int32_t> ends;
  for (int32_t id : end_ids)
    if (id >= 0 && id < tok.vocab_size()) ends.push_back(id);
  return create(std::move(bytes), excluded, ends);
}

int32_t TokenVocabulary::size() const { return static_cast<int32_t>(impl_->bytes.size()); }
std::string_view TokenVocabulary::bytes(int32_t id) const { return impl_->bytes[static_cast<size_t>(id)]; }
bool TokenVocabulary::is_end(int32_t id) const { return impl_->end[static_cast<size_t>(id)] != 0; }

}  // namespace hfs
