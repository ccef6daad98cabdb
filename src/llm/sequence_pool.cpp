#include "llm/sequence_pool.h"

#include <algorithm>
#include <functional>
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
  free_.reserve(static_cast<size_t>(n_blocks_));
  clear();
}

void SequencePool::clear() {
  for (Seq& s : seqs_) {
    s.active = false;
    s.length = 0;
    s.blocks.clear();
  }
  std::fill(refs_.begin(), refs_.end(), 0);
  free_.clear();
  for (int64_t b = 0; b < n_blocks_; ++b) free_.push_back(static_cast<int32_t>(b));
  std::make_heap(free_.begin(), free_.end(), std::greater<>());
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
      s.blocks.push_back(take_block());
      continue;
    }
    int32_t& held = s.blocks[static_cast<size_t>(b)];
    if (refs_[static_cast<size_t>(held)] > 1) {
      const int32_t own = take_block();
      copies->push_back({held, own, std::min(block_, s.length - b * block_)});
      release_block(held);
      held = own;
    }
  }
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

int32_t SequencePool::take_block() {
  std::pop_heap(free_.begin(), free_.end(), std::greater<>());
  const int32_t b = free_.back();
  free_.pop_back();
  refs_[static_cast<size_t>(b)] = 1;
  return b;
}

void SequencePool::release_block(int32_t b) {
  if (--refs_[static_cast<size_t>(b)] > 0) return;
  free_.push_back(b);
  std::push_heap(free_.begin(), free_.end(), std::greater<>());
}

}  // namespace hfs
