// Safetensors reader: valid files, every malformed-header case, sharded checkpoints.
#include "hfstatic/ext/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "support/checkpoint_writer.h"

namespace hfs {
namespace {

using testing::make_tensor;
using testing::safetensors_bytes;

std::span<const std::byte> as_bytes(const std::vector<uint8_t>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}

// Parses a file image whose header JSON is `header` and whose data section is `data_size` zero bytes.
Result<std::vector<SafetensorInfo>> parse_header(const std::string& header, size_t data_size = 64) {
  std::vector<uint8_t> bytes = safetensors_bytes({}, header);
  bytes.resize(bytes.size() + data_size, 0);
  return parse_safetensors(as_bytes(bytes), "bad.safetensors");
}

void expect_bad(const Result<std::vector<SafetensorInfo>>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << fragment << "'";
  EXPECT_EQ(r.error().code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(r.error().message().find("bad.safetensors"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find(fragment), std::string::npos) << r.error().message();
}

TEST(Safetensors, ParsesValidFile) {
  auto a = make_tensor("a", DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = make_tensor("b", DType::kBF16, {4}, {1, 2, 3, 4});
  auto bytes = safetensors_bytes({a, b});
  auto r = parse_safetensors(as_bytes(bytes), "ok.safetensors");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->size(), 2u);  // __metadata__ ignored
  const SafetensorInfo& ta = (*r)[0];
  EXPECT_EQ(ta.name, "a");
  EXPECT_EQ(ta.dtype, DType::kF32);
  EXPECT_EQ(ta.shape, (Shape{2, 3}));
  EXPECT_EQ(ta.nbytes, 24u);
  const uint64_t header_len = bytes.size() - 24 - 8 - 8;
  EXPECT_EQ(ta.offset, 8 + header_len);
  float first;
  std::memcpy(&first, bytes.data() + ta.offset, 4);
  EXPECT_EQ(first, 1.0f);
  EXPECT_EQ((*r)[1].dtype, DType::kBF16);
  EXPECT_EQ((*r)[1].offset, 8 + header_len + 24);
}

TEST(Safetensors, AllDTypes) {
  const std::pair<const char*, DType> cases[] = {{"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16},
                                                 {"I8", DType::kI8},   {"U8", DType::kU8},   {"I32", DType::kI32},
                                                 {"I64", DType::kI64}};
  for (auto [name, dt] : cases) {
    const uint64_t size = dtype_info(dt).block_bytes * 2;
    nlohmann::json h = {{"t", {{"dtype", name}, {"shape", {2}}, {"data_offsets", {0, size}}}}};
    auto r = parse_header(h.dump());
    ASSERT_TRUE(r.ok()) << name << ": " << r.error().to_string();
    EXPECT_EQ((*r)[0].dtype, dt);
  }
}

TEST(Safetensors, TooSmall) {
  std::vector<uint8_t> b = {1, 2, 3};
  expect_bad(parse_safetensors(as_bytes(b), "bad.safetensors"), "smaller than the 8-byte header length");
}

TEST(Safetensors, HeaderLongerThanFile) {
  std::vector<uint8_t> b = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  expect_bad(parse_safetensors(as_bytes(b), "bad.safetensors"), "exceeds the file size");
}

TEST(Safetensors, HeaderOverLimit) {
  std::vector<uint8_t> b = {0, 0, 0, 0, 0, 0, 0, 1, '{', '}'};  // 2^56
  expect_bad(parse_safetensors(as_bytes(b), "bad.safetensors"), "exceeds the limit");
}

TEST(Safetensors, MalformedHeaders) {
  expect_bad(parse_header("{not json"), "not valid JSON");
  expect_bad(parse_header("[1,2]"), "must be a JSON object");
  expect_bad(parse_header(R"({"t":5})"), "tensor 't': expected an object");
  expect_bad(parse_header(R"({"t":{"shape":[1],"data_offsets":[0,4]}})"), "'dtype'");
  expect_bad(parse_header(R"({"t":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})"), "unsupported dtype 'F8_E4M3'");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})"), "'shape'");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})"), "non-negative");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})"), "non-negative integers");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,1,1],"data_offsets":[0,4]}})"), "rank 7");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[1]}})"), "data_offsets");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})"), "data_offsets");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})"), "begin > end");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})"), "non-negative");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[20],"data_offsets":[0,80]}})", 64), "exceeds the data section size 64");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})"), "needs 8 bytes, data_offsets give 4");
  expect_bad(parse_header(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})"), "overflowing");
  expect_bad(parse_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})"),
             "'a' and 'b' have overlapping data ranges");
}

