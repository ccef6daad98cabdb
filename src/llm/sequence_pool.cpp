#include "llm/sequence_pool.h"

#include <algorithm>
#include <string>

namespace hfs {
namespace {

// The largest power of two ≤ 16 dividing the pool: blocks tile it exactly, so a single sequence can reach
// every slot (its positions map to slots 0, 1, 2, ... as before pools existed).
int64_t default_block(int64_t pool) {
  int64_t b = 16;
  while (b > 1 && pool % b != 0) b /= 2;
  return b;
}

}  // namespace

SequencePool::SequencePool(const Config& c)
    : block_(c.block_slots > 0 ? c.block_slots : default_block(c.pool_slots)),
      n_blocks_(c.pool_slots / (c.block_slots > 0 ? c.block_slots : default_block(c.pool_slots))),
      ring_(c.ring),
      seqs_(static_cast<size_t>(c.max_sequences)),
      refs_(static_cast<size_t>(n_blocks_), 0) {
  const size_t per_seq = static_cast<size_t>((c.context + block_ - 1) / block_);
  for (Seq& s : seqs_) s.blocks.reserve(per_seq);
  free_.assign(static_cast<size_t>((n_blocks_ + 63) / 64), 0);
  clear();
}

void SequencePool::clear() {
  for (Seq& s : seqs_) {
    s.active = false;
    s.length = 0;
    s.blocks.clear();
  }
  std::fill(refs_.begin(), refs_.end(), 0);
  std::fill(free_.begin(), free_.end(), uint64_t{0});
  for (int64_t b = 0; b < n_blocks_; ++b) free_[static_cast<size_t>(b / 64)] |= uint64_t{1} << (b % 64);
  n_free_ = n_blocks_;
}

Result<int32_t> SequencePool::add() {
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (seqs_[i].active) continue;
    seqs_[i].active = true;
    seqs_[i].length = 0;
    seqs_[i].blocks.clear();
    return static_cast<int32_t>(i);
  }
  return make_error(ErrorCode::kResourceExhausted, "all " + std::to_string(seqs_.size()) +
                                                       " sequences of the program are in use (export --sequences sets how many)");
}

Result<int32_t> SequencePool::fork(int32_t parent, int64_t tokens) {
  if (!active(parent)) return make_error(ErrorCode::kInvalidArgument, "fork: sequence " + std::to_string(parent) + " is not active");
  if (tokens < 0 || tokens > length(parent))
    return make_error(ErrorCode::kInvalidArgument, "fork: prefix of " + std::to_string(tokens) + " tokens, but the parent holds " +
                                                       std::to_string(length(parent)));
  HFS_ASSIGN_OR_RETURN(int32_t child, add());
  const Seq& p = seqs_[static_cast<size_t>(parent)];
  Seq& s = seqs_[static_cast<size_t>(child)];
  const size_t shared = static_cast<size_t>((tokens + block_ - 1) / block_);
  for (size_t i = 0; i < shared; ++i) {
    s.blocks.push_back(p.blocks[i]);
    ++refs_[static_cast<size_t>(p.blocks[i])];
  }
  s.length = tokens;
  return child;
}

void SequencePool::remove(int32_t seq) {
  if (!active(seq)) return;
  Seq& s = seqs_[static_cast<size_t>(seq)];
  for (int32_t b : s.blocks) release_block(b);
  s.blocks.clear();
  s.length = 0;
  s.active = false;
}

int64_t SequencePool::blocks_needed(int32_t seq, int64_t n) const {
  if (n <= 0) return 0;
  const Seq& s = seqs_[static_cast<size_t>(seq)];
  int64_t need = 0;
  for (int64_t b = s.length / block_; b <= (s.length + n - 1) / block_; ++b) {
    if (static_cast<size_t>(b) >= s.blocks.size()) ++need;                                      // a new block
    else if (refs_[static_cast<size_t>(s.blocks[static_cast<size_t>(b)])] > 1) ++need;          // copy-on-write
  }
  return need;
}

