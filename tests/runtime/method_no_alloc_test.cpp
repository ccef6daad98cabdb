// Method::execute never allocates: this file replaces the global operator new/delete for the whole
// test binary with counting versions (malloc/free underneath) and counts around execute.
#include <atomic>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include "hfstatic/ext/method.h"
#include "runtime/test_support.h"

namespace {
std::atomic<long> g_news{0};

void* counted(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* counted_aligned(std::size_t n, std::align_val_t a) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  size_t al = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return counted(n); }
void* operator new[](std::size_t n) { return counted(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace hfs {
namespace {

using testing_rt::claim;
using testing_rt::f32;
using testing_rt::in_spec;
using testing_rt::out_spec;
using testing_rt::state_out;

TEST(MethodNoAlloc, ExecuteDoesNotAllocate) {
  // Three partitions (A, ref, A), an arena value, a view, a state output and a copied output.
  Attrs v22;
  v22["shape"] = Value::int_array({2, 2});
  MethodDef def{"m",
                {in_spec("x", f32({4})), in_spec("s", f32({4}), IORole::kState)},
                {out_spec("o", f32({2, 2})), state_out("s2", f32({4}), "s"), out_spec("x", f32({4}))},
                {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.neg", {"a"}, {"b"}, {}},
                 {"test_rt.view", {"b"}, {"v"}, v22}, {"test_rt.scale2", {"v"}, {"o"}, {}},
                 {"test_rt.inplace_add", {"s", "a"}, {"s2"}, {}}}};
  MethodOptions opts;
  opts.backends.backends = {"test_rt_a"};
  opts.backends.settings["test_rt_a"] = claim({"test_rt.scale2"});
  auto m = Method::create(def, owned_constants(), opts);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  std::vector<float> x = {1, 2, 3, 4}, s = {0, 0, 0, 0}, o(4), xo(4);
  std::vector<TensorView> in = {TensorView(x.data(), DType::kF32, Shape{4}), TensorView(s.data(), DType::kF32, Shape{4})};
  std::vector<TensorView> out = {TensorView(o.data(), DType::kF32, Shape{2, 2}), TensorView(),
                                 TensorView(xo.data(), DType::kF32, Shape{4})};
  std::vector<TensorView> out_skip = {TensorView(static_cast<void*>(nullptr), DType::kF32, Shape{2, 2}), TensorView(),
                                      TensorView(xo.data(), DType::kF32, Shape{4})};
  long before = g_news.load();
  for (int i = 0; i < 5; ++i) {
    Status st = (*m)->execute(in, out);
    ASSERT_TRUE(st.ok());
  }
  // With the plain output o unwanted (its two partitions skipped) it does not allocate either.
  for (int i = 0; i < 5; ++i) {
    Status st = (*m)->execute(in, out_skip);
    ASSERT_TRUE(st.ok());
  }
  long during = g_news.load() - before;
  EXPECT_EQ(during, 0);
  EXPECT_TRUE((*m)->can_skip_output(0));
  std::fill(s.begin(), s.end(), 0.0f);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*m)->execute(in, out).ok());
  EXPECT_EQ(o, (std::vector<float>{-4, -8, -12, -16}));  // o = 2 * -(2x)
  EXPECT_EQ(s, (std::vector<float>{10, 20, 30, 40}));
  EXPECT_EQ(xo, x);
  // The counter does count: building a method allocates.
  before = g_news.load();
  auto again = Method::create(def, owned_constants(), opts);
  EXPECT_GT(g_news.load() - before, 0);
}

}  // namespace
}  // namespace hfs
