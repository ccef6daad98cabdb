// ProgramWriter: collects metadata, constants (eager or lazy) and methods, then writes a version-1 file
// atomically (temp file, fsync, rename). Layout: docs/program-format.md.
#include "hfstatic/ext/program_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>

#include "core/regular_file.h"
#include "format/checks.h"
#include "format/layout.h"
#include "format/manifest.h"
#include "hfstatic/program.h"

namespace hfs {
namespace {

// Content identity of eager constants. A hash match is confirmed by comparing bytes, so the hash only
// needs to be fast, not collision-proof.
uint64_t fnv1a(std::span<const std::byte> bytes) {
  uint64_t h = 1469598103934665603ull;
  for (std::byte b : bytes) h = (h ^ static_cast<uint64_t>(b)) * 1099511628211ull;
  return h;
}

std::string errno_text() { return std::strerror(errno); }

Status write_all(int fd, const void* p, uint64_t n, const std::string& what) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t r = ::write(fd, c, static_cast<size_t>(std::min<uint64_t>(n, 1u << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return make_error(ErrorCode::kIo, "writing " + what + ": " + errno_text());
    c += r;
    n -= static_cast<uint64_t>(r);
  }
  return Ok{};
}

// Appends [offset, offset + n) of `path` at fd's current position: in-kernel copy_file_range, falling back
// to pread + write where the file systems do not support it.
Status copy_range(int out, const std::string& path, uint64_t offset, uint64_t n, const std::string& what) {
  int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return make_error(ErrorCode::kIo, "reading " + what + " from " + path + ": " + errno_text());
  loff_t off = static_cast<loff_t>(offset);
  uint64_t left = n;
  while (left > 0) {
    ssize_t r = ::copy_file_range(in, &off, out, nullptr, static_cast<size_t>(std::min<uint64_t>(left, 1u << 30)), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // unsupported (EXDEV, ENOSYS, EINVAL...) or source too short: finish below
    left -= static_cast<uint64_t>(r);
  }
  std::vector<char> chunk;
  while (left > 0) {
    chunk.resize(static_cast<size_t>(std::min<uint64_t>(left, 8u << 20)));
    ssize_t r = ::pread(in, chunk.data(), chunk.size(), off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ::close(in);
      return make_error(ErrorCode::kIo, "reading " + what + " from " + path + " at offset " + std::to_string(off) +
                                            ": " + (r == 0 ? std::string("file too short") : errno_text()));
    }
    Status st = write_all(out, chunk.data(), static_cast<uint64_t>(r), what);
    if (!st) {
      ::close(in);
      return st;
    }
    off += r;
    left -= static_cast<uint64_t>(r);
  }
  ::close(in);
  return Ok{};
}

Status write_zeros(int fd, uint64_t n) {
  static const char kZeros[64] = {};
  return write_all(fd, kZeros, n, "padding");
}

}  // namespace

struct ProgramWriter::Impl {
  struct Constant {
    ConstantInfo info;
    std::string content_key;      // "bytes:<hash>" or "lazy:<caller key>"
    std::vector<std::byte> bytes;  // eager constants only
    Producer producer;             // lazy constants only
    std::string file;              // file-range constants: source path and offset
    uint64_t file_offset = 0;
  };
  Metadata metadata;
  std::vector<Constant> constants;
  std::map<std::string, size_t, std::less<>> by_name;
  std::vector<MethodDef> methods;
  Progress progress;

  Result<std::string> add(const std::string& name, const TensorType& type, std::string key,
                          std::span<const std::byte> bytes, Producer producer) {
    if (name.empty()) return make_error(ErrorCode::kInvalidArgument, "writer: constant with an empty name");
    auto nbytes = format::checked_nbytes(type);
    if (!nbytes)
      return make_error(ErrorCode::kTensorSizeMismatch, "writer: constant '" + name + "': invalid type " + type.to_string() +
                                                            " (negative dim, too large, or not a whole number of blocks)");
    if (!producer && bytes.size() != *nbytes)
      return make_error(ErrorCode::kTensorSizeMismatch, "writer: constant '" + name + "': " + type.to_string() + " needs " +
                                                            std::to_string(*nbytes) + " bytes, got " + std::to_string(bytes.size()));
    // Bounded: each step either returns or skips an existing constant.
    for (size_t k = 0; k <= constants.size(); ++k) {
      std::string cand = k == 0 ? name : name + "." + std::to_string(k);
      auto it = by_name.find(cand);
      if (it == by_name.end()) {
        Constant c;
        c.info = ConstantInfo{cand, type, 0, *nbytes};
        c.content_key = std::move(key);
        if (producer) c.producer = std::move(producer);
        else c.bytes.assign(bytes.begin(), bytes.end());
        by_name.emplace(cand, constants.size());
        constants.push_back(std::move(c));
        return cand;
      }
      const Constant& c = constants[it->second];
      bool same = c.info.type == type && c.content_key == key &&
                  (producer || std::equal(c.bytes.begin(), c.bytes.end(), bytes.begin(), bytes.end()));
      if (same) return cand;
    }
    return make_error(ErrorCode::kInternal, "writer: no free name for constant '" + name + "'");
  }

  Status write_file(int fd, const std::string& manifest, const format::Header& h) {
    std::byte header[format::kHeaderSize];
    format::encode_header(h, std::span<std::byte, format::kHeaderSize>(header, format::kHeaderSize));
    HFS_TRY(write_all(fd, header, sizeof header, "header"));
    HFS_TRY(write_all(fd, manifest.data(), manifest.size(), "manifest"));
    uint64_t pos = h.manifest_offset + h.manifest_size;
    HFS_TRY(write_zeros(fd, h.data_offset - pos));
    pos = h.data_offset;
    std::vector<std::byte> buf;
    for (size_t i = 0; i < constants.size(); ++i) {
      Constant& c = constants[i];
      HFS_TRY(write_zeros(fd, h.data_offset + c.info.offset - pos));
      const std::byte* src = c.bytes.data();
      if (!c.file.empty()) {
        HFS_TRY(copy_range(fd, c.file, c.file_offset, c.info.nbytes, "constant '" + c.info.name + "'"));
        pos = h.data_offset + c.info.offset + c.info.nbytes;
        if (progress) progress(i, constants.size(), c.info.name);
        continue;
      }
      if (c.producer) {
        // One tensor in memory at a time: the buffer is reused (grown, never zero-filled per tensor: the
        // producer overwrites every byte) and released after the loop.
        if (buf.size() < c.info.nbytes) buf.resize(c.info.nbytes);
        Status st = make_error(ErrorCode::kInternal, "");
        try {
          st = c.producer(std::span<std::byte>(buf.data(), c.info.nbytes));
        } catch (const std::exception& e) {
          st = make_error(ErrorCode::kInternal, std::string("producer threw: ") + e.what());
        } catch (...) {
          st = make_error(ErrorCode::kInternal, "producer threw");
        }
        HFS_TRY_CTX(std::move(st), "constant '" + c.info.name + "'");
        src = buf.data();
      }
      HFS_TRY(write_all(fd, src, c.info.nbytes, "constant '" + c.info.name + "'"));
      pos = h.data_offset + c.info.offset + c.info.nbytes;
      if (progress) progress(i, constants.size(), c.info.name);
    }
    HFS_TRY(write_zeros(fd, h.file_size - pos));
    if (::fsync(fd) != 0) return make_error(ErrorCode::kIo, "fsync: " + errno_text());
    return Ok{};
  }
};

ProgramWriter::ProgramWriter() : impl_(std::make_unique<Impl>()) {}
ProgramWriter::~ProgramWriter() = default;

void ProgramWriter::set_metadata(std::string key, Value value) { impl_->metadata[std::move(key)] = std::move(value); }

Result<std::string> ProgramWriter::add_constant(const std::string& name, const TensorType& type,
                                                std::span<const std::byte> bytes) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(bytes)));
  return impl_->add(name, type, std::string("bytes:") + hex, bytes, nullptr);
}