TEST(Safetensors, EmptyTensorsMayShareOffsets) {
  auto r = parse_header(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
}

// Fuzz-style robustness: random corruptions of a valid file are rejected or parsed, never crash, and any
// accepted tensor lies inside the buffer.
TEST(Safetensors, MutatedFilesNeverEscapeTheBuffer) {
  auto a = make_tensor("alpha", DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = make_tensor("beta", DType::kF16, {4}, {1, 2, 3, 4});
  const auto base = safetensors_bytes({a, b});
  uint32_t s = 7;
  auto next = [&] { return s = s * 1664525u + 1013904223u; };
  for (int iter = 0; iter < 3000; ++iter) {
    auto bytes = base;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = next() % bytes.size();
      switch (next() % 3) {
        case 0: bytes[at] = static_cast<uint8_t>(next()); break;
        case 1: bytes[at] = static_cast<uint8_t>("0123456789[]{},:\"-"[next() % 18]); break;
        default: bytes.resize(at + 1); break;
      }
    }
    auto r = parse_safetensors(as_bytes(bytes), "fuzz");
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), ErrorCode::kBadCheckpoint);
      continue;
    }
    for (const auto& t : *r) EXPECT_LE(t.offset + t.nbytes, bytes.size()) << t.name;
  }
}

class CheckpointTest : public ::testing::Test {
 protected:
  std::string dir = testing::temp_dir("ckpt");
  void TearDown() override { std::filesystem::remove_all(dir); }
};

TEST_F(CheckpointTest, SingleFile) {
  testing::CheckpointWriter w(dir);
  w.add("x", DType::kF32, {2}, {3.5f, -1.0f});
  w.write();
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.ok()) << ck.error().to_string();
  auto d = (*ck)->data("x");
  ASSERT_TRUE(d.ok());
  float v[2];
  std::memcpy(v, d->data(), 8);
  EXPECT_EQ(v[0], 3.5f);
  EXPECT_EQ(v[1], -1.0f);
  EXPECT_EQ((*ck)->file_of("x"), "model.safetensors");
  auto missing = (*ck)->data("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kMissingTensor);
  EXPECT_NE(missing.error().message().find("'nope'"), std::string::npos);
}

TEST_F(CheckpointTest, Sharded) {
  testing::CheckpointWriter w(dir);
  const char* names[] = {"t0", "t1", "t2", "t3", "t4"};
  for (int i = 0; i < 5; ++i) w.add(names[i], DType::kF32, {1}, {static_cast<float>(i)});
  w.write(/*shards=*/2);
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.ok()) << ck.error().to_string();
  EXPECT_EQ((*ck)->tensor_names().size(), 5u);
  for (int i = 0; i < 5; ++i) {
    auto d = (*ck)->data(names[i]);
    ASSERT_TRUE(d.ok());
    float v;
    std::memcpy(&v, d->data(), 4);
    EXPECT_EQ(v, static_cast<float>(i));
  }
  EXPECT_EQ((*ck)->file_of("t1"), "model-00002-of-00002.safetensors");
}

TEST_F(CheckpointTest, ShardMissingTensorNamedInIndex) {
  testing::CheckpointWriter w(dir);
  w.add("a", DType::kF32, {1});
  w.add("b", DType::kF32, {1});
  w.write(2);
  testing::write_text(dir + "/model.safetensors.index.json",
                      R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors"}})");
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.error().code(), ErrorCode::kMissingTensor);
  EXPECT_NE(ck.error().message().find("'b'"), std::string::npos) << ck.error().message();
}

TEST_F(CheckpointTest, ShardFileMissing) {
  testing::write_text(dir + "/model.safetensors.index.json", R"({"weight_map":{"a":"gone.safetensors"}})");
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.error().code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(ck.error().message().find("gone.safetensors"), std::string::npos) << ck.error().message();
}

TEST_F(CheckpointTest, ShardPathEscapingDirectoryRejected) {
  testing::write_text(dir + "/model.safetensors.index.json", R"({"weight_map":{"a":"../x.safetensors"}})");
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.error().code(), ErrorCode::kBadCheckpoint);
}

TEST_F(CheckpointTest, BadIndex) {
  testing::write_text(dir + "/model.safetensors.index.json", R"({"metadata":{}})");
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_NE(ck.error().message().find("weight_map"), std::string::npos);
}

TEST_F(CheckpointTest, NoWeights) {
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.error().code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(ck.error().message().find("no model.safetensors"), std::string::npos);
}

TEST_F(CheckpointTest, CorruptFileNamesFile) {
  testing::write_bytes(dir + "/model.safetensors", {4, 0, 0, 0, 0, 0, 0, 0, '{', 'x', 'x', '}'});
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.error().code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(ck.error().message().find("model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace hfs
