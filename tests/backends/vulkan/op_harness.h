// Runs one node on the vulkan backend and with the reference kernel (hfs::run_reference) on the same
// inputs, for the per-op differential tests. Operands are constants (uploaded at compile) or subgraph
// inputs (bound from the backend's I/O allocator, or from heap memory to exercise the staging path).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hfstatic/ext/backend.h"
#include "hfstatic/ext/ops.h"

namespace hfs::vulkan::test {

struct OpOperand {
  std::string name;
  TensorType type;
  std::vector<uint8_t> bytes;
  bool constant = false;
};

// Constants owned by the test.
class Store : public ConstantStore {
 public:
  const TensorView* find(std::string_view name) const override;
  Status add(const std::string& name, const TensorType& type, std::span<const std::byte> bytes) override;

 private:
  std::map<std::string, std::vector<uint8_t>, std::less<>> bytes_;
  std::map<std::string, TensorView, std::less<>> views_;
};

OpOperand f32_operand(const std::string& name, Shape shape, std::vector<float> values, bool constant = false);
OpOperand i32_operand(const std::string& name, Shape shape, std::vector<int32_t> values);
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);
// A constant "w" [n, k] of random values stored as `dtype` by the exporter's encoders (core/quant.h), plus
// its per-row scale "w.scale" for i8 (q4_0 needs k % 32 == 0).
std::vector<OpOperand> stored_weight(DType dtype, int64_t n, int64_t k, uint32_t seed);

struct OpRun {
  std::vector<std::vector<float>> outputs;  // as floats (i32 outputs converted)
  Status status = Ok{};
};

// The backend's result for `node` (its output types come from the op's shape rule). `in_place_output`
// >= 0 names the input an in-place output aliases (kv_cache_write's cache). `host_io`: bind heap
// memory instead of the backend's allocator.
OpRun run_vulkan(Backend& backend, const NodeDef& node, const std::vector<OpOperand>& operands, bool host_io = false);
OpRun run_ref(const NodeDef& node, const std::vector<OpOperand>& operands);

std::unique_ptr<Backend> vulkan_backend();

// max |a - b| / (atol + rtol * |b|) over the elements (<= 1 passes).
double worst_ratio(const std::vector<float>& a, const std::vector<float>& b, double atol, double rtol);

}  // namespace hfs::vulkan::test