Result<std::string> ProgramWriter::add_constant_lazy(const std::string& name, const TensorType& type,
                                                     const std::string& content_key, Producer producer) {
  if (content_key.empty())
    return make_error(ErrorCode::kInvalidArgument, "writer: constant '" + name + "': empty content_key");
  if (!producer) return make_error(ErrorCode::kInvalidArgument, "writer: constant '" + name + "': no producer");
  return impl_->add(name, type, "lazy:" + content_key, {}, std::move(producer));
}

Result<std::string> ProgramWriter::add_constant_from_file(const std::string& name, const TensorType& type,
                                                         const std::string& content_key, const std::string& path,
                                                         uint64_t offset) {
  if (content_key.empty())
    return make_error(ErrorCode::kInvalidArgument, "writer: constant '" + name + "': empty content_key");
  if (path.empty()) return make_error(ErrorCode::kInvalidArgument, "writer: constant '" + name + "': empty source path");
  const size_t before = impl_->constants.size();
  // The placeholder producer is never called: write_file copies file-range constants before producers.
  auto added = impl_->add(name, type, "lazy:" + content_key, {}, [](std::span<std::byte>) -> Status {
    return make_error(ErrorCode::kInternal, "file-range constant produced through a producer");
  });
  if (!added) return added;
  if (impl_->constants.size() > before) {  // newly added (not deduplicated onto an existing constant)
    Impl::Constant& c = impl_->constants.back();
    c.file = path;
    c.file_offset = offset;
  }
  return added;
}

