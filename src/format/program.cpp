// Program: loading (mmap or read()), bounds-checking the header and tensor table, verification, lookups.
//
// Safety rule: nothing read from the file decides an allocation size before it has been checked against
// the file size. The only allocation proportional to the file is the read() fallback buffer itself.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/regular_file.h"
#include "format/checks.h"
#include "format/layout.h"
#include "format/manifest.h"
#include "hfstatic/program.h"
#include "hfstatic/ext/metadata_keys.h"

namespace hfs {
namespace format {

// Everything a loaded program holds; Program::Impl is this type (kept outside the class so the file-local
// parsing helpers can name it).
struct LoadedProgram {
  std::string path;
  uint32_t version = 0;
  Metadata metadata;
  std::vector<ConstantInfo> constants;
  std::map<std::string, size_t, std::less<>> constant_index;
  std::vector<MethodDef> methods;
  std::map<std::string, size_t, std::less<>> method_index;
  uint64_t constant_bytes = 0;

  const std::byte* bytes = nullptr;  // the whole file
  uint64_t size = 0;
  const std::byte* data = nullptr;   // the data section
  void* map_addr = nullptr;          // mmap'ed mapping, or
  std::byte* owned = nullptr;        // a 64-byte aligned heap copy
  size_t map_len = 0;

