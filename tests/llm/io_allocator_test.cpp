// The caller's allocator for I/O buffers (IOManagerOptions::io_allocator): every I/O buffer — K/V caches,
// each method's non-cache inputs and outputs — comes from it, once, at load; generation is unchanged.
// The shared-memory allocator runs end to end through the runner the same way.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "hfstatic/ext/allocator.h"
#include "hfstatic/llm_runner.h"
#include "support/hf_static_fixture.h"

namespace hfs {
namespace {

// Forwards to the heap allocator and remembers every buffer it handed out.
class CountingAllocator final : public Allocator {
 public:
  std::string_view name() const override { return "counting"; }
  Result<Buffer> allocate(size_t bytes) override {
    auto b = heap_allocator()->allocate(bytes);
    if (b) ranges.push_back({static_cast<const char*>(b->data()), bytes});
    return b;
  }
  bool owns(const void* p) const {
    const char* c = static_cast<const char*>(p);
    for (const auto& [base, n] : ranges)
      if (c >= base && c < base + n) return true;
    return false;
  }
  size_t bytes() const {
    size_t s = 0;
    for (const auto& r : ranges) s += r.second;
    return s;
  }
  std::vector<std::pair<const char*, size_t>> ranges;
};

// What the contract says the IO manager must allocate for `p`: two caches per layer, and every
// non-state input and output of every method the manager binds.
std::pair<size_t, size_t> expected_io(const Program& p) {
  size_t count = 0, bytes = 0;
  for (const MethodDef& m : p.methods()) {
    for (const auto* list : {&m.inputs, &m.outputs})
      for (const IOSpec& s : *list) {
        if (s.role == IORole::kState) {
          if (list == &m.inputs && m.name == "decode") ++count, bytes += static_cast<size_t>(s.type.nbytes());
          continue;
        }
        ++count;
        bytes += static_cast<size_t>(s.type.nbytes());
      }
  }
  return {count, bytes};
}

std::vector<int32_t> generate(const std::shared_ptr<const Program>& p, const RunnerOptions& ro) {
  auto r = Runner::create(p, ro);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r) return {};
  GenerationConfig g;
  g.max_new_tokens = 12;
  g.sampling.temperature = 0;
  std::vector<int32_t> prompt = test::random_tokens(9, 512, 3);
  auto out = (*r)->generate(prompt, g);
  EXPECT_TRUE(out.ok()) << out.error().to_string();
  return out ? out->tokens : std::vector<int32_t>{};
}

std::shared_ptr<const Program> tiny() {
  test::TinyModel m{"llama", 4, 24};
  m.prefill_variants = std::vector<int64_t>{2};
  auto p = Program::load(test::tiny_program(m));
  EXPECT_TRUE(p.ok()) << p.error().to_string();
  return p ? *p : nullptr;
}

TEST(IoAllocator, EveryIoBufferComesFromTheCallersAllocator) {
  auto p = tiny();
  ASSERT_TRUE(p);
  auto counting = std::make_shared<CountingAllocator>();
  RunnerOptions ro;
  ro.io.io_allocator = counting;
  auto r = Runner::create(p, ro);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const auto [count, bytes] = expected_io(*p);
  EXPECT_EQ(counting->ranges.size(), count);
  EXPECT_EQ(counting->bytes(), bytes);
  // Nothing more is allocated while running, and the logits the runner hands out live in those buffers.
  auto logits = (*r)->decode_step(5);
  ASSERT_TRUE(logits.ok()) << logits.error().to_string();
  EXPECT_TRUE(counting->owns(logits->data()));
  EXPECT_EQ(counting->ranges.size(), count);
}

TEST(IoAllocator, GenerationIsTheSameWithEveryAllocator) {
  auto p = tiny();
  ASSERT_TRUE(p);
  const std::vector<int32_t> want = generate(p, {});
  ASSERT_EQ(want.size(), 12u);
  RunnerOptions counting, shm_flag, shm_alloc;
  counting.io.io_allocator = std::make_shared<CountingAllocator>();
  shm_flag.io.shared_memory_io = true;
  shm_alloc.io.io_allocator = shared_memory_allocator();
  EXPECT_EQ(generate(p, counting), want);
  EXPECT_EQ(generate(p, shm_flag), want);
  EXPECT_EQ(generate(p, shm_alloc), want);
}

TEST(IoAllocator, SharedMemoryIoPutsTheCachesInSharedMemory) {
  // A memfd-backed cache is visible through /proc/self/maps as "memfd:"; the heap one is not.
  auto p = tiny();
  ASSERT_TRUE(p);
  auto count_memfd = [] {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    int n = 0;
    while (std::getline(maps, line)) n += line.find("memfd:") != std::string::npos;
    return n;
  };
  const int before = count_memfd();
  RunnerOptions ro;
  ro.io.shared_memory_io = true;
  auto r = Runner::create(p, ro);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(count_memfd() - before, static_cast<int>(expected_io(*p).first));  // one mapping per buffer
}

// An allocator that breaks its contract is named, and nothing is run.
class ShortAllocator final : public Allocator {
 public:
  std::string_view name() const override { return "short"; }
  Result<Buffer> allocate(size_t bytes) override { return heap_allocator()->allocate(bytes / 2); }
};

TEST(IoAllocator, ContractBreachesAndConflictsAreErrors) {
  auto p = tiny();
  ASSERT_TRUE(p);
  RunnerOptions bad;
  bad.io.io_allocator = std::make_shared<ShortAllocator>();
  auto r = Runner::create(p, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("allocator 'short': asked for"), std::string::npos) << r.error().to_string();
  RunnerOptions both;
  both.io.io_allocator = heap_allocator();
  both.io.shared_memory_io = true;
  auto c = Runner::create(p, both);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message().find("shared_memory_io"), std::string::npos);
}

}  // namespace
}  // namespace hfs
