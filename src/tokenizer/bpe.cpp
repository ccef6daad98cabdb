#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "core/utf8.h"

namespace hfs::tok {
namespace {

constexpr size_t kMaxCachedWord = 256;
constexpr size_t kMaxCacheEntries = 200000;

struct Sym {
  int32_t sym;       // -1: a character outside the symbol table (never merges)
  int32_t prev, next;
  uint32_t begin, end;  // byte span in the word (for unknown characters)
  bool alive;
};

struct Cand {
  uint32_t rank;
  int32_t pos;
  int32_t left, right;  // the symbols the candidate was made for; stale when they changed
  bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

Status BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return Ok{};
  if (word.size() >= kMaxCachedWord) return encode_uncached(word, out);
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(std::string(word));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return Ok{};
    }
  }
  size_t before = out.size();
  HFS_TRY(encode_uncached(word, out));
  std::vector<int32_t> ids(out.begin() + static_cast<long>(before), out.end());
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (cache_.size() >= kMaxCacheEntries) cache_.clear();
  cache_.emplace(std::string(word), std::move(ids));
  return Ok{};
}

Status BpeModel::encode_uncached(std::string_view word, std::vector<int32_t>& out) const {
  if (opt.ignore_merges) {
    int32_t s = syms.find(word);
    if (s >= 0 && vocab_id[static_cast<size_t>(s)] >= 0) {
      out.push_back(final_id[static_cast<size_t>(s)]);
      return Ok{};
    }
  }
  // With a subword prefix or word suffix the first and last characters are special: no cutting then.
  if (word.size() <= merge_span_bytes || !opt.continuing_subword_prefix.empty() || !opt.end_of_word_suffix.empty())
    return merge_span(word, out);
  // Merges never cross a cut (see safe_cut), and each side's merges keep their relative order, so merging
  // the spans one by one yields exactly the ids of merging the whole word.
  for (size_t start = 0; start < word.size();) {
    const size_t cut = safe_cut(word, start + std::max<size_t>(merge_span_bytes, 1));
    HFS_TRY(merge_span(word.substr(start, cut - start), out));
    start = cut;
  }
  return Ok{};
}

size_t BpeModel::safe_cut(std::string_view word, size_t from) const {
  std::call_once(pairs_once_, [&] {
    pair_bits_.assign(65536 / 64, 0);
    for (size_t sym = 0; sym < syms.size(); ++sym) {
      std::string_view t = syms.view(static_cast<int32_t>(sym));
      for (size_t i = 1; i < t.size(); ++i) {
        const unsigned bit = static_cast<unsigned char>(t[i - 1]) << 8 | static_cast<unsigned char>(t[i]);
        pair_bits_[bit / 64] |= uint64_t{1} << (bit % 64);
      }
    }
  });
  // A symbol spanning the boundary before byte p holds bytes p-1 and p next to each other: if no symbol
  // does, no merge result (always a symbol) can span it. Cuts fall on character starts only.
  for (size_t p = std::max<size_t>(from, 1); p < word.size(); ++p) {
    const unsigned char b = static_cast<unsigned char>(word[p]);
    if ((b & 0xC0) == 0x80) continue;
    const unsigned bit = static_cast<unsigned char>(word[p - 1]) << 8 | b;
    if (!(pair_bits_[bit / 64] >> (bit % 64) & 1)) return p;
  }
  return word.size();
}

Status BpeModel::merge_span(std::string_view word, std::vector<int32_t>& out) const {
  // One symbol per character (with the subword prefix / end-of-word suffix HF adds).
  std::vector<Sym> w;
  std::vector<std::string> unknown_str;  // text of unknown characters, by -(sym+2)
  w.reserve(word.size());
  std::string buf;
  for (size_t i = 0; i < word.size();) {
    size_t b = i;
    next_cp(word, i);
    bool first = b == 0, last = i == word.size();
    std::string_view ch = word.substr(b, i - b);
    int32_t s;
    if ((first || opt.continuing_subword_prefix.empty()) && (!last || opt.end_of_word_suffix.empty())) {
      s = syms.find(ch);
      if (s < 0) {
        unknown_str.emplace_back(ch);
        s = -2 - static_cast<int32_t>(unknown_str.size() - 1);
      }
    } else {
      buf.clear();
      if (!first) buf += opt.continuing_subword_prefix;
      buf += ch;
      if (last) buf += opt.end_of_word_suffix;
      s = syms.find(buf);
      if (s < 0) {
        unknown_str.push_back(buf);
        s = -2 - static_cast<int32_t>(unknown_str.size() - 1);
      }
    }
    int32_t idx = static_cast<int32_t>(w.size());
    w.push_back({s, idx - 1, idx + 1, static_cast<uint32_t>(b), static_cast<uint32_t>(i), true});
  }
  w.back().next = -1;

  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push_pair = [&](int32_t pos) {
    int32_t nx = w[static_cast<size_t>(pos)].next;
    if (nx < 0) return;
    int32_t a = w[static_cast<size_t>(pos)].sym, b = w[static_cast<size_t>(nx)].sym;
    if (a < 0 || b < 0) return;
    const uint64_t* m = merges.find((static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b));
    if (m) heap.push({static_cast<uint32_t>(*m >> 32), pos, a, b});
  };
  for (int32_t p = 0; p + 1 < static_cast<int32_t>(w.size()); ++p) push_pair(p);
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    Sym& l = w[static_cast<size_t>(c.pos)];
    if (!l.alive || l.sym != c.left || l.next < 0) continue;
    Sym& r = w[static_cast<size_t>(l.next)];
    if (r.sym != c.right) continue;
    const uint64_t* m = merges.find((static_cast<uint64_t>(c.left) << 32) | static_cast<uint32_t>(c.right));
    l.sym = static_cast<int32_t>(*m & 0xffffffffu);
    l.end = r.end;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) w[static_cast<size_t>(r.next)].prev = c.pos;
    if (l.prev >= 0) push_pair(l.prev);
    push_pair(c.pos);
  }

  for (int32_t p = 0; p >= 0; p = w[static_cast<size_t>(p)].next) {
    int32_t s = w[static_cast<size_t>(p)].sym;
    if (s >= 0 && vocab_id[static_cast<size_t>(s)] >= 0) {
      out.push_back(final_id[static_cast<size_t>(s)]);
      continue;
    }
    std::string_view text = s >= 0 ? syms.view(s) : std::string_view(unknown_str[static_cast<size_t>(-2 - s)]);
    if (opt.byte_fallback) {
      bool all = true;
      for (unsigned char ch : text) all = all && byte_ids[ch] >= 0;
      if (all) {
        for (unsigned char ch : text) out.push_back(byte_ids[ch]);
        continue;
      }
    }
    if (opt.has_unk) {
      if (unk_id < 0)
        return make_error(ErrorCode::kTokenizer, "tokenizer: model.unk_token '" + opt.unk_token +
                                                     "' is not in the vocabulary, needed for '" + std::string(text) + "'");
      out.push_back(unk_id);
    }
    // No unk token: the piece is dropped, as transformers.js does.
  }
  return Ok{};
}

}  // namespace hfs::tok
