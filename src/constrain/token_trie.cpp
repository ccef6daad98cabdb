// Trie construction (from the ids sorted by their bytes) and TokenVocabulary.
#include "constrain/token_trie.h"

#include <algorithm>
#include <numeric>


namespace hfs::cst {
namespace {

// UTF-8 well-formedness of a byte prefix, by the rules of advance_byte (match_state.cpp) with a class that
// holds every code point: lead bytes C2–F4, continuation bytes only where due, no overlong forms, no
// surrogates, nothing past U+10FFFF, and an unfinished last character only if some completion is valid.
struct Utf8Prefix {
  bool ok = true;
  uint8_t need = 0;
  uint32_t partial = 0, min = 0;

  Utf8Prefix then(uint8_t b) const {
    Utf8Prefix o = *this;
    if (!ok) return o;
    auto range_ok = [](uint32_t cp, uint32_t shift, uint32_t min) {
      const uint32_t lo = std::max(cp << shift, min), hi = std::min((cp << shift) | ((1u << shift) - 1), 0x10FFFFu);
      return lo <= hi && !(lo >= 0xD800 && hi <= 0xDFFF);
    };
    if (need == 0) {
      if (b < 0x80) return o;
      if (b >= 0xC2 && b <= 0xDF) {
        o.need = 1, o.partial = b & 0x1Fu, o.min = 0x80;
      } else if (b >= 0xE0 && b <= 0xEF) {
        o.need = 2, o.partial = b & 0x0Fu, o.min = 0x800;
      } else if (b >= 0xF0 && b <= 0xF4) {
        o.need = 3, o.partial = b & 0x07u, o.min = 0x10000;
      } else {
        o.ok = false;
        return o;
      }
      o.ok = range_ok(o.partial, 6u * o.need, o.min);
      return o;
    }
    if ((b & 0xC0) != 0x80) {
      o.ok = false;
      return o;
    }
    const uint32_t cp = (partial << 6) | (b & 0x3Fu);
    o.need = static_cast<uint8_t>(need - 1);
    o.partial = cp;
    if (o.need > 0) {
      o.ok = range_ok(cp, 6u * o.need, min);
    } else {
      o.ok = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
      o.partial = 0, o.min = 0;
    }
    return o;
  }
};

// Fills node `n` from sorted[b, e), whose bytes share their first `depth` bytes (`prefix` tells whether
// those are well-formed UTF-8). Returns the summary of what the subtree adds below `n`.
SubtreeSummary fill(TokenTrie& t, const std::vector<std::string>& bytes, const std::vector<int32_t>& sorted, size_t b,
                    size_t e, size_t depth, uint32_t n, Utf8Prefix prefix) {
  t.max_depth = std::max(t.max_depth, depth);
  t.nodes[n].id_begin = static_cast<uint32_t>(t.ids.size());
  while (b < e && bytes[static_cast<size_t>(sorted[b])].size() == depth) {  // shortest sort first
    t.ids.push_back(sorted[b++]);
    t.id_chars.push_back(t.nodes[n].chars);
  }
  t.nodes[n].id_end = static_cast<uint32_t>(t.ids.size());
  SubtreeSummary sum;
  sum.valid = prefix.ok || t.nodes[n].id_end == t.nodes[n].id_begin;
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
    const uint8_t byte = static_cast<uint8_t>(bytes[static_cast<size_t>(sorted[groups[k].first])][depth]);
    t.nodes[c].byte = byte;
    t.nodes[c].chars = static_cast<uint16_t>(t.nodes[n].chars + ((byte & 0xC0) != 0x80 ? 1 : 0));
    const SubtreeSummary below = fill(t, bytes, sorted, groups[k].first, groups[k].second, depth + 1, c, prefix.then(byte));
    if (byte < 0x80) {
      sum.ascii[byte >> 6] |= uint64_t{1} << (byte & 63);
    } else {
      sum.non_ascii = true;
    }
    sum.ascii[0] |= below.ascii[0];
    sum.ascii[1] |= below.ascii[1];
    sum.non_ascii = sum.non_ascii || below.non_ascii;
    sum.valid = sum.valid && below.valid;
    const uint16_t chars = static_cast<uint16_t>(below.max_chars + ((byte & 0xC0) != 0x80 ? 1 : 0));
    sum.max_chars = std::max(sum.max_chars, chars);
  }
  t.nodes[n].subtree_end = static_cast<uint32_t>(t.ids.size());
  if (t.nodes[n].subtree_end - t.nodes[n].id_begin >= TokenTrie::kSummaryMinIds) {
    t.nodes[n].summary = static_cast<uint32_t>(t.summaries.size());
    t.summaries.push_back(sum);
  }
  return sum;
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
  fill(t, bytes, sorted, 0, sorted.size(), 0, 0, Utf8Prefix{});
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

int32_t TokenVocabulary::size() const { return static_cast<int32_t>(impl_->bytes.size()); }
std::string_view TokenVocabulary::bytes(int32_t id) const { return impl_->bytes[static_cast<size_t>(id)]; }
bool TokenVocabulary::is_end(int32_t id) const { return impl_->end[static_cast<size_t>(id)] != 0; }

}  // namespace hfs
