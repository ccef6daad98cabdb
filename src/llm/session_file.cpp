// Layout (little-endian; docs/sessions.md):
//   header  "HFSSESS\0" | u32 format version | u32 state tensors n | u64 program id | i64 length L
//   tokens  i32 × L
//   tensors n × { u32 name bytes | name | u32 dtype | i64 outer | i64 row bytes | i64 first | rows }
//           rows: (L − first) × outer × row bytes, position-major
//   u64     checksum: ContentHash of every byte before it
#include "llm/session_file.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "core/content_hash.h"

namespace hfs {
namespace {

constexpr char kMagic[8] = {'H', 'F', 'S', 'S', 'E', 'S', 'S', '\0'};
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8;
constexpr uint32_t kMaxNameBytes = 4096;

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

std::string quoted(const std::string& path) { return "session file '" + path + "'"; }

// Writes and hashes; the first failure sticks.
struct Writer {
  FILE* f;
  ContentHash hash;
  bool ok = true;
  void put(const void* p, size_t n) {
    if (n == 0 || !ok) return;
    ok = std::fwrite(p, 1, n, f) == n;
    hash.update(p, n);
  }
  template <typename T>
  void put(T v) { put(&v, sizeof v); }
};

// Bounds-checked reads from the file's bytes: running past the end is a truncated file.
struct Reader {
  const std::string& path;
  const std::vector<std::byte>& bytes;
  size_t at = 0;
  Status need(size_t n, const char* what) const {
    if (n <= bytes.size() - at) return Ok{};
    return make_error(ErrorCode::kTruncated, quoted(path) + " is truncated: " + what + " at byte " + std::to_string(at) +
                                                 " needs " + std::to_string(n) + " bytes, the file has " +
                                                 std::to_string(bytes.size() - at) + " left");
  }
  template <typename T>
  Result<T> get(const char* what) {
    HFS_TRY(need(sizeof(T), what));
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
};

Result<std::vector<std::byte>> read_bytes(const std::string& path, uint64_t max_bytes, bool whole) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot read " + quoted(path) + ": " + ec.message());
  if (max_bytes && size > max_bytes)
    return make_error(ErrorCode::kCapacityExceeded, quoted(path) + " has " + std::to_string(size) +
                                                        " bytes, more than a session of this program can (" +
                                                        std::to_string(max_bytes) + ")");
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error(ErrorCode::kIo, "cannot open " + quoted(path));
  std::vector<std::byte> bytes(whole ? static_cast<size_t>(size) : std::min<size_t>(static_cast<size_t>(size), kHeaderBytes));
  if (std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
    return make_error(ErrorCode::kIo, "reading " + quoted(path) + " failed");
  return bytes;
}

struct Header {
  uint32_t tensors = 0;
  uint64_t program_id = 0;
  int64_t length = 0;
};

// Magic, version, program and length: the checks that need only the header.
Result<Header> check_header(Reader& r, const SessionExpect& e) {
  const std::string& path = r.path;
  HFS_TRY(r.need(8, "the magic"));
  if (std::memcmp(r.bytes.data(), kMagic, 8) != 0)
    return make_error(ErrorCode::kBadMagic, quoted(path) + " is not a session file (expected magic \"HFSSESS\")");
  r.at = 8;
  HFS_ASSIGN_OR_RETURN(const uint32_t version, r.get<uint32_t>("the format version"));
  if (version != kSessionFormatVersion)
    return make_error(ErrorCode::kBadVersion, quoted(path) + ": expected session format version " +
                                                  std::to_string(kSessionFormatVersion) + ", got " + std::to_string(version));
  Header h;
  HFS_ASSIGN_OR_RETURN(h.tensors, r.get<uint32_t>("the tensor count"));
  HFS_ASSIGN_OR_RETURN(h.program_id, r.get<uint64_t>("the program id"));
  HFS_ASSIGN_OR_RETURN(h.length, r.get<int64_t>("the length"));
  if (h.program_id != e.program_id)
    return make_error(ErrorCode::kInvalidArgument, quoted(path) + " belongs to another program: expected program id " +
                                                       hash_hex(e.program_id) + " ('" + e.program_name + "'), got " +
                                                       hash_hex(h.program_id));
  if (h.length < 0 || h.length > e.context_length)
    return make_error(ErrorCode::kCapacityExceeded, quoted(path) + " holds " + std::to_string(h.length) +
                                                        " positions, more than the program's context of " +
                                                        std::to_string(e.context_length));
  return h;
}

Result<std::vector<int32_t>> read_tokens(Reader& r, int64_t length) {
  const size_t n = static_cast<size_t>(length);
  HFS_TRY(r.need(n * sizeof(int32_t), "the tokens"));
  std::vector<int32_t> tokens(n);
  std::memcpy(tokens.data(), r.bytes.data() + r.at, n * sizeof(int32_t));
  r.at += n * sizeof(int32_t);
  return tokens;
}

Result<StateRows> read_tensor(Reader& r, int64_t length) {
  StateRows t;
  HFS_ASSIGN_OR_RETURN(const uint32_t name_bytes, r.get<uint32_t>("a tensor name's length"));
  if (name_bytes > kMaxNameBytes)
    return make_error(ErrorCode::kBadManifest, quoted(r.path) + ": a tensor name of " + std::to_string(name_bytes) + " bytes");
  HFS_TRY(r.need(name_bytes, "a tensor name"));
  t.name.assign(reinterpret_cast<const char*>(r.bytes.data() + r.at), name_bytes);
  r.at += name_bytes;
  HFS_ASSIGN_OR_RETURN(const uint32_t dtype, r.get<uint32_t>("a dtype"));
  t.dtype = static_cast<DType>(dtype);
  HFS_ASSIGN_OR_RETURN(t.outer, r.get<int64_t>("a row count"));
  HFS_ASSIGN_OR_RETURN(t.row_bytes, r.get<int64_t>("a row size"));
  HFS_ASSIGN_OR_RETURN(t.first, r.get<int64_t>("a first position"));
  const std::string where = quoted(r.path) + ": tensor '" + t.name + "'";
  // Each factor bounded by the file's size, so the product cannot overflow before it is compared with it.
  const int64_t limit = static_cast<int64_t>(r.bytes.size());
  if (t.outer < 1 || t.outer > limit || t.row_bytes < 1 || t.row_bytes > limit || t.first < 0 || t.first > length)
    return make_error(ErrorCode::kBadManifest, where + ": rows " + std::to_string(t.outer) + " × " + std::to_string(t.row_bytes) +
                                                   " bytes from position " + std::to_string(t.first) + " of " + std::to_string(length));
  const uint64_t rem = r.bytes.size() - r.at, positions = static_cast<uint64_t>(length - t.first);
  const uint64_t outer = static_cast<uint64_t>(t.outer), row = static_cast<uint64_t>(t.row_bytes);
  if ((positions && outer > rem / positions) || (positions * outer != 0 && row > rem / (positions * outer)))
    return make_error(ErrorCode::kTruncated, where + " is truncated: " + std::to_string(positions) + " positions × " +
                                                 std::to_string(outer) + " rows × " + std::to_string(row) + " bytes at byte " +
                                                 std::to_string(r.at) + ", the file has " + std::to_string(rem) + " left");
  const size_t n = static_cast<size_t>(positions * outer * row);
  t.bytes.assign(r.bytes.begin() + static_cast<std::ptrdiff_t>(r.at), r.bytes.begin() + static_cast<std::ptrdiff_t>(r.at + static_cast<size_t>(n)));
  r.at += static_cast<size_t>(n);
  return t;
}

}  // namespace

Result<uint64_t> program_identity(const Program& program) {
  if (program.path().empty())
    return make_error(ErrorCode::kUnsupported, "sessions need a program loaded from a file (its identity is the file's content hash)");
  return file_content_hash(program.path());
}

Result<SessionExpect> session_expect(const Program* program, const IOManager& io, std::optional<uint64_t>* id) {
  if (!program) return make_error(ErrorCode::kUnsupported, "sessions need a runner or engine created from a program");
  if (!*id) {
    HFS_ASSIGN_OR_RETURN(const uint64_t h, program_identity(*program));
    *id = h;
  }
  const ModelInfo& info = io.info();
  return SessionExpect{**id, program->path(), info.context_length, max_session_bytes(io.cache_views(), info.context_length)};
}

Status check_session_tokens(const std::string& path, std::span<const int32_t> tokens, int64_t vocab_size) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab_size)
      return make_error(ErrorCode::kOutOfRange, quoted(path) + ": token " + std::to_string(tokens[i]) + " at index " +
                                                    std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  return Ok{};
}

uint64_t max_session_bytes(const std::vector<TensorView>& views, int64_t context) {
  uint64_t n = kHeaderBytes + 8 + static_cast<uint64_t>(context) * 4;
  for (const TensorView& v : views) n += v.nbytes() + 4 + kMaxNameBytes + 4 + 3 * 8;
  return n;
}

Status write_session_file(const std::string& path, const SessionFile& s) {
  if (static_cast<int64_t>(s.tokens.size()) != s.state.length)
    return make_error(ErrorCode::kInvalidArgument, "writing " + quoted(path) + ": " + std::to_string(s.tokens.size()) +
                                                       " tokens for " + std::to_string(s.state.length) + " positions");
  // A unique temporary beside the target (same file system, so the rename is atomic), renamed over it once
  // complete: a writer that dies leaves at most a stray temporary, never a half session under the name.
  std::random_device rd;
  const std::string tmp = path + ".tmp" + hash_hex((uint64_t{rd()} << 32) | rd()).substr(8);
  {
    File f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
    if (!f) return make_error(ErrorCode::kIo, "cannot create '" + tmp + "' (writing " + quoted(path) + ")");
    Writer w{f.get(), ContentHash{}};
    w.put(kMagic, 8);
    w.put(kSessionFormatVersion);
    w.put(static_cast<uint32_t>(s.state.tensors.size()));
    w.put(s.program_id);
    w.put(s.state.length);
    w.put(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
    for (const StateRows& t : s.state.tensors) {
      w.put(static_cast<uint32_t>(t.name.size()));
      w.put(t.name.data(), t.name.size());
      w.put(static_cast<uint32_t>(t.dtype));
      w.put(t.outer);
      w.put(t.row_bytes);
      w.put(t.first);
      w.put(t.bytes.data(), t.bytes.size());
    }
    const uint64_t sum = w.hash.digest();
    w.put(sum);
    File closing = std::move(f);
    const bool flushed = w.ok && std::fflush(closing.get()) == 0;
    if (!flushed || std::fclose(closing.release()) != 0) {
      std::filesystem::remove(tmp);
      return make_error(ErrorCode::kIo, "writing '" + tmp + "' failed (disk full?); " + quoted(path) + " is unchanged");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    return make_error(ErrorCode::kIo, "renaming '" + tmp + "' to " + quoted(path) + " failed: " + ec.message());
  }
  return Ok{};
}

Result<SessionFile> read_session_file(const std::string& path, const SessionExpect& e) {
  HFS_ASSIGN_OR_RETURN(const std::vector<std::byte> bytes, read_bytes(path, e.max_bytes, true));
  Reader r{path, bytes};
  HFS_ASSIGN_OR_RETURN(const Header h, check_header(r, e));
  SessionFile s;
  s.program_id = h.program_id;
  s.state.length = h.length;
  HFS_ASSIGN_OR_RETURN(s.tokens, read_tokens(r, h.length));
  for (uint32_t i = 0; i < h.tensors; ++i) {
    HFS_ASSIGN_OR_RETURN(StateRows t, read_tensor(r, h.length));
    s.state.tensors.push_back(std::move(t));
  }
  HFS_ASSIGN_OR_RETURN(const uint64_t stored, r.get<uint64_t>("the checksum"));
  if (r.at != bytes.size())
    return make_error(ErrorCode::kBadManifest, quoted(path) + ": " + std::to_string(bytes.size() - r.at) +
                                                   " bytes after the checksum (expected " + std::to_string(r.at) + " bytes in all)");
  const uint64_t computed = content_hash(std::span<const std::byte>(bytes.data(), bytes.size() - 8));
  if (stored != computed)
    return make_error(ErrorCode::kChecksumMismatch, quoted(path) + " is corrupted: expected checksum " + hash_hex(stored) +
                                                        ", got " + hash_hex(computed));
  return s;
}

Result<std::vector<int32_t>> read_session_tokens(const std::string& path, const SessionExpect& e) {
  HFS_ASSIGN_OR_RETURN(std::vector<std::byte> head, read_bytes(path, e.max_bytes, false));
  Reader hr{path, head};
  HFS_ASSIGN_OR_RETURN(const Header h, check_header(hr, e));
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  std::vector<std::byte> bytes(kHeaderBytes + static_cast<size_t>(h.length) * sizeof(int32_t));
  const size_t got = f ? std::fread(bytes.data(), 1, bytes.size(), f.get()) : 0;
  bytes.resize(got);
  Reader r{path, bytes};
  r.at = kHeaderBytes;
  return read_tokens(r, h.length);
}

}  // namespace hfs
