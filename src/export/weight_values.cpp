// Weight value checks: chunked pread + the branch-free scan of export/convert.h.
#include "export/weight_values.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

#include "export/convert.h"

namespace hfs {
namespace {

constexpr size_t kChunk = size_t{1} << 20;  // a multiple of every element size; stays in L2 while scanned

std::string number_text(double v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

// "[2, 17] (element 49)" for a flat index into a tensor of `shape`.
std::string element_text(const Shape& shape, uint64_t flat) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  uint64_t rest = flat;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    const auto n = static_cast<uint64_t>(std::max<int64_t>(shape[d], 1));
    idx[static_cast<size_t>(d)] = static_cast<int64_t>(rest % n);
    rest /= n;
  }
  return Shape(std::span<const int64_t>(idx)).to_string() + " (element " + std::to_string(flat) + ")";
}

}  // namespace

WeightValueScanner::~WeightValueScanner() {
  for (const auto& [path, fd] : fds_) ::close(fd);
}

Status WeightValueScanner::check(const Checkpoint& ck, const std::string& tensor, DType stored) {
  const SafetensorInfo* t = ck.find(tensor);
  if (!t) return make_error(ErrorCode::kMissingTensor, ck.dir() + ": tensor '" + tensor + "' not found in the checkpoint");
  const std::string path = ck.dir() + "/" + ck.file_of(tensor);
  auto it = fds_.find(path);
  if (it == fds_.end()) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error(ErrorCode::kIo, path + ": cannot open: " + std::strerror(errno));
    it = fds_.emplace(path, fd).first;
  }
  const bool quantized = stored == DType::kI8 || stored == DType::kQ4_0;  // any finite value quantizes
  const DType to = quantized ? DType::kF32 : stored;
  const size_t elem = dtype_info(t->dtype).block_bytes;
  buf_.resize(kChunk);
  for (uint64_t done = 0; done < t->nbytes;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, t->nbytes - done));
    const ssize_t got = ::pread(it->second, buf_.data(), want, static_cast<off_t>(t->offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || static_cast<size_t>(got) % elem != 0)  // the header was checked against the size at open
      return make_error(ErrorCode::kIo, path + ": tensor '" + tensor + "': read failed at byte " +
                                            std::to_string(t->offset + done) + (got < 0 ? ": " + std::string(std::strerror(errno)) : ""));
    const auto bad = first_unrepresentable({buf_.data(), static_cast<size_t>(got)}, t->dtype, to);
    if (bad) {
      const std::string where =
          path + ": tensor '" + tensor + "': element " + element_text(t->shape, done / elem + bad->index);
      if (!bad->overflow)
        return make_error(ErrorCode::kBadCheckpoint, where + " is " +
                                                         (std::isnan(bad->value) ? "NaN" : bad->value > 0 ? "+inf" : "-inf") +
                                                         " (a non-finite weight makes the model's outputs NaN)");
      return make_error(ErrorCode::kInvalidArgument,
                        where + " = " + number_text(bad->value) + " overflows " + std::string(dtype_name(stored)) +
                            " (it would be stored as inf); keep the checkpoint's " + std::string(dtype_name(t->dtype)) +
                            " or store weights as f32");
    }
    done += static_cast<uint64_t>(got);
  }
  return Ok{};
}

Status check_weight_values(const Checkpoint& ck, const std::vector<std::pair<std::string, DType>>& weights) {
  // Four readers already reach the page cache's copy bandwidth on common machines; more only add contention.
  const size_t threads = std::min<size_t>({weights.size(), std::max(1u, std::thread::hardware_concurrency()), 4});
  std::vector<Status> results(weights.size(), Ok{});
  std::atomic<size_t> next{0};
  // Once a pair fails, later pairs cannot change the answer (the first failure in order wins): skip them.
  std::atomic<size_t> first_failure{weights.size()};
  auto worker = [&] {
    WeightValueScanner scan;
    for (size_t i = next++; i < weights.size(); i = next++) {
      if (i > first_failure.load()) continue;
      results[i] = scan.check(ck, weights[i].first, weights[i].second);
      if (!results[i].ok())
        for (size_t f = first_failure.load(); i < f && !first_failure.compare_exchange_weak(f, i);) {
        }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const Status& st : results)
    if (!st.ok()) return st;
  return Ok{};
}

}  // namespace hfs
