// Round trip through ProgramWriter and Program::load: metadata, constant bytes, methods, layout rules,
// and identical results from the mmap and read() paths. Expected values come from the fixture's own
// inputs (tiny_weight(), hand-written methods) and from decoding the header by hand per the format doc.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "hfstatic/program.h"
#include "support/program_fixtures.h"

namespace hfs {
namespace {

void expect_same_method(const MethodDef& a, const MethodDef& b) {
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].name, b.inputs[i].name);
    EXPECT_EQ(a.inputs[i].type, b.inputs[i].type) << a.inputs[i].type.to_string();
    EXPECT_EQ(a.inputs[i].role, b.inputs[i].role);
  }
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    EXPECT_EQ(a.outputs[i].name, b.outputs[i].name);
    EXPECT_EQ(a.outputs[i].type, b.outputs[i].type);
    EXPECT_EQ(a.outputs[i].role, b.outputs[i].role);
    EXPECT_EQ(a.outputs[i].alias_of, b.outputs[i].alias_of);
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].op, b.nodes[i].op);
    EXPECT_EQ(a.nodes[i].inputs, b.nodes[i].inputs);
    EXPECT_EQ(a.nodes[i].outputs, b.nodes[i].outputs);
    EXPECT_TRUE(Value(a.nodes[i].attrs) == Value(b.nodes[i].attrs)) << "node " << i;
  }
}

void expect_tiny_contents(const Program& p) {
  EXPECT_EQ(p.format_version(), 1u);
  // Metadata exactly as build_tiny_program set it.
  ASSERT_EQ(p.metadata().size(), 5u);
  ASSERT_NE(p.meta("general.name"), nullptr);
  EXPECT_EQ(p.meta("general.name")->as_string(), "tiny");
  EXPECT_DOUBLE_EQ(p.meta("tiny.float")->as_float(), 0.25);
  EXPECT_TRUE(*p.meta("tiny.list") == Value::int_array({1, 2, 3}));
  EXPECT_TRUE(p.meta("tiny.flag")->as_bool());
  EXPECT_EQ(p.meta("tiny.nested")->get("a")->as_string(), "b");
  EXPECT_EQ(p.meta("absent"), nullptr);

  // "w" was added by both methods with identical content: stored once.
  ASSERT_EQ(p.constants().size(), 3u);
  EXPECT_EQ(p.constant_bytes(), 32u + 36u + 3u);
  auto w = p.constant("w");
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(w->dtype, DType::kF32);
  EXPECT_EQ(w->shape, (Shape{2, 4}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->ptr) % 64, 0u);
  std::vector<float> want = test::tiny_weight();
  EXPECT_EQ(std::memcmp(w->ptr, want.data(), 32), 0);
  EXPECT_FLOAT_EQ(w->data<float>()[7], 3.5f);

  auto q = p.constant("q");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->dtype, DType::kQ4_0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q->ptr) % 64, 0u);
  for (int i = 0; i < 36; ++i) EXPECT_EQ(q->data<uint8_t>()[i], i);
  auto s = p.constant("s");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->data<int8_t>()[0], -1);
  EXPECT_EQ(s->data<int8_t>()[2], 1);
  auto none = p.constant("nope");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(none.error().message().find("nope"), std::string::npos);

  ASSERT_EQ(p.methods().size(), 2u);
  ASSERT_NE(p.method("prefill"), nullptr);
  ASSERT_NE(p.method("decode"), nullptr);
  EXPECT_EQ(p.method("other"), nullptr);
  expect_same_method(*p.method("prefill"), test::tiny_prefill());
  expect_same_method(*p.method("decode"), test::tiny_decode());
}

