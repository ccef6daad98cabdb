#include "hfstatic/tensor.h"

#include <algorithm>

namespace hfs {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  rank_ = static_cast<int>(std::min<size_t>(dims.size(), kMaxRank));
  std::copy_n(dims.begin(), rank_, dims_.begin());
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  return rank_ == o.rank_ && std::equal(dims_.begin(), dims_.begin() + rank_, o.dims_.begin());
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[static_cast<size_t>(i)]);
  return s + "]";
}

std::string TensorType::to_string() const { return std::string(dtype_name(dtype)) + shape.to_string(); }

uint64_t TensorType::nbytes() const {
  for (int64_t d : shape.dims())
    if (d < 0) return 0;
  return dtype_bytes(dtype, static_cast<uint64_t>(shape.numel())).value_or(0);
}

}  // namespace hfs
