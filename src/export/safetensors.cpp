// Safetensors reader: strict header validation, mmap'd data, sharded index support.
#include "hfstatic/ext/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/json_duplicate_keys.h"
#include "core/regular_file.h"
#include "hfstatic/value.h"

namespace hfs {
namespace {

Error bad(std::string_view file, const std::string& msg) {
  return make_error(ErrorCode::kBadCheckpoint, std::string(file) + ": " + msg);
}

Result<DType> safetensors_dtype(std::string_view s) {
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  if (s == "I8") return DType::kI8;
  if (s == "U8") return DType::kU8;
  if (s == "I32") return DType::kI32;
  if (s == "I64") return DType::kI64;
  return make_error(ErrorCode::kBadCheckpoint, "unsupported dtype '" + std::string(s) +
                                                   "' (expected F32, F16, BF16, I8, U8, I32 or I64)");
}

Result<SafetensorInfo> parse_entry(std::string_view file, const std::string& name, const Value& v,
                                   uint64_t data_begin, uint64_t data_size) {
  auto fail = [&](const std::string& msg) { return bad(file, "tensor '" + name + "': " + msg); };
  if (!v.is_object()) return fail("expected an object with dtype, shape, data_offsets");
  const Value* dt = v.get("dtype");
  const Value* shape = v.get("shape");
  const Value* offs = v.get("data_offsets");
  if (!dt || !dt->is_string()) return fail("missing or non-string 'dtype'");
  if (!shape || !shape->is_array()) return fail("missing or non-array 'shape'");
  if (!offs || !offs->is_array() || offs->size() != 2) return fail("'data_offsets' must be an array [begin, end]");
  auto dtype = safetensors_dtype(dt->as_string());
  if (!dtype) return fail(dtype.error().message());
  if (shape->size() > static_cast<size_t>(kMaxRank))
    return fail("rank " + std::to_string(shape->size()) + " exceeds the maximum " + std::to_string(kMaxRank));
  std::vector<int64_t> dims;
  uint64_t numel = 1;
  bool overflow = false;
  for (const Value& d : shape->as_array()) {
    if (!d.is_int() || d.as_int() < 0) return fail("shape entries must be non-negative integers");
    uint64_t n = static_cast<uint64_t>(d.as_int());
    if (n != 0 && numel > UINT64_MAX / n) overflow = true;
    numel *= n;
    dims.push_back(d.as_int());
  }
  const Value& b = offs->as_array()[0];
  const Value& e = offs->as_array()[1];
  if (!b.is_int() || !e.is_int() || b.as_int() < 0 || e.as_int() < 0)
    return fail("data_offsets must be non-negative integers");
  uint64_t begin = static_cast<uint64_t>(b.as_int()), end = static_cast<uint64_t>(e.as_int());
  if (begin > end) return fail("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") has begin > end");
  if (end > data_size)
    return fail("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") exceeds the data section size " + std::to_string(data_size));
  auto want = overflow ? std::nullopt : dtype_bytes(*dtype, numel);
  if (!want || *want != end - begin)
    return fail("shape " + Shape(std::span<const int64_t>(dims)).to_string() + " of " +
                std::string(dtype_name(*dtype)) + " needs " + (want ? std::to_string(*want) : "overflowing") +
                " bytes, data_offsets give " + std::to_string(end - begin));
  SafetensorInfo info;
  info.name = name;
  info.dtype = *dtype;
  info.shape = Shape(std::span<const int64_t>(dims));
  info.offset = data_begin + begin;
  info.nbytes = end - begin;
  return info;
}

}  // namespace

Result<std::vector<SafetensorInfo>> parse_safetensors(std::span<const std::byte> bytes, std::string_view file) {
  if (bytes.size() < 8)
    return bad(file, "file is " + std::to_string(bytes.size()) + " bytes, smaller than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (n > kMaxSafetensorsHeader)
    return bad(file, "header length " + std::to_string(n) + " exceeds the limit " + std::to_string(kMaxSafetensorsHeader));
  if (n > bytes.size() - 8)
    return bad(file, "header length " + std::to_string(n) + " exceeds the file size " + std::to_string(bytes.size()) +
                         " minus 8");
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, static_cast<size_t>(n));
  auto header = Value::parse_json(text, kMaxSafetensorsHeader);
  if (!header) return bad(file, "header is not valid JSON: " + header.error().message());
  if (!header->is_object()) return bad(file, "header must be a JSON object");
  // The parsed object keeps one entry per name; a second entry would silently lose a tensor or a field.
  if (auto dup = first_duplicate_key(text)) {
    if (dup->size() == 1) return bad(file, "tensor '" + dup->front() + "' is listed twice in the header");
    return bad(file, "tensor '" + dup->front() + "': key '" + dup->back() + "' appears twice in the header");
  }
  const uint64_t data_begin = 8 + n;
  const uint64_t data_size = bytes.size() - data_begin;
  std::vector<SafetensorInfo> out;
  for (const auto& [name, v] : header->as_object()) {
    if (name == "__metadata__") continue;
    HFS_ASSIGN_OR_RETURN(SafetensorInfo info, parse_entry(file, name, v, data_begin, data_size));
    out.push_back(std::move(info));
  }
  // Overlap check on ranges sorted by start; empty tensors occupy nothing.
  std::vector<const SafetensorInfo*> by_offset;
  for (const auto& t : out)
    if (t.nbytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorInfo* a, const SafetensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorInfo* a = by_offset[i - 1];
    const SafetensorInfo* b = by_offset[i];
    if (b->offset < a->offset + a->nbytes)
      return bad(file, "tensors '" + a->name + "' and '" + b->name + "' have overlapping data ranges");
  }
  return out;  // std::map iteration already sorted by name
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ && size_ > 0) munmap(const_cast<std::byte*>(map_), size_);
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto file = io::open_regular_file(path);  // a FIFO or directory shard is refused, never waited on
  if (!file) return make_error(ErrorCode::kIo, file.error().message());
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(file->size());
  if (f->size_ > 0) {
    void* p = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, file->fd(), 0);
    if (p == MAP_FAILED) return make_error(ErrorCode::kIo, path + ": mmap failed: " + std::strerror(errno));
    f->map_ = static_cast<const std::byte*>(p);
  }
  HFS_ASSIGN_OR_RETURN(std::vector<SafetensorInfo> tensors, parse_safetensors({f->map_, f->size_}, path));
  f->tensors_ = std::move(tensors);
  return f;
}

const SafetensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const SafetensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

std::span<const std::byte> SafetensorsFile::data(const SafetensorInfo& t) const {
  return {map_ + t.offset, static_cast<size_t>(t.nbytes)};
}

namespace {

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<std::string> read_text(const std::string& path) { return io::read_regular_file(path); }

}  // namespace

Result<std::shared_ptr<const Checkpoint>> Checkpoint::open(const std::string& dir) {
  auto ck = std::shared_ptr<Checkpoint>(new Checkpoint());
  ck->dir_ = dir;
  const std::string single = dir + "/model.safetensors";
  const std::string index_path = dir + "/model.safetensors.index.json";
  std::vector<std::string> shard_names;
  std::map<std::string, std::string> weight_map;  // tensor -> shard (sharded only)
  if (file_exists(single)) {
    shard_names.push_back("model.safetensors");
  } else if (file_exists(index_path)) {
    HFS_ASSIGN_OR_RETURN(std::string text, read_text(index_path));
    auto idx = Value::parse_json(text);
    if (!idx) return bad(index_path, "not valid JSON: " + idx.error().message());
    if (auto dup = first_duplicate_key(text)) {
      if (dup->size() == 2 && dup->front() == "weight_map")
        return bad(index_path, "weight_map lists tensor '" + dup->back() + "' twice");
      std::string path;
      for (const std::string& k : *dup) path += (path.empty() ? "" : ".") + k;
      return bad(index_path, "key '" + path + "' appears twice");
    }
    const Value* wm = idx->get("weight_map");
    if (!wm || !wm->is_object()) return bad(index_path, "missing 'weight_map' object");
    std::set<std::string> seen;
    for (const auto& [tensor, shard] : wm->as_object()) {
      if (!shard.is_string()) return bad(index_path, "weight_map['" + tensor + "'] is not a string");
      const std::string& s = shard.as_string();
      // Shards must be plain files next to the index: no paths escaping the checkpoint directory.
      if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..")
        return bad(index_path, "weight_map['" + tensor + "'] = '" + s + "' is not a file name in the directory");
      weight_map[tensor] = s;
      if (seen.insert(s).second) shard_names.push_back(s);
    }
  } else {
    return make_error(ErrorCode::kBadCheckpoint,
                      dir + ": no model.safetensors or model.safetensors.index.json (only safetensors checkpoints are supported)");
  }
  // Every tensor name in any shard, listed in the index or not: a name stored twice is ambiguous (loaders
  // that read whole shards keep whichever comes last), so it is an error even when the index picks one.
  std::map<std::string, size_t, std::less<>> stored_in;
  for (size_t i = 0; i < shard_names.size(); ++i) {
    auto f = SafetensorsFile::open(dir + "/" + shard_names[i]);
    if (!f) return f.error().code() == ErrorCode::kIo ? make_error(ErrorCode::kBadCheckpoint, f.error().message())
                                                      : f.error();
    for (const SafetensorInfo& t : (*f)->tensors()) {
      auto [prev, fresh] = stored_in.emplace(t.name, i);
      if (!fresh)
        return bad(dir, "tensor '" + t.name + "' is stored in both '" + shard_names[prev->second] + "' and '" +
                            shard_names[i] + "'");
      if (!weight_map.empty()) {
        auto it = weight_map.find(t.name);
        if (it == weight_map.end() || it->second != shard_names[i]) continue;  // index is authoritative
      }
      ck->index_.emplace(t.name, std::make_pair(i, &t));
    }
    ck->files_.push_back(std::move(*f));
  }
  for (const auto& [tensor, shard] : weight_map)
    if (!ck->index_.count(tensor))
      return make_error(ErrorCode::kMissingTensor,
                        index_path + ": tensor '" + tensor + "' is mapped to '" + shard + "' but that shard does not contain it");
  return std::shared_ptr<const Checkpoint>(std::move(ck));
}

const SafetensorInfo* Checkpoint::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second.second;
}

Result<std::span<const std::byte>> Checkpoint::data(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end())
    return make_error(ErrorCode::kMissingTensor, dir_ + ": tensor '" + std::string(name) + "' not found in the checkpoint");
  return files_[it->second.first]->data(*it->second.second);
}

std::string Checkpoint::file_of(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return "";
  const std::string& p = files_[it->second.first]->path();
  return p.substr(dir_.size() + 1);
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : index_) out.push_back(n);
  return out;
}

}  // namespace hfs
