// Arena planning: greedy placement by decreasing size, each item at the lowest 64-aligned offset that
// does not overlap any already placed item whose lifetime intersects its own. Big items first keeps
// the small ones filling the gaps they leave.
#include <algorithm>
#include <numeric>
#include <vector>

#include "hfstatic/ext/allocator.h"
#include "hfstatic/ext/method.h"

namespace hfs {
namespace {

size_t align_up(size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

bool lifetimes_intersect(const PlanItem& a, const PlanItem& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

size_t plan_arena(std::span<PlanItem> items) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].size != items[b].size) return items[a].size > items[b].size;
    return items[a].first < items[b].first;
  });

  std::vector<size_t> placed;  // indices into items, in placement order
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of conflicting items, reused per item
  size_t total = 0;
  for (size_t idx : order) {
    PlanItem& it = items[idx];
    it.offset = 0;
    if (it.size == 0) continue;  // occupies no bytes, conflicts with nothing
    busy.clear();
    for (size_t p : placed)
      if (lifetimes_intersect(it, items[p])) busy.emplace_back(items[p].offset, items[p].offset + items[p].size);
    std::sort(busy.begin(), busy.end());
    size_t candidate = 0;
    for (const auto& [begin, end] : busy) {
      if (candidate + it.size <= begin) break;  // fits in the gap before this block
      candidate = std::max(candidate, align_up(end));
    }
    it.offset = candidate;
    placed.push_back(idx);
    total = std::max(total, candidate + it.size);
  }
  return total;
}

}  // namespace hfs
