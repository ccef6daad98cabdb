#include "backends/cpu_fast/huge_slab.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu_fast/backend.h"
#include "backends/cpu_fast/linear.h"
#include "hfstatic/ext/allocator.h"
#include "hfstatic/value.h"

namespace hfs::cpu_fast {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

struct Block {
  uint8_t* p;
  size_t bytes;
  uint8_t tag;
};

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

// Each block filled with its own tag: an overlap shows as a wrong byte in one of them.
void fill(const Block& b) { std::memset(b.p, b.tag, b.bytes); }
bool intact(const Block& b) {
  for (size_t i = 0; i < b.bytes; i += 4093)
    if (b.p[i] != b.tag) return false;
  return b.p[b.bytes - 1] == b.tag;
}

TEST(CpuFastHugeSlab, BlocksAreAlignedDisjointAndTheSlabGoesAwayWhenEmpty) {
  HugeSlabs slabs;
  std::vector<Block> blocks;
  for (size_t i = 0; i < 24; ++i) {
    const size_t bytes = kSlabMinBytes + i * 100003;  // odd sizes: rounding to 64 must not overlap
    auto* p = static_cast<uint8_t*>(slabs.alloc(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned(p, 64)) << i;
    blocks.push_back({p, bytes, static_cast<uint8_t>(i + 1)});
    fill(blocks.back());
  }
  for (const Block& b : blocks) EXPECT_TRUE(intact(b)) << int{b.tag};
  EXPECT_EQ(slabs.mapped_bytes(), kSlabBytes);  // 24 blocks of < 3 MiB share one slab
  for (const Block& b : blocks) slabs.free(b.p, b.bytes);
  EXPECT_EQ(slabs.mapped_bytes(), 0u);
}

TEST(CpuFastHugeSlab, FreedRangesAreReusedAndCoalesced) {
  HugeSlabs slabs;
  void* a = slabs.alloc(4 * kMiB);
  void* b = slabs.alloc(4 * kMiB);
  void* c = slabs.alloc(4 * kMiB);  // keeps the slab alive while a and b come and go
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(static_cast<uint8_t*>(b), static_cast<uint8_t*>(a) + 4 * kMiB);  // back to back
  slabs.free(a, 4 * kMiB);
  EXPECT_EQ(slabs.alloc(4 * kMiB), a);  // first fit takes the hole again
  slabs.free(a, 4 * kMiB);
  slabs.free(b, 4 * kMiB);
  EXPECT_EQ(slabs.alloc(8 * kMiB), a);  // the two holes merged into one
  slabs.free(a, 8 * kMiB);
  slabs.free(c, 4 * kMiB);
  EXPECT_EQ(slabs.mapped_bytes(), 0u);
}

TEST(CpuFastHugeSlab, ABlockOverASlabGetsItsOwnHugePageAlignedSlab) {
  HugeSlabs slabs;
  const size_t bytes = kSlabBytes + 3 * kMiB + 5;  // mapped, never touched: costs address space only
  void* p = slabs.alloc(bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(aligned(p, 2 * kMiB));
  EXPECT_EQ(slabs.mapped_bytes(), kSlabBytes + 4 * kMiB);
  slabs.free(p, bytes);
  EXPECT_EQ(slabs.mapped_bytes(), 0u);
}

// Where a 256 MiB reservation is refused (strict overcommit; here an address-space limit in a child
// process), a block still gets a slab of its own size. Exit code 0: it did, and it went away when freed.
int alloc_under_address_space_limit() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  rlimit lim{};
  lim.rlim_cur = lim.rlim_max = pages * 4096 + 64 * kMiB;
  if (setrlimit(RLIMIT_AS, &lim) != 0) return 2;
  HugeSlabs slabs;
  void* p = slabs.alloc(4 * kMiB);
  if (p == nullptr) return 3;
  const bool own_size = slabs.mapped_bytes() == 4 * kMiB;
  std::memset(p, 1, 4 * kMiB);
  slabs.free(p, 4 * kMiB);
  return own_size && slabs.mapped_bytes() == 0 ? 0 : 1;
}

TEST(CpuFastHugeSlab, FallsBackToASlabOfTheBlocksSizeWhenAFullSlabIsRefused) {
  EXPECT_EXIT(std::exit(alloc_under_address_space_limit()), ::testing::ExitedWithCode(0), "");
}

// The VmFlags line of the mapping holding `p` in /proc/self/smaps ("" if not found).
std::string vm_flags_of(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line, flags;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-')
      inside = lo <= addr && addr < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      flags = line + " ";
  }
  return flags;
}

// The advice reaches the kernel: smaps lists MADV_HUGEPAGE as "hg" in the mapping's VmFlags (whether THP
// then backs it is the kernel's policy, so that is not asserted).
TEST(CpuFastHugeSlab, SlabsAreAdvisedAsHugePages) {
  HugeSlabs slabs;
  void* p = slabs.alloc(8 * kMiB);
  ASSERT_NE(p, nullptr);
  const std::string flags = vm_flags_of(p);
  slabs.free(p, 8 * kMiB);
  if (flags.empty()) GTEST_SKIP() << "no /proc/self/smaps entry for " << p;
  EXPECT_NE(flags.find(" hg "), std::string::npos) << flags;
}

// Random sizes, random frees, against a list of live blocks: never an overlap, and all gone at the end.
TEST(CpuFastHugeSlab, RandomAllocFreeNeverOverlaps) {
  HugeSlabs slabs;
  std::mt19937 rng(7);
  std::vector<Block> live;
  for (int step = 0; step < 600; ++step) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(intact(live[i])) << "step " << step;
      slabs.free(live[i].p, live[i].bytes);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    const size_t bytes = kSlabMinBytes + rng() % (3 * kMiB);
    auto* p = static_cast<uint8_t*>(slabs.alloc(bytes));
    ASSERT_NE(p, nullptr);
    live.push_back({p, bytes, static_cast<uint8_t>(1 + step % 251)});
    fill(live.back());
  }
  for (const Block& b : live) {
    EXPECT_TRUE(intact(b));
    slabs.free(b.p, b.bytes);
  }
  EXPECT_EQ(slabs.mapped_bytes(), 0u);
}

