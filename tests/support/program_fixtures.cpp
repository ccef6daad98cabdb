#include "support/program_fixtures.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include "hfstatic/ext/ops.h"

namespace hfs::test {
namespace {

using Types = Result<std::vector<TensorType>>;

Error type_error(ErrorCode code, const std::string& what) { return make_error(code, what); }

Types infer_add(std::span<const TensorType* const> in, const Attrs&) {
  if (in[0]->dtype != DType::kF32 || in[1]->dtype != DType::kF32)
    return type_error(ErrorCode::kDTypeMismatch, "operands must be f32, got " + in[0]->to_string() + " and " + in[1]->to_string());
  if (in[0]->shape != in[1]->shape)
    return type_error(ErrorCode::kShapeMismatch, "operand shapes differ: " + in[0]->to_string() + " vs " + in[1]->to_string());
  return std::vector<TensorType>{*in[0]};
}

Types infer_scale(std::span<const TensorType* const> in, const Attrs&) {
  if (in[0]->dtype != DType::kF32) return type_error(ErrorCode::kDTypeMismatch, "x must be f32, got " + in[0]->to_string());
  if (in.size() > 1 && in[1] && *in[1] != *in[0])
    return type_error(ErrorCode::kShapeMismatch, "bias must be " + in[0]->to_string() + ", got " + in[1]->to_string());
  return std::vector<TensorType>{*in[0]};
}

Types infer_inplace(std::span<const TensorType* const> in, const Attrs&) {
  if (in[0]->dtype != DType::kF32) return type_error(ErrorCode::kDTypeMismatch, "dst must be f32, got " + in[0]->to_string());
  if (*in[1] != *in[0]) return type_error(ErrorCode::kShapeMismatch, "src must be " + in[0]->to_string() + ", got " + in[1]->to_string());
  return std::vector<TensorType>{*in[0]};
}

Types infer_view(std::span<const TensorType* const> in, const Attrs& attrs) {
  std::vector<int64_t> dims = attr_ints(attrs, "shape");
  if (dims.size() > static_cast<size_t>(kMaxRank)) return type_error(ErrorCode::kShapeMismatch, "shape rank > 6");
  TensorType out{in[0]->dtype, Shape(std::span<const int64_t>(dims))};
  if (out.shape.numel() != in[0]->shape.numel())
    return type_error(ErrorCode::kShapeMismatch, "cannot view " + in[0]->to_string() + " as " + out.shape.to_string());
  return std::vector<TensorType>{out};
}

Types infer_split(std::span<const TensorType* const> in, const Attrs&) {
  TensorType t = *in[0];
  if (t.dtype != DType::kF32 || t.shape.rank() == 0 || t.shape[t.shape.rank() - 1] % 2 != 0)
    return type_error(ErrorCode::kShapeMismatch, "x must be f32 with an even last dim, got " + t.to_string());
  t.shape[t.shape.rank() - 1] /= 2;
  return std::vector<TensorType>{t, t};
}

Status add_kernel(const KernelArgs& a) {
  const float* x = a.inputs[0].data<float>();
  const float* y = a.inputs[1].data<float>();
  float* o = a.outputs[0].data<float>();
  for (int64_t i = 0; i < a.inputs[0].numel(); ++i) o[i] = x[i] + y[i];
  return Ok{};
}

Status scale_kernel(const KernelArgs& a) {
  const float v = static_cast<float>(attr_float(a.attrs, "value"));
  const float* x = a.inputs[0].data<float>();
  const float* b = a.inputs.size() > 1 ? a.inputs[1].data<float>() : nullptr;
  float* o = a.outputs[0].data<float>();
  for (int64_t i = 0; i < a.inputs[0].numel(); ++i) o[i] = x[i] * v + (b ? b[i] : 0.0f);
  return Ok{};
}

Status inplace_kernel(const KernelArgs& a) {
  std::memcpy(a.outputs[0].ptr, a.inputs[1].ptr, a.inputs[1].nbytes());
  return Ok{};
}

Status view_kernel(const KernelArgs&) { return Ok{}; }  // output shares the input's buffer

const bool kRegistered = [] {
  register_test_ops();
  return true;
}();

}  // namespace

void register_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_op({.name = "test.add", .min_inputs = 2, .max_inputs = 2, .num_outputs = 1, .attrs = {}, .infer = &infer_add,
                 .reference = &add_kernel});
    register_op({.name = "test.scale", .min_inputs = 1, .max_inputs = 2, .num_outputs = 1,
                 .attrs = {{"value", Value::Kind::kFloat, true}}, .infer = &infer_scale, .reference = &scale_kernel});
    register_op({.name = "test.inplace_write", .min_inputs = 2, .max_inputs = 2, .num_outputs = 1, .attrs = {},
                 .infer = &infer_inplace, .reference = &inplace_kernel, .alias_input = 0, .in_place = true});
    register_op({.name = "test.view", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1,
                 .attrs = {{"shape", Value::Kind::kArray, true}}, .infer = &infer_view, .reference = &view_kernel,
                 .alias_input = 0, .in_place = false});
    register_op({.name = "test.split", .min_inputs = 1, .max_inputs = 1, .num_outputs = 2, .attrs = {}, .infer = &infer_split});
  });
  (void)kRegistered;
}

