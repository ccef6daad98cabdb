#include "op_harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/vulkan/backend.h"
#include "core/half.h"
#include "core/quant.h"
#include "hfstatic/ext/allocator.h"
#include "support/random_floats.h"

namespace hfs::vulkan::test {

const TensorView* Store::find(std::string_view name) const {
  auto it = views_.find(name);
  return it == views_.end() ? nullptr : &it->second;
}

Status Store::add(const std::string& name, const TensorType& type, std::span<const std::byte> bytes) {
  auto& b = bytes_[name];
  b.assign(reinterpret_cast<const uint8_t*>(bytes.data()), reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size());
  views_[name] = TensorView(b.data(), type.dtype, type.shape);
  return Ok{};
}

OpOperand f32_operand(const std::string& name, Shape shape, std::vector<float> values, bool constant) {
  OpOperand o{name, {DType::kF32, shape}, std::vector<uint8_t>(values.size() * 4), constant};
  std::memcpy(o.bytes.data(), values.data(), o.bytes.size());
  return o;
}

OpOperand i32_operand(const std::string& name, Shape shape, std::vector<int32_t> values) {
  OpOperand o{name, {DType::kI32, shape}, std::vector<uint8_t>(values.size() * 4), false};
  std::memcpy(o.bytes.data(), values.data(), o.bytes.size());
  return o;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  hfs::test::Uniform<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

namespace {

std::vector<TensorType> output_types(const NodeDef& node, const std::vector<OpOperand>& operands) {
  std::vector<const TensorType*> types;
  for (const OpOperand& o : operands) types.push_back(&o.type);
  auto r = find_op(node.op)->infer(types, node.attrs);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : std::vector<TensorType>{};
}

std::vector<float> as_floats(const void* p, const TensorType& t) {
  const size_t n = static_cast<size_t>(t.shape.numel());
  std::vector<float> out(n);
  if (t.dtype == DType::kI32) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<const int32_t*>(p)[i]);
  } else if (t.dtype == DType::kF16) {
    for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  } else {
    std::memcpy(out.data(), p, n * 4);
  }
  return out;
}

}  // namespace

std::unique_ptr<Backend> vulkan_backend() {
  auto b = make_vulkan_backend(Value());
  EXPECT_TRUE(b.ok()) << b.error().to_string();
  return b.ok() ? std::move(*b) : nullptr;
}

OpRun run_vulkan(Backend& backend, const NodeDef& node, const std::vector<OpOperand>& operands, bool host_io) {
  OpRun run;
  auto store = std::make_shared<Store>();
  Subgraph sg;
  sg.nodes = {node};
  sg.constants = store.get();
  std::vector<TensorType> outs = output_types(node, operands);
  const OpSchema* schema = find_op(node.op);
  std::vector<Buffer> buffers;
  std::vector<std::vector<uint8_t>> heap;
  std::vector<TensorView> in_views;
  auto place = [&](size_t bytes) -> void* {
    if (host_io) {
      heap.emplace_back(bytes + 64);
      return heap.back().data();
    }
    auto b = backend.allocator()->allocate(bytes);
    EXPECT_TRUE(b.ok());
    buffers.push_back(std::move(*b));
    return buffers.back().data();
  };
  for (const OpOperand& o : operands) {
    if (o.name.empty()) continue;
    if (o.constant) {
      EXPECT_TRUE(store->add(o.name, o.type, std::as_bytes(std::span(o.bytes))).ok());
      continue;
    }
    sg.inputs.push_back(IOSpec{o.name, o.type, IORole::kInput, ""});
    void* p = place(o.bytes.size());
    std::memcpy(p, o.bytes.data(), o.bytes.size());
    in_views.emplace_back(p, o.type.dtype, o.type.shape);
  }
  std::vector<TensorView> out_views;
  for (size_t j = 0; j < outs.size(); ++j) {
    const bool in_place = j == 0 && schema->in_place && schema->alias_input >= 0;
    if (in_place) {
      sg.outputs.push_back(IOSpec{node.outputs[j], outs[j], IORole::kState, operands[static_cast<size_t>(schema->alias_input)].name});
      out_views.push_back(in_views[static_cast<size_t>(schema->alias_input)]);
    } else {
      sg.outputs.push_back(IOSpec{node.outputs[j], outs[j], IORole::kOutput, ""});
      out_views.emplace_back(place(outs[j].nbytes()), outs[j].dtype, outs[j].shape);
    }
  }
  auto d = backend.compile(sg);
  if (!d.ok()) {
    run.status = d.error();
    return run;
  }
  run.status = (*d)->execute(in_views, out_views);
  for (size_t j = 0; j < outs.size(); ++j) run.outputs.push_back(as_floats(out_views[j].ptr, outs[j]));
  return run;
}

OpRun run_ref(const NodeDef& node, const std::vector<OpOperand>& operands) {
  OpRun run;
  std::vector<TensorType> outs = output_types(node, operands);
  std::vector<std::vector<uint8_t>> in_bytes;
  std::vector<TensorView> in_views, out_views;
  for (const OpOperand& o : operands) in_bytes.push_back(o.bytes);
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].name.empty()) in_views.emplace_back();
    else in_views.emplace_back(in_bytes[i].data(), operands[i].type.dtype, operands[i].type.shape);
  }
  const OpSchema* schema = find_op(node.op);
  std::vector<std::vector<uint8_t>> out_bytes;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (j == 0 && schema->in_place && schema->alias_input >= 0) {
      out_views.push_back(in_views[static_cast<size_t>(schema->alias_input)]);
    } else {
      out_bytes.emplace_back(outs[j].nbytes());
      out_views.emplace_back(out_bytes.back().data(), outs[j].dtype, outs[j].shape);
    }
  }
  run.status = run_reference(node, in_views, out_views);
  for (size_t j = 0; j < outs.size(); ++j) run.outputs.push_back(as_floats(out_views[j].ptr, outs[j]));
  return run;
}

double worst_ratio(const std::vector<float>& a, const std::vector<float>& b, double atol, double rtol) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
    worst = std::max(worst, diff / (atol + rtol * std::fabs(static_cast<double>(b[i]))));
  }
  return worst;
}

// w [n, k] stored as `dtype` (the exporter's encoders, core/quant.h), plus its per-row scale for i8.
std::vector<OpOperand> stored_weight(DType dtype, int64_t n, int64_t k, uint32_t seed) {
  const std::vector<float> w = random_floats(static_cast<size_t>(n * k), seed);
  OpOperand op{"w", {dtype, {n, k}}, {}, true};
  std::vector<OpOperand> out;
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
      op.bytes.resize(w.size() * 2);
      for (size_t i = 0; i < w.size(); ++i) {
        const uint16_t h = dtype == DType::kF16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
        std::memcpy(op.bytes.data() + 2 * i, &h, 2);
      }
      break;
    case DType::kI8: {
      op.bytes.resize(w.size());
      std::vector<float> scale(static_cast<size_t>(n));
      quant::quantize_i8_per_channel(w.data(), n, k, reinterpret_cast<int8_t*>(op.bytes.data()), scale.data());
      out.push_back(op);
      out.push_back(f32_operand("w.scale", {n}, scale, true));
      return out;
    }
    case DType::kQ4_0:
      op.bytes.resize(static_cast<size_t>(quant::q4_0_bytes(n, k)));
      EXPECT_TRUE(quant::quantize_q4_0(w.data(), n, k, op.bytes.data()).ok());
      break;
    default: return {f32_operand("w", {n, k}, w, true)};
  }
  out.push_back(op);
  return out;
}

}  // namespace hfs::vulkan::test
