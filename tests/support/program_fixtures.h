// tests/support/program_fixtures.h — a tiny valid program and raw-file helpers, for any test.
//
// The tiny program uses test-only ops ("test.*", registered by this file at start-up), so it does not
// depend on the real op set:
//   constants  w     f32[2, 4] = 0.5 * i           (shared by both methods, stored once)
//              q     q4_0[2, 32] (36 bytes 0..35)   s  i8[3] = {-1, 0, 1}   (not used by methods)
//   prefill    (x f32[2,4] input, cache f32[2,4] state)
//              h = test.add(x, w); y = test.scale(h, value=2); cache_out = test.inplace_write(cache, h)
//              -> y (output), cache_out (state, alias_of cache)
//   decode     (x f32[1,8] input, cache f32[2,4] state)
//              xv = test.view(x, shape=[2,4]); h = test.add(xv, w); cache_out = test.inplace_write(cache, h)
//              -> h (output), cache_out (state, alias_of cache)
//
//   auto bytes = hfs::test::tiny_program_bytes();           // Result<std::vector<std::byte>>
//   auto prog = hfs::Program::from_bytes(*bytes);
//   hfs::test::ProgramImage img = *hfs::test::split_program(*bytes);   // edit manifest JSON, then
//   std::vector<std::byte> evil = hfs::test::assemble_program(img);    // re-encode with fresh header sizes
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/ext/program_writer.h"
#include "hfstatic/value.h"

namespace hfs::test {

// Registers the test ops once (also done at static-init time; calling again is harmless):
//   test.add           (a, b) f32, same shape -> same
//   test.scale         (x f32, bias? same shape; value:float required) -> x * value (+ bias)
//   test.inplace_write (dst f32, src same type) -> dst, IN PLACE (alias_input 0): copies src into dst
//   test.view          (x; shape:[int] required) -> view of x (alias_input 0, not in place), numel equal
//   test.split         (x f32 [..., 2n]) -> two outputs [..., n]
void register_test_ops();

// A unique path in $TMPDIR (or /tmp) for this process: "<dir>/hfs_<stem>_<pid>_<counter>".
std::string temp_path(std::string_view stem);

std::vector<float> tiny_weight();  // the 8 values of constant "w"
MethodDef tiny_prefill(const std::string& w_name = "w");
MethodDef tiny_decode(const std::string& w_name = "w");
// Adds the tiny program's metadata, constants and methods to `w`.
Status build_tiny_program(ProgramWriter& w);
Status write_tiny_program(const std::string& path);
Result<std::vector<std::byte>> tiny_program_bytes();

Result<std::vector<std::byte>> read_file_bytes(const std::string& path);
Status write_file_bytes(const std::string& path, const std::vector<std::byte>& bytes);

// A program file split into its manifest and data section, for corruption tests. assemble_program writes
// a fresh version-1 header (per docs/program-format.md, encoded independently of the library).
struct ProgramImage {
  Value manifest;
  std::vector<std::byte> data;
  uint32_t version = 1;
};
Result<ProgramImage> split_program(const std::vector<std::byte>& file);
std::vector<std::byte> assemble_program(const ProgramImage& img);
std::vector<std::byte> assemble_program_json(const std::string& manifest_json, const std::vector<std::byte>& data,
                                             uint32_t version = 1);

// Little-endian field access into a raw file (header patching).
uint64_t get_u64(const std::vector<std::byte>& f, size_t off);
void put_u64(std::vector<std::byte>& f, size_t off, uint64_t v);
void put_u32(std::vector<std::byte>& f, size_t off, uint32_t v);

}  // namespace hfs::test