std::string temp_path(std::string_view stem) {
  static std::atomic<int> counter{0};
  const char* dir = std::getenv("TMPDIR");
  std::string d = dir && *dir ? dir : "/tmp";
  return d + "/hfs_" + std::string(stem) + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

std::vector<float> tiny_weight() {
  std::vector<float> w(8);
  for (int i = 0; i < 8; ++i) w[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i);
  return w;
}

namespace {
const TensorType kF24{DType::kF32, {2, 4}};
}

MethodDef tiny_prefill(const std::string& w_name) {
  MethodDef m;
  m.name = "prefill";
  m.inputs = {{"x", kF24, IORole::kInput, ""}, {"cache", kF24, IORole::kState, ""}};
  m.nodes = {{"test.add", {"x", w_name}, {"h"}, {}},
             {"test.scale", {"h"}, {"y"}, {{"value", Value(2.0)}}},
             {"test.inplace_write", {"cache", "h"}, {"cache_out"}, {}}};
  m.outputs = {{"y", kF24, IORole::kOutput, ""}, {"cache_out", kF24, IORole::kState, "cache"}};
  return m;
}

MethodDef tiny_decode(const std::string& w_name) {
  MethodDef m;
  m.name = "decode";
  m.inputs = {{"x", {DType::kF32, {1, 8}}, IORole::kInput, ""}, {"cache", kF24, IORole::kState, ""}};
  m.nodes = {{"test.view", {"x"}, {"xv"}, {{"shape", Value::int_array({2, 4})}}},
             {"test.add", {"xv", w_name}, {"h"}, {}},
             {"test.inplace_write", {"cache", "h"}, {"cache_out"}, {}}};
  m.outputs = {{"h", kF24, IORole::kOutput, ""}, {"cache_out", kF24, IORole::kState, "cache"}};
  return m;
}

Status build_tiny_program(ProgramWriter& w) {
  register_test_ops();
  w.set_metadata("general.name", Value("tiny"));
  w.set_metadata("tiny.float", Value(0.25));
  w.set_metadata("tiny.list", Value::int_array({1, 2, 3}));
  w.set_metadata("tiny.flag", Value(true));
  Value nested = Value::object();
  nested.set("a", Value("b"));
  w.set_metadata("tiny.nested", nested);

  std::vector<float> wv = tiny_weight();
  auto wbytes = std::as_bytes(std::span<const float>(wv));
  // Each method adds the weight it uses, as an exporter would; identical content is stored once.
  HFS_ASSIGN_OR_RETURN(auto w1, w.add_constant("w", kF24, wbytes));
  HFS_TRY(w.add_method(tiny_prefill(w1)));
  HFS_ASSIGN_OR_RETURN(auto w2, w.add_constant("w", kF24, wbytes));
  HFS_TRY(w.add_method(tiny_decode(w2)));

  std::vector<std::byte> q(36);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::byte>(i);
  HFS_TRY(w.add_constant("q", {DType::kQ4_0, {2, 32}}, q));
  const int8_t s[3] = {-1, 0, 1};
  HFS_TRY(w.add_constant("s", {DType::kI8, {3}}, std::as_bytes(std::span<const int8_t>(s))));
  return Ok{};
}

Status write_tiny_program(const std::string& path) {
  ProgramWriter w;
  HFS_TRY(build_tiny_program(w));
  return w.write(path);
}

Result<std::vector<std::byte>> tiny_program_bytes() {
  std::string path = temp_path("tiny");
  HFS_TRY(write_tiny_program(path));
  auto bytes = read_file_bytes(path);
  std::remove(path.c_str());
  return bytes;
}

Result<std::vector<std::byte>> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(ErrorCode::kIo, "cannot open " + path);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  if (!c.empty()) std::memcpy(out.data(), c.data(), c.size());
  return out;
}

Status write_file_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) return make_error(ErrorCode::kIo, "cannot write " + path);
  return Ok{};
}

uint64_t get_u64(const std::vector<std::byte>& f, size_t off) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(f[off + i]) << (8 * i);
  return v;
}

void put_u64(std::vector<std::byte>& f, size_t off, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) f[off + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

void put_u32(std::vector<std::byte>& f, size_t off, uint32_t v) {
  for (size_t i = 0; i < 4; ++i) f[off + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

Result<ProgramImage> split_program(const std::vector<std::byte>& file) {
  if (file.size() < 64) return make_error(ErrorCode::kTruncated, "shorter than a header");
  uint64_t moff = get_u64(file, 16), msize = get_u64(file, 24), doff = get_u64(file, 32), dsize = get_u64(file, 40);
  if (moff + msize > file.size() || doff + dsize > file.size()) return make_error(ErrorCode::kTruncated, "bad header");
  HFS_ASSIGN_OR_RETURN(auto json,
                       Value::parse_json(std::string_view(reinterpret_cast<const char*>(file.data() + moff), msize)));
  ProgramImage img;
  img.manifest = json;
  img.data.assign(file.begin() + static_cast<ptrdiff_t>(doff), file.begin() + static_cast<ptrdiff_t>(doff + dsize));
  return img;
}

std::vector<std::byte> assemble_program_json(const std::string& manifest, const std::vector<std::byte>& data,
                                             uint32_t version) {
  const uint64_t moff = 64, msize = manifest.size();
  const uint64_t doff = (moff + msize + 63) / 64 * 64;
  std::vector<std::byte> f(doff + data.size(), std::byte{0});
  std::memcpy(f.data(), "HFSTATIC", 8);
  put_u32(f, 8, version);
  put_u32(f, 12, 64);
  put_u64(f, 16, moff);
  put_u64(f, 24, msize);
  put_u64(f, 32, doff);
  put_u64(f, 40, data.size());
  put_u64(f, 48, f.size());
  std::memcpy(f.data() + moff, manifest.data(), msize);
  if (!data.empty()) std::memcpy(f.data() + doff, data.data(), data.size());
  return f;
}

std::vector<std::byte> assemble_program(const ProgramImage& img) {
  return assemble_program_json(img.manifest.to_json(), img.data, img.version);
}

}  // namespace hfs::test