TEST(ProgramRoundTrip, MmapAndReadPathsGiveTheSameProgram) {
  std::string path = test::temp_path("roundtrip");
  ASSERT_TRUE(test::write_tiny_program(path));
  auto mm = Program::load(path);
  ASSERT_TRUE(mm) << mm.error().to_string();
  auto rd = Program::load(path, {.use_mmap = false});
  ASSERT_TRUE(rd) << rd.error().to_string();
  EXPECT_TRUE((*mm)->is_mmapped());
  EXPECT_FALSE((*rd)->is_mmapped());
  EXPECT_EQ((*mm)->path(), path);
  auto bytes = test::read_file_bytes(path);
  ASSERT_TRUE(bytes);
  auto mem = Program::from_bytes(*bytes);
  ASSERT_TRUE(mem) << mem.error().to_string();
  EXPECT_EQ((*mem)->path(), "<memory>");
  for (const auto* p : {mm->get(), rd->get(), mem->get()}) {
    SCOPED_TRACE(p->is_mmapped() ? "mmap" : "read");
    EXPECT_EQ(p->file_size(), bytes->size());
    expect_tiny_contents(*p);
  }
  // Same table, in the same order, at the same offsets.
  for (size_t i = 0; i < 3; ++i) {
    const ConstantInfo& a = (*mm)->constants()[i];
    const ConstantInfo& b = (*rd)->constants()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.nbytes, b.nbytes);
    EXPECT_EQ(std::memcmp((*mm)->constant(a.name)->ptr, (*rd)->constant(b.name)->ptr, a.nbytes), 0);
  }
  std::remove(path.c_str());
}

// Decodes the file by hand following docs/program-format.md (not with library code).
TEST(ProgramRoundTrip, FileLayoutFollowsTheDocument) {
  auto f = test::tiny_program_bytes();
  ASSERT_TRUE(f) << f.error().to_string();
  const std::vector<std::byte>& b = *f;
  ASSERT_GE(b.size(), 64u);
  EXPECT_EQ(std::memcmp(b.data(), "HFSTATIC", 8), 0);
  uint32_t version = 0, header_size = 0;
  std::memcpy(&version, b.data() + 8, 4);  // the test host is little-endian, like the format
  std::memcpy(&header_size, b.data() + 12, 4);
  EXPECT_EQ(version, 1u);
  EXPECT_EQ(header_size, 64u);
  uint64_t moff = test::get_u64(b, 16), msize = test::get_u64(b, 24), doff = test::get_u64(b, 32),
           dsize = test::get_u64(b, 40), fsize = test::get_u64(b, 48);
  EXPECT_EQ(moff, 64u);
  EXPECT_EQ(doff % 64, 0u);
  EXPECT_GE(doff, moff + msize);
  EXPECT_EQ(doff + dsize, b.size());
  EXPECT_EQ(fsize, b.size());
  EXPECT_EQ(test::get_u64(b, 56), 0u);  // flags + reserved
  auto j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(b.data() + moff), msize));
  ASSERT_EQ(j["tensors"].size(), 3u);
  EXPECT_EQ(j["tensors"][0]["name"], "w");
  EXPECT_EQ(j["tensors"][0]["dtype"], "f32");
  EXPECT_EQ(j["tensors"][0]["nbytes"], 32);
  EXPECT_EQ(j["tensors"][1]["dtype"], "q4_0");
  EXPECT_EQ(j["tensors"][1]["nbytes"], 36);  // 2 rows × 1 block × 18 bytes
  for (const auto& t : j["tensors"]) {
    uint64_t off = t["offset"];
    EXPECT_EQ(off % 64, 0u);
    EXPECT_LE(off + t["nbytes"].get<uint64_t>(), dsize);
  }
  const auto& st = j["methods"][0]["outputs"][1];
  EXPECT_EQ(st["role"], "state");
  EXPECT_EQ(st["alias_of"], "cache");
  EXPECT_FALSE(j["methods"][0]["outputs"][0].contains("alias_of"));
  // The weight bytes sit at data_offset + offset.
  std::vector<float> w = test::tiny_weight();
  uint64_t woff = j["tensors"][0]["offset"];
  EXPECT_EQ(std::memcmp(b.data() + doff + woff, w.data(), 32), 0);
}

TEST(ProgramRoundTrip, MissingFileIsNotFound) {
  auto p = Program::load("/nonexistent/dir/x.hfs");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(p.error().message().find("/nonexistent/dir/x.hfs"), std::string::npos);
}

TEST(ProgramRoundTrip, ViewsSurviveDeletingTheFile) {
  // Views stay valid while the shared Program lives, even after the file is deleted (the mapping holds it).
  std::string path = test::temp_path("unlinked");
  ASSERT_TRUE(test::write_tiny_program(path));
  auto p = Program::load(path);
  ASSERT_TRUE(p);
  std::remove(path.c_str());
  EXPECT_FLOAT_EQ((*p)->constant("w")->data<float>()[1], 0.5f);
}

}  // namespace
}  // namespace hfs
