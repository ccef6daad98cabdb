// hfstatic/tensor.h — shapes and non-owning tensor views.
//
// Views never allocate: the shape lives inline (rank ≤ kMaxRank), so building views in the step loop is
// free. Data is always contiguous row-major.
//
//   float buf[6];
//   hfs::TensorView v(buf, hfs::DType::kF32, {2, 3});   // [2, 3] f32
//   float* p = v.data<float>();
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/dtype.h"
#include "hfstatic/export_macro.h"

namespace hfs {

inline constexpr int kMaxRank = 6;

// Fixed-capacity shape. Dimensions are ≥ 0.
class HFS_API Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);  // callers check rank ≤ kMaxRank first
  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims_[static_cast<size_t>(i)]; }
  int64_t numel() const;
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string to_string() const;  // "[1, 4, 16, 8]"

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// The static type of a value: what shape rules consume and produce.
struct HFS_API TensorType {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  std::string to_string() const;  // "f32[1, 4]"
  uint64_t nbytes() const;        // 0 if the shape is not a whole number of blocks
};

// Non-owning view of contiguous tensor data.
struct HFS_API TensorView {
  void* ptr = nullptr;
  DType dtype = DType::kF32;
  Shape shape;

  TensorView() = default;
  TensorView(void* p, DType t, Shape s) : ptr(p), dtype(t), shape(s) {}
  TensorView(const void* p, DType t, Shape s) : ptr(const_cast<void*>(p)), dtype(t), shape(s) {}
  template <typename T>
  T* data() const { return static_cast<T*>(ptr); }
  int64_t numel() const { return shape.numel(); }
  uint64_t nbytes() const { return TensorType{dtype, shape}.nbytes(); }
  TensorType type() const { return {dtype, shape}; }
};

}  // namespace hfs
