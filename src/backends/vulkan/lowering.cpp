#include "backends/vulkan/lowering.h"

#include <algorithm>
#include <bit>
#include <climits>

#include "hfstatic/ext/ops.h"

namespace hfs::vulkan {
namespace {

// Eltwise op codes: shaders/eltwise.comp's switch.
enum class Elt : uint32_t { kAdd = 0, kMul = 1, kSilu = 2, kScale = 3, kSoftcap = 4, kGeluTanh = 5 };

constexpr uint32_t kEltThreads = 256;       // local size of the one-thread-per-element kernels
constexpr uint32_t kMaxGroups = 65535;      // the smallest maxComputeWorkGroupCount any device has
constexpr int64_t kMaxAttentionHeadDim = 256;
constexpr int64_t kGemvMaxRows = 4;         // more rows take the tiled kernel
constexpr int64_t kMaxWords = int64_t{1} << 31;  // element counts and offsets travel as 32-bit words

bool f32(const TensorType* t) { return t && t->dtype == DType::kF32; }

// The storage codes of shaders/weight_decode.glsl, or -1 for a format it does not read.
int weight_code(const TensorType* t) {
  if (!t) return -1;
  switch (t->dtype) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kBF16: return 2;
    case DType::kI8: return 3;
    case DType::kQ4_0: return 4;
    default: return -1;
  }
}
bool i32(const TensorType* t) { return t && t->dtype == DType::kI32; }
bool word_sized(const TensorType* t) {
  return t && (t->dtype == DType::kF32 || t->dtype == DType::kI32);
}

uint32_t bits(double v) { return std::bit_cast<uint32_t>(static_cast<float>(v)); }
uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// A 1-D grid of `n` threads in groups of kEltThreads, capped: kernels loop (grid stride) past the cap.
std::array<uint32_t, 3> elementwise_grid(int64_t n) {
  const int64_t groups = std::max<int64_t>(1, (n + kEltThreads - 1) / kEltThreads);
  return {u32(std::min<int64_t>(groups, kMaxGroups)), 1, 1};
}

int normalize_axis(int64_t axis, int rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); }

bool reject(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

}  // namespace

bool vulkan_supports(const NodeDef& node, std::span<const TensorType* const> t, std::string* why) {
  const std::string& op = node.op;
  auto in = [&](size_t i) -> const TensorType* { return i < t.size() ? t[i] : nullptr; };
  for (const TensorType* x : t)
    if (x && x->shape.numel() >= kMaxWords) return reject(why, "a tensor of 2^31 elements or more");
  if (op == "add" || op == "mul") return f32(in(0)) && f32(in(1)) ? true : reject(why, "non-f32 operands");
  if (op == "silu" || op == "scale" || op == "softcap" || op == "gelu_tanh")
    return f32(in(0)) ? true : reject(why, "non-f32 operand");
  if (op == "rms_norm") return f32(in(0)) && f32(in(1)) ? true : reject(why, "non-f32 operands");
  if (op == "reshape") return true;
  if (op == "linear") {
    if (!f32(in(0))) return reject(why, "non-f32 input");
    if (weight_code(in(1)) < 0)
      return reject(why, "weights stored as " + std::string(in(1) ? dtype_name(in(1)->dtype) : "?"));
    if (in(2) && !f32(in(2))) return reject(why, "non-f32 bias");
    return true;  // the op's rule requires the i8 scale (and only for i8)
  }
  if (op == "embedding") {
    if (weight_code(in(0)) < 0 || in(0)->dtype == DType::kQ4_0)
      return reject(why, "a table stored as " + std::string(in(0) ? dtype_name(in(0)->dtype) : "?"));
    return i32(in(1)) ? true : reject(why, "non-i32 ids");
  }
  if (op == "gather") return word_sized(in(0)) && i32(in(1)) ? true : reject(why, "elements that are not 4 bytes");
  if (op == "slice") return word_sized(in(0)) ? true : reject(why, "elements that are not 4 bytes");
  if (op == "transpose")
    return word_sized(in(0)) && in(0)->shape.rank() <= 4 ? true : reject(why, "rank > 4 or elements that are not 4 bytes");
  if (op == "rope") return f32(in(0)) && i32(in(1)) && f32(in(2)) ? true : reject(why, "operand types");
  // int8 caches (contract minor 1) and their scales have no Vulkan kernels yet: named, so the nodes go to a
  // CPU backend (or, with Vulkan alone, the load fails naming them) instead of being misread.
  if (op == "kv_scale_write") return reject(why, "int8 KV caches (cache_dtype \"int8\"): no Vulkan kernel");
  const TensorType* cache = op == "attention" ? in(1) : op == "kv_cache_write" ? in(0) : nullptr;
  if (cache != nullptr && cache->dtype == DType::kI8)
    return reject(why, "an int8 KV cache (cache_dtype \"int8\"): no Vulkan kernel");
  if (op == "kv_cache_write") {
    if (!in(0) || !f32(in(1))) return reject(why, "operand types");
    if (f32(in(0))) return true;
    // f16 caches are written a 4-byte word (two values) at a time.
    return in(0)->dtype == DType::kF16 && in(0)->shape[3] % 2 == 0 ? true : reject(why, "an f16 cache of odd head dim");
  }
  if (op == "attention") {
    if (!in(1) || (in(1)->dtype != DType::kF32 && in(1)->dtype != DType::kF16)) return reject(why, "the cache type");
    if (!in(0) || in(0)->shape.rank() != 4 || in(0)->shape[3] > kMaxAttentionHeadDim)
      return reject(why, "head dim > " + std::to_string(kMaxAttentionHeadDim));
    return true;
  }
  return reject(why, "no kernel");
}

