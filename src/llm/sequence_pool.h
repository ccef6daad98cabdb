// Which cache slots hold each sequence's positions, when several sequences share one program's caches
// (docs/io-contract-v1.md §9). Host bookkeeping only: it never touches a cache byte; the IO manager does the
// copies it asks for.
//
// Global layers: a pool of slots handed out in fixed-size blocks (paged). A sequence's position p lives at
// slot block_table[p / B] * B + p % B, so sequences of any length share the pool without fragmenting it.
// Blocks are reference-counted: a fork shares its parent's prefix blocks, and the first write into a shared
// block copies it (copy-on-write), so neither sequence ever changes what the other sees.
// A sequence's block table is kept ascending, so its slots in slot order are its positions in order:
// attention kernels see only slots and masks and visit them in slot order, and with ascending tables they
// sum a sequence's keys in the order its solo run does, however other sequences took and freed blocks
// before (batch invariance, docs/determinism.md). A new block is the lowest free one above the
// sequence's last; when none is free above, the highest free one below is taken and the sequence's blocks
// above it move up one place (copies the caller makes in order, like copy-on-write copies).
// Sliding layers: one ring segment of R slots per sequence, slot = index × R + p mod R.
//
// Everything is sized at construction: no step allocates.
//
//   SequencePool pool({.max_sequences = 4, .pool_slots = 4 * 512, .block_slots = 16, .ring = 0, .context = 512});
//   int32_t s = *pool.add();
//   std::vector<BlockCopy> copies;
//   if (pool.reserve(s, 5, &copies)) { /* copy blocks, write rows at global_slot(s, p) */ pool.commit(s, 5); }
#pragma once

#include <cstdint>
#include <vector>

#include "hfstatic/error.h"

namespace hfs {

// Copy-on-write of a shared block: the first `slots` slots of block `from` (the positions the writing
// sequence holds there) go to the same offsets of block `to`.
struct BlockCopy {
  int32_t from = 0, to = 0;
  int64_t slots = 0;
};

class SequencePool {
 public:
  struct Config {
    int64_t max_sequences = 1;
    int64_t pool_slots = 0;   // global cache length
    int64_t block_slots = 0;  // B; 0 = the largest power of two ≤ 16 dividing pool_slots
    int64_t ring = 0;         // R, one sequence's sliding ring (0 = no sliding layers)
    int64_t context = 0;      // positions one sequence may hold
  };
  explicit SequencePool(const Config& c);

  int64_t block_slots() const { return block_; }
  int64_t max_sequences() const { return static_cast<int64_t>(seqs_.size()); }
  int64_t free_blocks() const { return n_free_; }
  int64_t total_blocks() const { return n_blocks_; }

  // The lowest free index in [0, max_sequences), or kResourceExhausted naming the limit.
  [[nodiscard]] Result<int32_t> add();
  // A new sequence holding the first `tokens` positions of `parent`, sharing its blocks (copy-on-write).
  // The caller copies the parent's sliding ring itself. kInvalidArgument when tokens > parent's length.
  [[nodiscard]] Result<int32_t> fork(int32_t parent, int64_t tokens);
  // Frees the sequence's blocks (those no fork still shares) and its index.
  void remove(int32_t seq);
  // Every sequence removed, every block free.
  void clear();

  bool active(int32_t seq) const { return seq >= 0 && static_cast<size_t>(seq) < seqs_.size() && seqs_[static_cast<size_t>(seq)].active; }
  int64_t length(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].length; }

  // Blocks reserve(seq, n) would take from the free list (new blocks and copies of shared ones).
  int64_t blocks_needed(int32_t seq, int64_t n) const;
  // Makes positions [length, length + n) writable: allocates their blocks and, for a block shared with
  // another sequence, a private copy (appended to *copies: the caller copies the cache bytes before
  // writing, in order — a later copy may read a block an earlier one wrote). The caller checks length + n ≤
  // context and blocks_needed ≤ free_blocks first; then this cannot fail. The table stays ascending
  // unless the blocks that would have to move are shared with a fork (then the lowest free block is taken).
  void reserve(int32_t seq, int64_t n, std::vector<BlockCopy>* copies);
  // The step that wrote positions [length, length + n) succeeded.
  void commit(int32_t seq, int64_t n) { seqs_[static_cast<size_t>(seq)].length += n; }
  // Forgets positions from `length` on (rejected draft rows): their slots are overwritten by later writes.
  // Blocks wholly past the new length are released: below a fork point they are shared with the fork, and
  // a later write must take a fresh block rather than copy-on-write a block the sequence no longer holds
  // a position of. The caller checks 0 ≤ length ≤ length(seq).
  void truncate(int32_t seq, int64_t length);

  // Slot of a reserved or committed position.
  int32_t global_slot(int32_t seq, int64_t pos) const {
    const auto& t = seqs_[static_cast<size_t>(seq)].blocks;
    return static_cast<int32_t>(t[static_cast<size_t>(pos / block_)] * block_ + pos % block_);
  }
  int32_t ring_slot(int32_t seq, int64_t pos) const { return static_cast<int32_t>(seq * ring_ + pos % ring_); }
  // The sequence's block table (tests, diagnostics).
  const std::vector<int32_t>& blocks(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].blocks; }

 private:
  struct Seq {
    bool active = false;
    int64_t length = 0;
    std::vector<int32_t> blocks;  // reserved to context / B at construction
  };
  // Appends a block to s's table (ascending where it can, see reserve), recording the copies that moving
  // s's held blocks takes; returns the appended block.
  int32_t append_block(Seq& s, std::vector<BlockCopy>* copies);
  // The lowest free block above `after` (-1: none), the highest free block (-1: none).
  int32_t free_above(int32_t after) const;
  int32_t highest_free() const;
  void take(int32_t b);
  void release_block(int32_t b);

  int64_t block_ = 1, n_blocks_ = 0, ring_ = 0;
  std::vector<Seq> seqs_;
  std::vector<int32_t> refs_;  // per block: sequences holding it
  std::vector<uint64_t> free_;  // bitmap over blocks: set = free
  int64_t n_free_ = 0;
};

}  // namespace hfs