void SequencePool::reserve(int32_t seq, int64_t n, std::vector<BlockCopy>* copies) {
  if (n <= 0) return;
  Seq& s = seqs_[static_cast<size_t>(seq)];
  for (int64_t b = s.length / block_; b <= (s.length + n - 1) / block_; ++b) {
    if (static_cast<size_t>(b) >= s.blocks.size()) {
      append_block(s, copies);
      continue;
    }
    const int32_t held = s.blocks[static_cast<size_t>(b)];
    if (refs_[static_cast<size_t>(held)] > 1) {
      // Only the last held block can be shared and partly filled (the one being written into): it leaves
      // the table, a fresh one takes its place, and gets its rows. `held` stays referenced by the other
      // sequence, so releasing it first frees nothing the copy reads.
      s.blocks.pop_back();
      release_block(held);
      const int32_t own = append_block(s, copies);
      copies->push_back({held, own, std::min(block_, s.length - b * block_)});
    }
  }
}

int32_t SequencePool::append_block(Seq& s, std::vector<BlockCopy>* copies) {
  const int32_t last = s.blocks.empty() ? -1 : s.blocks.back();
  if (const int32_t f = free_above(last); f >= 0) {
    take(f);
    s.blocks.push_back(f);
    return f;
  }
  // Every free block lies below the last one: take the highest, f, insert it at its place j in the table
  // and move the blocks from j on up one place (block i's rows to the block that held i − 1; the last
  // becomes the appended one). Each copy reads a block before a later copy overwrites it.
  const int32_t f = highest_free();
  const size_t k = s.blocks.size();
  size_t j = 0;
  while (s.blocks[j] < f) ++j;
  bool own = true;
  for (size_t i = j; i < k; ++i) own = own && refs_[static_cast<size_t>(s.blocks[i])] == 1;
  take(f);
  if (!own) {  // moving blocks shared with a fork would change the fork: give up the order instead
    s.blocks.push_back(f);
    return f;
  }
  const int64_t held_rows = s.length;
  auto rows_of = [&](size_t i) { return std::clamp<int64_t>(held_rows - static_cast<int64_t>(i) * block_, 0, block_); };
  int32_t to = f;
  for (size_t i = j; i < k; ++i) {
    if (const int64_t r = rows_of(i); r > 0) copies->push_back({s.blocks[i], to, r});
    std::swap(to, s.blocks[i]);  // block i now `to`; the block it held receives block i + 1
  }
  s.blocks.push_back(to);
  return to;
}

int32_t SequencePool::free_above(int32_t after) const {
  for (int64_t b = after + 1; b < n_blocks_;) {
    const uint64_t w = free_[static_cast<size_t>(b / 64)] >> (b % 64);
    if (w != 0) return static_cast<int32_t>(b + __builtin_ctzll(w));
    b = (b / 64 + 1) * 64;
  }
  return -1;
}

int32_t SequencePool::highest_free() const {
  for (size_t w = free_.size(); w-- > 0;)
    if (free_[w] != 0) return static_cast<int32_t>(w * 64 + 63 - static_cast<size_t>(__builtin_clzll(free_[w])));
  return -1;
}

void SequencePool::take(int32_t b) {
  free_[static_cast<size_t>(b / 64)] &= ~(uint64_t{1} << (b % 64));
  --n_free_;
  refs_[static_cast<size_t>(b)] = 1;
}

void SequencePool::truncate(int32_t seq, int64_t length) {
  Seq& s = seqs_[static_cast<size_t>(seq)];
  s.length = length;
  const size_t keep = static_cast<size_t>((length + block_ - 1) / block_);
  while (s.blocks.size() > keep) {
    release_block(s.blocks.back());
    s.blocks.pop_back();
  }
}

void SequencePool::release_block(int32_t b) {
  if (--refs_[static_cast<size_t>(b)] > 0) return;
  free_[static_cast<size_t>(b / 64)] |= uint64_t{1} << (b % 64);
  ++n_free_;
}

}  // namespace hfs