Status ProgramWriter::add_method(MethodDef method) {
  for (const MethodDef& m : impl_->methods)
    if (m.name == method.name)
      return make_error(ErrorCode::kDuplicateName, "writer: method '" + method.name + "' added twice");
  impl_->methods.push_back(std::move(method));
  return Ok{};
}

void ProgramWriter::set_progress(Progress progress) { impl_->progress = std::move(progress); }

Status ProgramWriter::check_destination(const std::string& path) {
  if (path.empty()) return make_error(ErrorCode::kInvalidArgument, "writer: the output path is empty");
  if (path.back() == '/')
    return make_error(ErrorCode::kInvalidArgument, "writer: " + path + ": names a directory; give a file path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ok{};  // a missing parent directory is reported when the temp file is created
    return make_error(ErrorCode::kIo, "writer: " + path + ": cannot stat: " + errno_text());
  }
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return Ok{};
  return make_error(ErrorCode::kInvalidArgument, "writer: " + path + ": not a regular file (" + io::file_kind(st.st_mode) +
                                                     "); a program is only written to a new or regular file");
}

Status ProgramWriter::write(const std::string& path) {
  HFS_TRY(check_destination(path));
  auto ctx = [&](const Error& e) { return e.with_context("writer: " + path); };
  Impl& w = *impl_;
  std::vector<ConstantInfo> infos;
  uint64_t off = 0;
  for (auto& c : w.constants) {
    off = format::align_up(off, kTensorAlignment);
    c.info.offset = off;
    off += c.info.nbytes;
    infos.push_back(c.info);
  }
  const uint64_t data_size = format::align_up(off, kTensorAlignment);
  for (const MethodDef& m : w.methods)
    if (auto st = verify_method(m, infos); !st) return ctx(st.error());

  std::string manifest;
  try {
    manifest = format::encode_manifest(w.metadata, infos, w.methods).to_json();
  } catch (const std::exception& e) {  // e.g. a metadata string that is not valid UTF-8
    return ctx(make_error(ErrorCode::kInvalidArgument, std::string("cannot encode the manifest as JSON: ") + e.what()));
  }
  format::Header h{};
  std::memcpy(h.magic, kProgramMagic, sizeof h.magic);
  h.version = kProgramFormatVersion;
  h.header_size = static_cast<uint32_t>(format::kHeaderSize);
  h.manifest_offset = format::kHeaderSize;
  h.manifest_size = manifest.size();
  h.data_offset = format::align_up(h.manifest_offset + h.manifest_size, kTensorAlignment);
  h.data_size = data_size;
  h.file_size = h.data_offset + h.data_size;

  const std::string tmp = temp_path(path);
  // O_NOFOLLOW: a symbolic link planted at the temp name is refused, not written through.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return ctx(make_error(ErrorCode::kIo, "cannot create " + tmp + ": " + errno_text()));
  Status st = w.write_file(fd, manifest, h);
  if (::close(fd) != 0 && st) st = make_error(ErrorCode::kIo, "close " + tmp + ": " + errno_text());
  if (st && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = make_error(ErrorCode::kIo, "rename " + tmp + " -> " + path + ": " + errno_text());
  if (!st) {
    ::unlink(tmp.c_str());
    return ctx(st.error());
  }
  // Make the rename itself durable (best effort: some file systems refuse fsync on directories).
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/') + 1);
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Ok{};
}

std::string ProgramWriter::temp_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

}  // namespace hfs
