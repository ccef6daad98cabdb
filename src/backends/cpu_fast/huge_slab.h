// Load-time allocator for cpu_fast's big arrays (packed weights, scratch): blocks of kSlabMinBytes and more
// are carved out of 2 MiB-aligned anonymous mappings ("slabs") advised as transparent huge pages.
//
// Why: decode streams every packed weight once per token. On 4 KiB pages that is a TLB miss every 4 KiB
// (on a virtual machine a two-dimensional page walk), which costs 5-20 % of decode against slabs
// (Qwen2.5-0.5B int8 / int4, SmolLM2-135M int8, alternating processes). One huge-page mapping per
// weight would not do: SmolLM2's per-layer weights are 0.1-1 MiB each, under one huge page, so they share
// slabs instead, and sharing keeps the RSS cost (a touched 2 MiB page is resident whole) to at most one
// partly used huge page per slab.
//
// Freed blocks return to their slab's free list (first fit, coalesced) and a slab with nothing left in it
// is unmapped, so loading and unloading programs in one process does not grow memory. With THP off
// ("never") the slabs are ordinary 4 KiB pages and everything still works. Thread-safe (one mutex; the
// calls happen at load and unload, never in a step).
#pragma once

#include <cstddef>
#include <memory>

#include "hfstatic/ext/allocator.h"

namespace hfs::cpu_fast {

inline constexpr size_t kSlabMinBytes = size_t{64} << 10;  // AlignedArray: smaller blocks go to aligned_alloc
inline constexpr size_t kSlabBytes = size_t{256} << 20;     // a slab's size unless one block needs more

class HugeSlabs {
 public:
  HugeSlabs();
  ~HugeSlabs();  // unmaps every slab: free every block first
  HugeSlabs(const HugeSlabs&) = delete;
  HugeSlabs& operator=(const HugeSlabs&) = delete;

  // 64-byte-aligned block of `bytes` (≥ 1), not initialized; nullptr when no memory could be mapped.
  [[nodiscard]] void* alloc(size_t bytes);
  // Returns a block from alloc; `bytes` as passed to it (nullptr is ignored).
  void free(void* p, size_t bytes);
  // Bytes mapped now (everything freed means 0).
  [[nodiscard]] size_t mapped_bytes() const;

  // The process's instance (never destroyed: a static array elsewhere may be freed after it would be).
  static HugeSlabs& global();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// cpu_fast's I/O allocator (Backend::allocator): the K/V caches and planned arenas, zero-filled, from the
// same slabs (blocks under kSlabMinBytes from the heap). A decode step reads every live K/V row once, as
// it reads the weights: SmolLM2-135M attention at position 576 (30 layers' caches evicted from the caches
// between steps) took 27-30 µs per layer from huge pages against 35-37 µs from 4 KiB pages.
[[nodiscard]] std::shared_ptr<Allocator> huge_page_allocator();

}  // namespace hfs::cpu_fast
