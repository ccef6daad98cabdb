// SequencePool's block tables stay ascending (batch invariance, docs/determinism.md): a sequence's slots in
// slot order are its positions in order, whatever other sequences took and freed before. Host bookkeeping
// only; the copies it asks for are replayed here on a toy cache (one int per slot: the position it holds).
#include "llm/sequence_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace hfs {
namespace {

// A pool over a toy cache: cache[slot] = (sequence + 1) × 1000 + position written there.
struct Toy {
  explicit Toy(SequencePool::Config c) : pool(c), cache(static_cast<size_t>(c.pool_slots), -1) {}
  SequencePool pool;
  std::vector<int> cache;
  std::vector<BlockCopy> copies;

  // Writes n positions of seq (after the copies the pool asks for, in order), like a step.
  void write(int32_t seq, int64_t n, int tag) {
    copies.clear();
    pool.reserve(seq, n, &copies);
    const int64_t B = pool.block_slots();
    for (const BlockCopy& c : copies)
      std::copy_n(cache.begin() + c.from * B, c.slots, cache.begin() + c.to * B);
    for (int64_t p = pool.length(seq); p < pool.length(seq) + n; ++p)
      cache[static_cast<size_t>(pool.global_slot(seq, p))] = tag * 1000 + static_cast<int>(p);
    pool.commit(seq, n);
  }
  // Every position of seq holds what was written for it, and the table is ascending.
  void expect_intact(int32_t seq, int tag) const {
    const auto& t = pool.blocks(seq);
    EXPECT_TRUE(std::is_sorted(t.begin(), t.end()) && std::adjacent_find(t.begin(), t.end()) == t.end())
        << "sequence " << seq << " has its blocks out of order";
    for (int64_t p = 0; p < pool.length(seq); ++p)
      EXPECT_EQ(cache[static_cast<size_t>(pool.global_slot(seq, p))], tag * 1000 + static_cast<int>(p))
          << "sequence " << seq << " position " << p;
  }
};

// Freed low blocks are not taken by a sequence whose last block is above them while a higher one is free;
// when none is, the sequence's later blocks move up one place and every row stays where its position says.
TEST(SequencePool, TablesStayAscendingAndRowsMoveWithTheirBlocks) {
  Toy toy({.max_sequences = 3, .pool_slots = 8 * 4, .block_slots = 4, .ring = 0, .context = 32});
  const int32_t a = *toy.pool.add(), b = *toy.pool.add();
  toy.write(a, 8, 1);   // a: blocks 0, 1
  toy.write(b, 12, 2);  // b: blocks 2, 3, 4
  toy.write(a, 4, 1);   // a: 5
  toy.pool.remove(b);   // free: 2, 3, 4, 6, 7
  toy.write(a, 6, 1);   // a needs 6 and 7 (above 5), not 2
  EXPECT_EQ(toy.pool.blocks(a), (std::vector<int32_t>{0, 1, 5, 6, 7}));
  toy.expect_intact(a, 1);
  toy.write(a, 4, 1);  // nothing free above 7: the highest free (4) goes in at its place, 5..7 move up
  EXPECT_EQ(toy.pool.blocks(a), (std::vector<int32_t>{0, 1, 4, 5, 6, 7}));
  EXPECT_EQ(toy.copies.size(), 3u);
  toy.expect_intact(a, 1);
  EXPECT_EQ(toy.pool.free_blocks(), 2);
}

// Random adds, writes, truncations, removals and (second pass) forks with copy-on-write: every position's
// row where its slot says; without forks every table ascending, with forks only a move that would touch a
// block shared with a fork gives the order up.
TEST(SequencePool, RandomScheduleKeepsEveryRowAndTheOrder) {
  for (bool forks : {false, true}) {
    std::mt19937_64 rng(forks ? 4 : 3);
    Toy toy({.max_sequences = 6, .pool_slots = 24 * 4, .block_slots = 4, .ring = 0, .context = 40});
    int moves = 0;
    for (int iter = 0; iter < 3000; ++iter) {
      const int op = static_cast<int>(rng() % 8);
      const int32_t s = static_cast<int32_t>(rng() % 6);
      if (op == 0 && !toy.pool.active(s)) {
        ASSERT_TRUE(toy.pool.add().ok());
      } else if (op == 1 && toy.pool.active(s)) {
        toy.pool.remove(s);
      } else if (op == 2 && forks && toy.pool.active(s)) {
        (void)toy.pool.fork(s, static_cast<int64_t>(rng() % static_cast<uint64_t>(toy.pool.length(s) + 1)));
      } else if (op == 3 && toy.pool.active(s) && toy.pool.length(s) > 0) {
        toy.pool.truncate(s, static_cast<int64_t>(rng() % static_cast<uint64_t>(toy.pool.length(s))));
      } else if (toy.pool.active(s)) {
        const int64_t n = 1 + static_cast<int64_t>(rng() % 9);
        if (toy.pool.length(s) + n > 40 || toy.pool.blocks_needed(s, n) > toy.pool.free_blocks()) continue;
        toy.write(s, n, 1);
        moves += toy.copies.size() > 1 ? 1 : 0;  // copy-on-write copies one block; a move at least one more
      }
      for (int32_t q = 0; q < 6; ++q) {
        if (!toy.pool.active(q)) continue;
        for (int64_t p = 0; p < toy.pool.length(q); ++p)
          ASSERT_EQ(toy.cache[static_cast<size_t>(toy.pool.global_slot(q, p))] % 1000, static_cast<int>(p))
              << "iteration " << iter << " sequence " << q << " position " << p;
        const auto& t = toy.pool.blocks(q);
        if (!forks) {
          ASSERT_TRUE(std::is_sorted(t.begin(), t.end())) << "iteration " << iter << " sequence " << q;
        }
      }
    }
    if (!forks) {
      EXPECT_GT(moves, 0) << "the schedule never moved blocks: it does not test the move";
    }
  }
}

}  // namespace
}  // namespace hfs