  LoadedProgram() = default;
  LoadedProgram(const LoadedProgram&) = delete;
  LoadedProgram& operator=(const LoadedProgram&) = delete;
  ~LoadedProgram() {
    if (map_addr) munmap(map_addr, map_len);
    std::free(owned);
  }
};

}  // namespace format

struct Program::Impl : format::LoadedProgram {};

namespace {

std::string hex_prefix(const std::byte* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    auto b = static_cast<unsigned>(p[i]);
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

std::string range(uint64_t off, uint64_t size) {
  // Printed without computing off+size, which may overflow for hostile values.
  return "[" + std::to_string(off) + ", " + std::to_string(off) + "+" + std::to_string(size) + ")";
}

bool fits(uint64_t off, uint64_t size, uint64_t limit) { return off <= limit && size <= limit - off; }

Status check_header(const format::Header& h, uint64_t size) {
  if (h.version != kProgramFormatVersion)
    return make_error(ErrorCode::kBadVersion, "unsupported format version: expected " +
                                                  std::to_string(kProgramFormatVersion) + ", got " + std::to_string(h.version));
  if (h.flags != 0 || h.reserved != 0)
    return make_error(ErrorCode::kBadVersion, "header flags/reserved must be 0 in version 1, got flags " +
                                                  std::to_string(h.flags) + ", reserved " + std::to_string(h.reserved));
  if (h.header_size < format::kHeaderSize)
    return make_error(ErrorCode::kBadManifest, "header: header_size " + std::to_string(h.header_size) +
                                                   " is smaller than " + std::to_string(format::kHeaderSize));
  if (h.file_size != size) {
    ErrorCode code = size < h.file_size ? ErrorCode::kTruncated : ErrorCode::kBadManifest;
    return make_error(code, "header: file_size says " + std::to_string(h.file_size) + " bytes, the file has " +
                                std::to_string(size) + (size < h.file_size ? " (truncated)" : " (trailing bytes)"));
  }
  if (h.header_size > size)
    return make_error(ErrorCode::kTruncated, "header: header_size " + std::to_string(h.header_size) +
                                                 " exceeds file size " + std::to_string(size));
  if (h.manifest_offset < h.header_size)
    return make_error(ErrorCode::kBadManifest, "header: manifest_offset " + std::to_string(h.manifest_offset) +
                                                   " lies inside the header (header_size " + std::to_string(h.header_size) + ")");
  if (!fits(h.manifest_offset, h.manifest_size, size))
    return make_error(ErrorCode::kTruncated, "header: manifest byte range " + range(h.manifest_offset, h.manifest_size) +
                                                 " exceeds file size " + std::to_string(size));
  if (h.data_offset % kTensorAlignment != 0)
    return make_error(ErrorCode::kBadManifest,
                      "header: data_offset " + std::to_string(h.data_offset) + " is not a multiple of 64");
  if (h.data_offset < h.manifest_offset + h.manifest_size)
    return make_error(ErrorCode::kBadManifest, "header: data_offset " + std::to_string(h.data_offset) +
                                                   " overlaps the manifest " + range(h.manifest_offset, h.manifest_size));
  if (!fits(h.data_offset, h.data_size, size))
    return make_error(ErrorCode::kTruncated, "header: data section " + range(h.data_offset, h.data_size) +
                                                 " exceeds file size " + std::to_string(size));
  if (h.data_offset + h.data_size != size)
    return make_error(ErrorCode::kBadManifest, "header: data section " + range(h.data_offset, h.data_size) +
                                                   " does not end at the end of the file (" + std::to_string(size) + ")");
  return Ok{};
}

Status check_tensors(format::LoadedProgram& p, uint64_t data_size) {
  for (size_t i = 0; i < p.constants.size(); ++i) {
    const ConstantInfo& c = p.constants[i];
    std::string at = "tensor '" + c.name + "'";
    if (!p.constant_index.emplace(c.name, i).second)
      return make_error(ErrorCode::kDuplicateName, at + ": name used by two tensors");
    if (c.offset % kTensorAlignment != 0)
      return make_error(ErrorCode::kTensorOutOfRange,
                        at + ": offset " + std::to_string(c.offset) + " is not a multiple of 64");
    if (!fits(c.offset, c.nbytes, data_size))
      return make_error(ErrorCode::kTensorOutOfRange, at + ": byte range " + range(c.offset, c.nbytes) +
                                                          " exceeds the data section size " + std::to_string(data_size));
    auto want = format::checked_nbytes(c.type);
    if (!want)
      return make_error(ErrorCode::kTensorSizeMismatch,
                        at + ": type " + c.type.to_string() + " is not a whole number of " +
                            std::string(dtype_name(c.type.dtype)) + " blocks");
    if (*want != c.nbytes)
      return make_error(ErrorCode::kTensorSizeMismatch, at + ": " + c.type.to_string() + " needs " +
                                                            std::to_string(*want) + " bytes, nbytes is " +
                                                            std::to_string(c.nbytes));
    p.constant_bytes += c.nbytes;
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < p.constants.size(); ++i)
    if (p.constants[i].nbytes > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.constants[a].offset < p.constants[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const ConstantInfo& a = p.constants[order[k - 1]];
    const ConstantInfo& b = p.constants[order[k]];
    if (a.offset + a.nbytes > b.offset)
      return make_error(ErrorCode::kTensorOverlap, "tensor '" + a.name + "' " + range(a.offset, a.nbytes) +
                                                       " overlaps tensor '" + b.name + "' " + range(b.offset, b.nbytes));
  }
  return Ok{};
}

Status parse(format::LoadedProgram& p, bool verify) {
  const uint64_t size = p.size;
  const size_t nmagic = static_cast<size_t>(std::min<uint64_t>(size, sizeof(kProgramMagic)));
  if (std::memcmp(p.bytes, kProgramMagic, nmagic) != 0)
    return make_error(ErrorCode::kBadMagic, "not a program file: expected magic \"HFSTATIC\" (4846535441544943), got " +
                                                hex_prefix(p.bytes, nmagic));
  if (size < format::kHeaderSize)
    return make_error(ErrorCode::kTruncated, "file is " + std::to_string(size) + " bytes, the header alone needs " +
                                                 std::to_string(format::kHeaderSize));
  format::Header h = format::decode_header(std::span<const std::byte, format::kHeaderSize>(p.bytes, format::kHeaderSize));
  HFS_TRY(check_header(h, size));
  p.version = h.version;
  p.data = p.bytes + h.data_offset;

  std::string_view text(reinterpret_cast<const char*>(p.bytes + h.manifest_offset), h.manifest_size);
  auto json = Value::parse_json(text, text.size());
  if (!json) return make_error(ErrorCode::kBadManifest, "manifest: " + json.error().message());
  HFS_ASSIGN_OR_RETURN(format::Manifest manifest, format::decode_manifest(*json));
  p.metadata = std::move(manifest.metadata);
  p.constants = std::move(manifest.tensors);
  p.methods = std::move(manifest.methods);
  HFS_TRY(check_tensors(p, h.data_size));
  for (size_t i = 0; i < p.methods.size(); ++i) {
    if (!p.method_index.emplace(p.methods[i].name, i).second)
      return make_error(ErrorCode::kDuplicateName, "method '" + p.methods[i].name + "': name used by two methods");
    if (verify) HFS_TRY(verify_method(p.methods[i], p.constants));
  }
  return Ok{};
}

std::byte* aligned_buffer(uint64_t size) {
  size_t n = static_cast<size_t>(format::align_up(std::max<uint64_t>(size, 1), kTensorAlignment));
  return static_cast<std::byte*>(std::aligned_alloc(kTensorAlignment, n));
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;

Result<std::shared_ptr<const Program>> Program::load(const std::string& path, LoadOptions opts) {
  auto ctx = [&](const Error& e) { return e.with_context("format: " + path); };
  // A FIFO, directory or device is refused without blocking (a FIFO's open would wait for a writer).
  HFS_ASSIGN_OR_RETURN_CTX(io::RegularFile file, io::open_regular_file(path), "format");
  const int fd = file.fd();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->size = file.size();
  if (opts.use_mmap && impl->size > 0) {
    void* addr = ::mmap(nullptr, static_cast<size_t>(impl->size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr != MAP_FAILED) {
      impl->map_addr = addr;
      impl->map_len = static_cast<size_t>(impl->size);
      impl->bytes = static_cast<const std::byte*>(addr);
    }
  }
  if (!impl->map_addr) {  // read() path: requested, or mmap unavailable (e.g. some FUSE/pipe-backed files)
    impl->owned = aligned_buffer(impl->size);
    if (!impl->owned) return ctx(make_error(ErrorCode::kResourceExhausted, "cannot allocate " + std::to_string(impl->size) + " bytes"));
    uint64_t done = 0;
    while (done < impl->size) {
      ssize_t r = ::read(fd, impl->owned + done, static_cast<size_t>(std::min<uint64_t>(impl->size - done, 1u << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ctx(make_error(ErrorCode::kIo, "read failed at offset " + std::to_string(done) + ": " + errno_text()));
      if (r == 0)
        return ctx(make_error(ErrorCode::kTruncated, "file shrank while reading: got " + std::to_string(done) +
                                                         " of " + std::to_string(impl->size) + " bytes"));
      done += static_cast<uint64_t>(r);
    }
    impl->bytes = impl->owned;
  }
  if (auto s = parse(*impl, opts.verify); !s) return ctx(s.error());
  return std::shared_ptr<const Program>(new Program(std::move(impl)));
}

Result<std::shared_ptr<const Program>> Program::from_bytes(std::span<const std::byte> bytes, std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->path = std::move(name);
  impl->size = bytes.size();
  impl->owned = aligned_buffer(impl->size);
  if (!impl->owned) return make_error(ErrorCode::kResourceExhausted, "cannot allocate " + std::to_string(impl->size) + " bytes");
  if (!bytes.empty()) std::memcpy(impl->owned, bytes.data(), bytes.size());
  impl->bytes = impl->owned;
  HFS_TRY_CTX(parse(*impl, /*verify=*/true), "format: " + impl->path);
  return std::shared_ptr<const Program>(new Program(std::move(impl)));
}

const std::string& Program::path() const { return impl_->path; }
uint32_t Program::format_version() const { return impl_->version; }
const Metadata& Program::metadata() const { return impl_->metadata; }

const Value* Program::meta(std::string_view key) const {
  auto it = impl_->metadata.find(key);
  return it == impl_->metadata.end() ? nullptr : &it->second;
}

std::span<const ConstantInfo> Program::constants() const { return impl_->constants; }

Result<TensorView> Program::constant(std::string_view name) const {
  auto it = impl_->constant_index.find(name);
  if (it == impl_->constant_index.end())
    return make_error(ErrorCode::kNotFound, "format: " + impl_->path + ": no constant named '" + std::string(name) + "'");
  const ConstantInfo& c = impl_->constants[it->second];
  return TensorView(static_cast<const void*>(impl_->data + c.offset), c.type.dtype, c.type.shape);
}

std::string Program::embedded_file(std::string_view file) const {
  auto v = constant(std::string(keys::kFilePrefix) + std::string(file));
  if (!v || v->dtype != DType::kU8) return {};
  return std::string(static_cast<const char*>(v->ptr), static_cast<size_t>(v->nbytes()));
}

uint64_t Program::constant_bytes() const { return impl_->constant_bytes; }
std::span<const MethodDef> Program::methods() const { return impl_->methods; }

const MethodDef* Program::method(std::string_view name) const {
  auto it = impl_->method_index.find(name);
  return it == impl_->method_index.end() ? nullptr : &impl_->methods[it->second];
}

uint64_t Program::file_size() const { return impl_->size; }
bool Program::is_mmapped() const { return impl_->map_addr != nullptr; }

}  // namespace hfs
