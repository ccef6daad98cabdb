#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "hfstatic/ext/allocator.h"

namespace hfs {
namespace {

bool all_zero(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i]) return false;
  return true;
}

TEST(HeapAllocator, AlignedZeroFilledAndWritable) {
  auto a = heap_allocator();
  EXPECT_EQ(a->name(), "heap");
  for (size_t size : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{1} << 20}) {
    Result<Buffer> b = a->allocate(size);
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    EXPECT_EQ(b->size(), size);
    EXPECT_EQ(b->fd(), -1);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % kBufferAlignment, 0u) << size;
    EXPECT_TRUE(all_zero(b->data(), size)) << size;
    std::memset(b->data(), 0xab, size);
  }
}

TEST(HeapAllocator, ReusedMemoryIsZeroedAgain) {
  auto a = heap_allocator();
  for (int round = 0; round < 8; ++round) {
    Result<Buffer> b = a->allocate(4096);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(all_zero(b->data(), 4096)) << round;
    std::memset(b->data(), 0x5a, 4096);  // dirty it; the next round may get the same block
  }
}

TEST(HeapAllocator, SizeZeroIsEmpty) {
  Result<Buffer> b = heap_allocator()->allocate(0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(b->size(), 0u);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;  // ASan aborts on absurd malloc sizes unless allocator_may_return_null=1
#else
constexpr bool kAsan = false;
#endif

TEST(HeapAllocator, HugeRequestFailsWithResourceExhausted) {
  std::vector<size_t> sizes = {SIZE_MAX, SIZE_MAX - 10};  // rejected before reaching the system allocator
  if (!kAsan) sizes.push_back(size_t{1} << 62);           // the system allocator says no
  for (size_t size : sizes) {
    Result<Buffer> b = heap_allocator()->allocate(size);
    ASSERT_FALSE(b.ok()) << size;
    EXPECT_EQ(b.error().code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(b.error().message().find(std::to_string(size)), std::string::npos) << b.error().message();
  }
}

int g_released = 0;
void count_release(void*, size_t, int) { ++g_released; }

TEST(Buffer, MoveTransfersOwnershipAndReleasesOnce) {
  g_released = 0;
  int dummy = 0;
  {
    Buffer a(&dummy, 4, -1, &count_release);
    Buffer b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(b.data(), &dummy);
    Buffer c;
    c = std::move(b);
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(c.size(), 4u);
    EXPECT_EQ(g_released, 0);
    Buffer d(&dummy, 8, -1, &count_release);
    c = std::move(d);  // releases c's previous allocation
    EXPECT_EQ(g_released, 1);
  }
  EXPECT_EQ(g_released, 2);
}

TEST(SharedMemoryAllocator, AlignedZeroFilledWithFd) {
  auto a = shared_memory_allocator();
  EXPECT_EQ(a->name(), "shared_memory");
  for (size_t size : {size_t{1}, size_t{4096}, size_t{3} << 20}) {
    Result<Buffer> b = a->allocate(size);
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    EXPECT_GE(b->fd(), 0);
    EXPECT_EQ(b->size(), size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % kBufferAlignment, 0u);
    EXPECT_TRUE(all_zero(b->data(), size));
  }
}

TEST(SharedMemoryAllocator, SizeZeroIsEmpty) {
  Result<Buffer> b = shared_memory_allocator()->allocate(0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(b->fd(), -1);
}

TEST(SharedMemoryAllocator, SecondMappingSeesWritesBothWays) {
  Result<Buffer> b = shared_memory_allocator()->allocate(8192);
  ASSERT_TRUE(b.ok());
  void* other = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd(), 0);
  ASSERT_NE(other, MAP_FAILED);
  ASSERT_NE(other, b->data());
  auto* mine = static_cast<uint32_t*>(b->data());
  auto* theirs = static_cast<uint32_t*>(other);
  mine[0] = 0xdeadbeef;
  mine[2047] = 7;
  EXPECT_EQ(theirs[0], 0xdeadbeefu);
  EXPECT_EQ(theirs[2047], 7u);
  theirs[100] = 42;
  EXPECT_EQ(mine[100], 42u);
  munmap(other, 8192);
}

TEST(SharedMemoryAllocator, ForkedChildWritesThroughItsOwnMapping) {
  Result<Buffer> b = shared_memory_allocator()->allocate(4096);
  ASSERT_TRUE(b.ok());
  const int fd = b->fd();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child maps the fd afresh (as another process handed the fd would) and writes a pattern.
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) _exit(2);
    auto* w = static_cast<uint32_t*>(p);
    for (uint32_t i = 0; i < 1024; ++i) w[i] = i * 3 + 1;
    munmap(p, 4096);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const auto* r = static_cast<const uint32_t*>(b->data());
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(r[i], i * 3 + 1) << i;
}

TEST(SharedMemoryAllocator, ResetUnmapsAndClosesTheFd) {
  Result<Buffer> b = shared_memory_allocator()->allocate(4096);
  ASSERT_TRUE(b.ok());
  int fd = b->fd();
  ASSERT_NE(fcntl(fd, F_GETFD), -1);
  b->reset();
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(b->fd(), -1);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
}

TEST(SharedMemoryAllocator, HugeRequestFailsWithResourceExhausted) {
  for (size_t size : {SIZE_MAX, size_t{1} << 62}) {
    Result<Buffer> b = shared_memory_allocator()->allocate(size);
    ASSERT_FALSE(b.ok()) << size;
    EXPECT_EQ(b.error().code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(b.error().message().find(std::to_string(size)), std::string::npos) << b.error().message();
  }
}

}  // namespace
}  // namespace hfs
