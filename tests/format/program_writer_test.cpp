// ProgramWriter: constant dedup/renaming, lazy producers, atomic writes, verification before writing.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "hfstatic/program.h"
#include "hfstatic/ext/program_writer.h"
#include "support/program_fixtures.h"

namespace hfs {
namespace {

const TensorType kF24{DType::kF32, {2, 4}};

std::vector<std::byte> floats(std::initializer_list<float> v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

// A method computing table + x, where the table constant name is whatever the writer returned.
MethodDef add_table_method(const std::string& name, const std::string& table) {
  MethodDef m;
  m.name = name;
  m.inputs = {{"x", kF24, IORole::kInput, ""}};
  m.nodes = {{"test.add", {"x", table}, {"y"}, {}}};
  m.outputs = {{"y", kF24, IORole::kOutput, ""}};
  return m;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// Any "<base>.tmp.*" left in the directory of `path`.
bool temp_files_left(const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  std::string base = path.substr(path.rfind('/') + 1) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  bool found = false;
  while (dirent* e = ::readdir(d)) found = found || std::strncmp(e->d_name, base.c_str(), base.size()) == 0;
  ::closedir(d);
  return found;
}

TEST(ProgramWriter, SameNameSameContentIsStoredOnce) {
  test::register_test_ops();
  ProgramWriter w;
  auto bytes = floats({1, 2, 3, 4, 5, 6, 7, 8});
  auto a = w.add_constant("weight", kF24, bytes);
  auto b = w.add_constant("weight", kF24, std::vector<std::byte>(bytes));  // equal content, other buffer
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, "weight");
  EXPECT_EQ(*b, "weight");
  ASSERT_TRUE(w.add_method(add_table_method("prefill", *a)));
  ASSERT_TRUE(w.add_method(add_table_method("decode", *b)));
  std::string path = test::temp_path("dedup_same");
  ASSERT_TRUE(w.write(path));
  auto p = Program::load(path);
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ((*p)->constants().size(), 1u);
  EXPECT_EQ((*p)->constant_bytes(), 32u);
  EXPECT_EQ((*p)->method("prefill")->nodes[0].inputs[1], "weight");
  EXPECT_EQ((*p)->method("decode")->nodes[0].inputs[1], "weight");
  std::remove(path.c_str());
}

TEST(ProgramWriter, SameNameDifferentContentKeepsBothAndEachMethodUsesItsOwn) {
  test::register_test_ops();
  ProgramWriter w;
  auto t1 = w.add_constant("rope.table", kF24, floats({1, 1, 1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(t1);
  ASSERT_TRUE(w.add_method(add_table_method("prefill", *t1)));
  auto t2 = w.add_constant("rope.table", kF24, floats({2, 2, 2, 2, 2, 2, 2, 2}));
  ASSERT_TRUE(t2);
  ASSERT_TRUE(w.add_method(add_table_method("decode", *t2)));
  EXPECT_EQ(*t1, "rope.table");
  EXPECT_EQ(*t2, "rope.table.1");
  // A third method with the second content again reuses "rope.table.1"; a third content gets ".2".
  auto t3 = w.add_constant("rope.table", kF24, floats({2, 2, 2, 2, 2, 2, 2, 2}));
  auto t4 = w.add_constant("rope.table", kF24, floats({3, 3, 3, 3, 3, 3, 3, 3}));
  ASSERT_TRUE(t3 && t4);
  EXPECT_EQ(*t3, "rope.table.1");
  EXPECT_EQ(*t4, "rope.table.2");
  ASSERT_TRUE(w.add_method(add_table_method("other", *t4)));

  std::string path = test::temp_path("dedup_diff");
  ASSERT_TRUE(w.write(path));
  auto p = Program::load(path);
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ((*p)->constants().size(), 3u);
  struct Want {
    const char* method;
    float value;
  };
  for (Want c : {Want{"prefill", 1.0f}, Want{"decode", 2.0f}, Want{"other", 3.0f}}) {
    const std::string& table = (*p)->method(c.method)->nodes[0].inputs[1];
    auto v = (*p)->constant(table);
    ASSERT_TRUE(v) << table;
    for (int i = 0; i < 8; ++i) EXPECT_EQ(v->data<float>()[i], c.value) << c.method;
  }
  std::remove(path.c_str());
}

TEST(ProgramWriter, SameBytesDifferentShapeIsDifferentContent) {
  ProgramWriter w;
  auto bytes = floats({1, 2, 3, 4, 5, 6, 7, 8});
  auto a = w.add_constant("t", kF24, bytes);
  auto b = w.add_constant("t", {DType::kF32, {8}}, bytes);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, "t");
  EXPECT_EQ(*b, "t.1");
}

TEST(ProgramWriter, LazyConstantsAreProducedOnceEachAndDedupByContentKey) {
  test::register_test_ops();
  ProgramWriter w;
  int calls = 0;
  auto producer = [&](float v) {
    return [&calls, v](std::span<std::byte> dst) -> Status {
      ++calls;
      if (dst.size() != 32) return make_error(ErrorCode::kInternal, "wrong size");
      for (size_t i = 0; i < 8; ++i) std::memcpy(dst.data() + 4 * i, &v, 4);
      return Ok{};
    };
  };
  auto a = w.add_constant_lazy("w", kF24, "ckpt:w@f32", producer(4.0f));
  auto b = w.add_constant_lazy("w", kF24, "ckpt:w@f32", producer(99.0f));  // same key: the first is kept
  auto c = w.add_constant_lazy("w", kF24, "ckpt:w@f32+scaled", producer(5.0f));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, "w");
  EXPECT_EQ(*b, "w");
  EXPECT_EQ(*c, "w.1");
  EXPECT_EQ(calls, 0);  // nothing produced before write()
  std::vector<std::string> progress;
  w.set_progress([&](size_t i, size_t n, const std::string& name) {
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(i, progress.size());
    progress.push_back(name);
  });
  ASSERT_TRUE(w.add_method(add_table_method("m", *c)));
  std::string path = test::temp_path("lazy");
  ASSERT_TRUE(w.write(path));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(progress, (std::vector<std::string>{"w", "w.1"}));
  auto p = Program::load(path);
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)->constant("w")->data<float>()[7], 4.0f);
  EXPECT_EQ((*p)->constant("w.1")->data<float>()[0], 5.0f);
  std::remove(path.c_str());
}

TEST(ProgramWriter, FailingProducerLeavesNoFileAndKeepsTheOldOne) {
  std::string path = test::temp_path("atomic");
  ASSERT_TRUE(test::write_tiny_program(path));
  auto before = test::read_file_bytes(path);
  ASSERT_TRUE(before);

  ProgramWriter w;
  ASSERT_TRUE(w.add_constant_lazy("ok", kF24, "k1", [](std::span<std::byte>) -> Status { return Ok{}; }));
  ASSERT_TRUE(w.add_constant_lazy("bad", kF24, "k2", [](std::span<std::byte>) -> Status {
    return make_error(ErrorCode::kBadCheckpoint, "tensor 'bad' missing from shard 2");
  }));
  Status st = w.write(path);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(st.error().message().find("constant 'bad'"), std::string::npos) << st.error().message();
  EXPECT_FALSE(temp_files_left(path));
  auto after = test::read_file_bytes(path);
  ASSERT_TRUE(after);
  EXPECT_EQ(*before, *after);

  std::string fresh = test::temp_path("atomic_fresh");
  ProgramWriter t;
  ASSERT_TRUE(t.add_constant_lazy("boom", kF24, "k", [](std::span<std::byte>) -> Status {
    throw std::runtime_error("conversion exploded");
  }));
  Status st2 = t.write(fresh);
  ASSERT_FALSE(st2);
  EXPECT_NE(st2.error().message().find("conversion exploded"), std::string::npos);
  EXPECT_FALSE(exists(fresh));
  EXPECT_FALSE(temp_files_left(fresh));
  std::remove(path.c_str());
}

TEST(ProgramWriter, InvalidMethodIsRejectedBeforeTouchingTheFileSystem) {
  test::register_test_ops();
  ProgramWriter w;
  MethodDef m = add_table_method("m", "no_such_constant");
  ASSERT_TRUE(w.add_method(m));
  std::string path = test::temp_path("invalid");
  Status st = w.write(path);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kUndefinedValue);
  EXPECT_NE(st.error().message().find("no_such_constant"), std::string::npos);
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(temp_files_left(path));
}

TEST(ProgramWriter, RejectsBadConstantsAndDuplicateMethods) {
  test::register_test_ops();
  ProgramWriter w;
  auto short_bytes = w.add_constant("w", kF24, floats({1, 2, 3}));
  ASSERT_FALSE(short_bytes);
  EXPECT_EQ(short_bytes.error().code(), ErrorCode::kTensorSizeMismatch);
  EXPECT_NE(short_bytes.error().message().find("'w'"), std::string::npos);
  EXPECT_NE(short_bytes.error().message().find("32"), std::string::npos);

  std::vector<std::byte> q(18);
  ASSERT_TRUE(w.add_constant("q", {DType::kQ4_0, {1, 32}}, q));
  // 32 values, but blocks run along the last dim and rows of 16 are not whole blocks.
  auto split_rows = w.add_constant("q1", {DType::kQ4_0, {2, 16}}, q);
  ASSERT_FALSE(split_rows);
  EXPECT_EQ(split_rows.error().code(), ErrorCode::kTensorSizeMismatch);
  auto not_blocks = w.add_constant("q2", {DType::kQ4_0, {1, 20}}, q);
  ASSERT_FALSE(not_blocks);
  EXPECT_EQ(not_blocks.error().code(), ErrorCode::kTensorSizeMismatch);

  auto no_key = w.add_constant_lazy("l", kF24, "", [](std::span<std::byte>) -> Status { return Ok{}; });
  ASSERT_FALSE(no_key);
  EXPECT_EQ(no_key.error().code(), ErrorCode::kInvalidArgument);

  ASSERT_TRUE(w.add_method(test::tiny_prefill()));
  Status dup = w.add_method(test::tiny_prefill());
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code(), ErrorCode::kDuplicateName);
  EXPECT_NE(dup.error().message().find("prefill"), std::string::npos);
}