Result<Lowered> lower_node(size_t index, const NodeDef& node, std::span<const Operand> in,
                           std::span<const TensorType* const> it, std::span<const Operand> out,
                           std::span<const TensorType* const> ot, const LowerOptions& options) {
  const std::string& op = node.op;
  const std::string label = "node " + std::to_string(index) + " (op '" + op + "')";
  Lowered l;
  Dispatch d;
  d.node = index;
  auto bind = [&](std::initializer_list<Operand> ops) {
    size_t b = 0;
    for (const Operand& o : ops) d.operands[b++] = o;
  };
  auto params = [&](uint32_t first, std::initializer_list<uint32_t> words) {
    uint32_t w = first;
    for (uint32_t v : words) d.push[w++] = v;
  };
  auto input_check = [&](size_t operand, int64_t count, int32_t lo, int64_t hi, const std::string& name) {
    if (in[operand].kind == Operand::Kind::kInput)
      l.check = IndexCheck{in[operand].index, count, lo, hi, label + ": " + name};
  };

  if (op == "reshape") return l;  // a view: shares its source's buffer
  if (op == "add" || op == "mul" || op == "silu" || op == "scale" || op == "softcap" || op == "gelu_tanh") {
    const int64_t n = it[0]->shape.numel();
    Elt e = Elt::kAdd;
    double value = 0.0;
    if (op == "mul") e = Elt::kMul;
    if (op == "silu") e = Elt::kSilu;
    if (op == "scale") e = Elt::kScale, value = attr_float(node.attrs, "value", 1.0);
    if (op == "softcap") e = Elt::kSoftcap, value = attr_float(node.attrs, "cap", 1.0);
    if (op == "gelu_tanh") e = Elt::kGeluTanh;
    d.kernel = Kernel::kEltwise;
    bind({in[0], in.size() > 1 ? in[1] : in[0], out[0]});
    params(3, {u32(n), static_cast<uint32_t>(e), bits(value)});
    d.groups = elementwise_grid(n);
  } else if (op == "rms_norm") {
    const int64_t dim = it[0]->shape[it[0]->shape.rank() - 1];
    const int64_t rows = it[0]->shape.numel() / std::max<int64_t>(dim, 1);
    d.kernel = Kernel::kRmsNorm;
    bind({in[0], in[1], out[0]});
    params(3, {u32(rows), u32(dim), bits(attr_float(node.attrs, "eps")), attr_bool(node.attrs, "unit_offset") ? 1u : 0u});
    d.groups = {u32(std::min<int64_t>(std::max<int64_t>(rows, 1), kMaxGroups)), 1, 1};
  } else if (op == "linear") {
    const int64_t n = it[1]->shape[0], k = it[1]->shape[1];
    const int64_t m = it[0]->shape.numel() / std::max<int64_t>(k, 1);
    const bool bias = in.size() > 2 && in[2].kind != Operand::Kind::kNone;
    const bool scale = in.size() > 3 && in[3].kind != Operand::Kind::kNone;
    // Absent operands bind the weight buffer (never read: has_bias = 0, no scale outside i8).
    bind({in[0], in[1], bias ? in[2] : in[1], scale ? in[3] : in[1], out[0]});
    params(5, {u32(m), u32(n), u32(k), bias ? 1u : 0u, static_cast<uint32_t>(weight_code(it[1]))});
    if (m <= kGemvMaxRows) {
      // A workgroup per output column, grid folded into 2-D past the cap.
      d.kernel = options.subgroup_gemv ? Kernel::kLinearGemvSubgroup : Kernel::kLinearGemv;
      d.groups = {u32(std::min<int64_t>(n, kMaxGroups)), u32((n + kMaxGroups - 1) / kMaxGroups), 1};
    } else {
      d.kernel = Kernel::kLinearTiled;
      d.groups = {u32((n + 31) / 32), u32((m + 31) / 32), 1};
      if (d.groups[0] > kMaxGroups || d.groups[1] > kMaxGroups)
        return make_error(ErrorCode::kUnsupported, "vulkan: " + label + ": output of " + std::to_string(m) + " x " +
                                                       std::to_string(n) + " exceeds the dispatch grid");
    }
  } else if (op == "embedding") {
    const int64_t v = it[0]->shape[0], h = it[0]->shape[1], t = it[1]->shape.numel();
    const bool scale = in.size() > 2 && in[2].kind != Operand::Kind::kNone;
    d.kernel = Kernel::kEmbedding;
    bind({in[0], in[1], scale ? in[2] : in[0], out[0]});
    params(4, {u32(t), u32(h), u32(v), static_cast<uint32_t>(weight_code(it[0]))});
    d.groups = elementwise_grid(t * h);
    input_check(1, t, 0, v, "ids");
  } else if (op == "gather") {
    const Shape& s = it[0]->shape;
    const int axis = normalize_axis(attr_int(node.attrs, "axis"), s.rank());
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= s[i];
    for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
    const int64_t n = it[1]->shape[0];
    d.kernel = Kernel::kGather;
    bind({in[0], in[1], out[0]});
    params(3, {u32(outer), u32(n), u32(s[axis]), u32(inner)});
    d.groups = elementwise_grid(outer * n * inner);
    input_check(1, n, 0, s[axis], "index");
  } else if (op == "slice") {
    const Shape& s = it[0]->shape;
    const int axis = normalize_axis(attr_int(node.attrs, "axis"), s.rank());
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= s[i];
    for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
    const int64_t start = attr_int(node.attrs, "start"), end = attr_int(node.attrs, "end");
    d.kernel = Kernel::kSlice;
    bind({in[0], out[0]});
    params(2, {u32(outer), u32(end - start), u32(s[axis]), u32(start), u32(inner)});
    d.groups = elementwise_grid(outer * (end - start) * inner);
  } else if (op == "transpose") {
    const Shape& s = it[0]->shape;
    const std::vector<int64_t> perm = attr_ints(node.attrs, "perm");
    const int rank = s.rank();
    // Padded to rank 4 at the front: out index (i0..i3) reads x at sum(i_k * in_stride[perm[k]]).
    int64_t in_stride[4] = {0, 0, 0, 0}, out_dims[4] = {1, 1, 1, 1}, stride_for_out[4] = {0, 0, 0, 0};
    int64_t st = 1;
    for (int i = rank - 1; i >= 0; --i) in_stride[i] = st, st *= s[i];
    for (int k = 0; k < rank; ++k) {
      out_dims[4 - rank + k] = s[static_cast<int>(perm[static_cast<size_t>(k)])];
      stride_for_out[4 - rank + k] = in_stride[perm[static_cast<size_t>(k)]];
    }
    d.kernel = Kernel::kTranspose;
    bind({in[0], out[0]});
    params(2, {u32(s.numel()), u32(out_dims[0]), u32(out_dims[1]), u32(out_dims[2]), u32(out_dims[3]),
               u32(stride_for_out[0]), u32(stride_for_out[1]), u32(stride_for_out[2]), u32(stride_for_out[3])});
    d.groups = elementwise_grid(s.numel());
  } else if (op == "rope") {
    const Shape& s = it[0]->shape;  // [1, T, H, D]
    d.kernel = Kernel::kRope;
    bind({in[0], in[1], in[2], out[0]});
    params(4, {u32(s[1]), u32(s[2]), u32(s[3]), u32(it[2]->shape[0]),
               bits(attr_float(node.attrs, "attention_scaling", 1.0))});
    d.groups = elementwise_grid(s.numel());
  } else if (op == "kv_cache_write") {
    const Shape& c = it[0]->shape;  // [1, Hkv, S, D]
    const int64_t t = it[1]->shape[1];
    d.kernel = Kernel::kKvCacheWrite;
    bind({out[0], in[1], in[2]});  // the output is the cache's own buffer
    params(3, {u32(t), u32(c[1]), u32(c[2]), u32(c[3]), it[0]->dtype == DType::kF16 ? 1u : 0u});
    d.groups = elementwise_grid(c[1] * c[3]);
    input_check(2, t, INT32_MIN, c[2], "slots");
  } else if (op == "attention") {
    const Shape& q = it[0]->shape;  // [1, T, Hq, D]
    const Shape& k = it[1]->shape;  // [1, Hkv, S, D]
    d.kernel = Kernel::kAttention;
    bind({in[0], in[1], in[2], in[3], out[0]});
    params(5, {u32(q[1]), u32(q[2]), u32(k[1]), u32(k[2]), u32(q[3]), bits(attr_float(node.attrs, "scale")),
               bits(attr_float(node.attrs, "softcap", 0.0)), it[1]->dtype == DType::kF16 ? 1u : 0u});
    if (q[2] > kMaxGroups || q[1] > kMaxGroups)
      return make_error(ErrorCode::kUnsupported, "vulkan: " + label + ": too many heads or rows for one dispatch");
    d.groups = {u32(q[2]), u32(q[1]), 1};
  } else {
    return make_error(ErrorCode::kUnsupported, "vulkan: " + label + ": no kernel");
  }
  (void)ot;
  l.dispatch = d;
  return l;
}

}  // namespace hfs::vulkan