TEST(CpuFastHugeSlab, ThreadsAllocatingAtOnceGetDisjointBlocks) {
  HugeSlabs slabs;
  auto worker = [&slabs](uint8_t tag, bool* ok) {
    std::vector<Block> mine;
    for (int i = 0; i < 200; ++i) {
      const size_t bytes = kSlabMinBytes + static_cast<size_t>(i % 7) * 65536;
      mine.push_back({static_cast<uint8_t*>(slabs.alloc(bytes)), bytes, tag});
      if (mine.back().p == nullptr) return;
      fill(mine.back());
      if (i % 3 == 2) {
        slabs.free(mine.front().p, mine.front().bytes);
        mine.erase(mine.begin());
      }
    }
    bool good = true;
    for (const Block& b : mine) {
      good = good && intact(b);
      slabs.free(b.p, b.bytes);
    }
    *ok = good;
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(worker, uint8_t{0x11}, &ok1), t2(worker, uint8_t{0x22}, &ok2);
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
  EXPECT_EQ(slabs.mapped_bytes(), 0u);
}

// AlignedArray routes big arrays through the (global) slabs and small ones through aligned_alloc; both
// zeroed, and freeing the big one leaves the slabs as they were.
TEST(CpuFastHugeSlab, AlignedArrayUsesSlabsForBigArrays) {
  const size_t base = HugeSlabs::global().mapped_bytes();
  {
    AlignedArray<float> small(100);
    AlignedArray<float> big(kSlabMinBytes / sizeof(float) + 1);
    EXPECT_TRUE(aligned(big.data(), 64));
    const std::string big_flags = vm_flags_of(big.data()), small_flags = vm_flags_of(small.data());
    if (!big_flags.empty()) {
      EXPECT_NE(big_flags.find(" hg "), std::string::npos) << big_flags;
      EXPECT_EQ(small_flags.find(" hg "), std::string::npos) << small_flags;
    }
    for (size_t i = 0; i < big.size(); i += 1000) ASSERT_EQ(big.data()[i], 0.0f);
    for (size_t i = 0; i < small.size(); ++i) ASSERT_EQ(small.data()[i], 0.0f);
    AlignedArray<float> moved = std::move(big);  // the deleter (and its size) moves with the pointer
    EXPECT_EQ(moved.size(), kSlabMinBytes / sizeof(float) + 1);
  }
  EXPECT_EQ(HugeSlabs::global().mapped_bytes(), base);
}

// The backend's I/O allocator (K/V caches, arenas): zero-filled, 64-byte aligned, whole cache lines usable,
// big blocks from the slabs (advised huge) and small ones from the heap, all returned on release.
TEST(CpuFastHugeSlab, IoAllocatorGivesZeroedBuffersAndReturnsThem) {
  const std::shared_ptr<Allocator> a = huge_page_allocator();
  EXPECT_EQ(a->name(), "cpu_fast_huge_pages");
  const size_t base = HugeSlabs::global().mapped_bytes();
  {
    Result<Buffer> empty = a->allocate(0);
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(empty->data(), nullptr);
    for (size_t bytes : {size_t{1}, size_t{100}, kSlabMinBytes - 1, kSlabMinBytes, 3 * kMiB + 7}) {
      Result<Buffer> b = a->allocate(bytes);
      ASSERT_TRUE(b.ok()) << bytes;
      ASSERT_EQ(b->size(), bytes);
      EXPECT_TRUE(aligned(b->data(), 64)) << bytes;
      auto* p = static_cast<uint8_t*>(b->data());
      const size_t lines = (bytes + 63) / 64 * 64;
      for (size_t i = 0; i < lines; ++i) ASSERT_EQ(p[i], 0) << bytes << " at " << i;
      std::memset(p, 0xab, lines);  // dirty it: a reused range must come back zeroed next time
      const std::string flags = vm_flags_of(p);
      if (!flags.empty()) {
        EXPECT_EQ(flags.find(" hg ") != std::string::npos, bytes >= kSlabMinBytes) << bytes << flags;
      }
    }
  }
  EXPECT_EQ(HugeSlabs::global().mapped_bytes(), base);
  Result<std::unique_ptr<Backend>> be = make_cpu_fast_backend(Value::object());
  ASSERT_TRUE(be.ok());
  EXPECT_EQ((*be)->allocator(), a);  // what the runner asks for the caches
}

}  // namespace
}  // namespace hfs::cpu_fast