TEST(ProgramWriter, EmptyProgramRoundTrips) {
  ProgramWriter w;
  w.set_metadata("k", Value("v"));
  std::string path = test::temp_path("empty");
  ASSERT_TRUE(w.write(path));
  auto p = Program::load(path);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ((*p)->constants().size(), 0u);
  EXPECT_EQ((*p)->methods().size(), 0u);
  EXPECT_EQ((*p)->meta("k")->as_string(), "v");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hfs

namespace hfs {
namespace {

// File-range constants: the bytes at [offset, offset + n) of a source file land verbatim in the program,
// deduplicate by content key like lazy constants, and a source too short is an I/O error naming it.
TEST(ProgramWriter, FileRangeConstantsCopyBytesVerbatim) {
  const std::string src = test::temp_path("writer_src.bin");
  std::vector<std::byte> payload = floats({0, 0, 1, 2, 3, 4, 5, 6, 7, 8});  // table = floats 2..9 (offset 8)
  {
    std::FILE* f = std::fopen(src.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(payload.data(), 1, payload.size(), f);
    std::fclose(f);
  }
  ProgramWriter w;
  auto name = w.add_constant_from_file("table", kF24, "src:table", src, 8);
  ASSERT_TRUE(name.ok());
  auto again = w.add_constant_from_file("table", kF24, "src:table", src, 8);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *name);  // same content key → stored once
  ASSERT_TRUE(w.add_method(add_table_method("m", *name)).ok());
  const std::string out = test::temp_path("writer_file_range.hfs");
  ASSERT_TRUE(w.write(out).ok());
  auto p = Program::load(out);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  ASSERT_EQ((*p)->constants().size(), 1u);
  auto v = (*p)->constant("table");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(std::memcmp(v->ptr, payload.data() + 8, 32), 0);

  ProgramWriter short_src;
  ASSERT_TRUE(short_src.add_constant_from_file("table", kF24, "src:far", src, 16).ok());  // needs 48 bytes
  ASSERT_TRUE(short_src.add_method(add_table_method("m", "table")).ok());
  Status st = short_src.write(test::temp_path("writer_short.hfs"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kIo);
  EXPECT_NE(st.error().message().find("table"), std::string::npos);
}

}  // namespace
}  // namespace hfs
