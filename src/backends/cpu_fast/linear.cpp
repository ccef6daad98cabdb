#include "backends/cpu_fast/linear.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <tuple>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/elementwise.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/huge_slab.h"
#include "backends/cpu_fast/linear_half.h"
#include "backends/cpu_fast/linear_kernels.h"
#include "backends/cpu_fast/thread_pool.h"
#include "backends/cpu_fast/weight_formats.h"

namespace hfs::cpu_fast {

template <typename T>
AlignedArray<T>::AlignedArray(size_t n, Init init) : n_(n) {
  if (n == 0) return;
  const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
  const bool slab = bytes >= kSlabMinBytes;
  void* p = slab ? HugeSlabs::global().alloc(bytes) : std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();  // load-time only; callers report kResourceExhausted
  if (init == Init::kZero) std::memset(p, 0, bytes);
  p_ = std::unique_ptr<T, Free>(static_cast<T*>(p), Free{slab ? bytes : 0});
}
template <typename T>
void AlignedArray<T>::Free::operator()(T* p) const {
  if (slab_bytes != 0)
    HugeSlabs::global().free(p, slab_bytes);
  else
    std::free(p);
}
template class AlignedArray<uint8_t>;
template class AlignedArray<int8_t>;
template class AlignedArray<uint16_t>;
template class AlignedArray<int32_t>;
template class AlignedArray<float>;

namespace {

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The kernels of the ISA dispatch picked (per call: tests cap the ISA at run time).
detail::FloatKernel float_kernel() {
  switch (active_isa()) {
    case Isa::kAmx:
    case Isa::kAvx512: return detail::linear_float_avx512;
    case Isa::kAvx2: return detail::linear_float_avx2;
    default: return detail::linear_float_scalar;
  }
}
// The ISA's kernel for 2..kFloatRowsMax rows of float weights, bit for bit its decode GEMV's per row
// (linear_kernels.h); nullptr on the scalar path.
detail::FloatKernel float_rows_kernel() {
  switch (active_isa()) {
    case Isa::kAmx:
    case Isa::kAvx512: return detail::linear_float_rows_avx512;
    case Isa::kAvx2: return detail::linear_float_rows_avx2;
    default: return nullptr;
  }
}
// 2..kFloatRowsMax rows of float weights where decode's kernel has no rows kernel: every row through the
// kernel decode runs for one row (the weight's GEMV variant, linear_half.h), so that a row's outputs are
// bit for bit what decode gives it whatever rows share the call (a draft token verified in a multi-row
// step must see the logits decode would). The rows take turns on a few weight rows at a time, so all but
// the first read them from L1.
constexpr int64_t kRowsL1Bytes = int64_t{32} << 10;
void float_rows_as_decode(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                          int64_t n1) {
  const detail::FloatKernel one = half_gemv_kernel(w, 1, float_kernel());
  const int64_t es = w.format == DType::kF32 ? 4 : 2;
  const int64_t cols = std::max<int64_t>(1, kRowsL1Bytes / (w.k * es));
  for (int64_t c0 = n0; c0 < n1; c0 += cols) {
    const int64_t c1 = std::min(n1, c0 + cols);
    for (int64_t i = 0; i < m; ++i) one(w, x + i * w.k, 1, bias, y + i * w.n, c0, c1);
  }
}
// The float kernel for at most kFloatRowsMax rows: decode's for one row, else its rows kernel (or each
// row through decode's).
detail::FloatKernel float_kernel_upto_rows_max(const PackedWeight& w, int64_t m) {
  if (m == 1) return half_gemv_kernel(w, 1, float_kernel());
  const detail::FloatKernel rows = half_rows_kernel(w, float_rows_kernel());
  return rows != nullptr ? rows : float_rows_as_decode;
}
// More than kFloatRowsMax rows, each bit for bit what decode gives it. The ISA's own rows kernels take any
// row count (above kFloatRowsMax their many-row form, linear_float_rows.h: decode's sums at prefill speed);
// a forced GEMV variant's rows kernel takes blocks of kFloatRowsMax rows. A pool task's range of weight
// rows (tens of KiB) stays in L2 while the blocks pass, and each block's activations in L1.
void float_rows_blocked(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, int64_t n0,
                        int64_t n1) {
  const detail::FloatKernel rows = half_rows_kernel(w, float_rows_kernel());
  if (rows != nullptr && (rows == detail::linear_float_rows_avx512 || rows == detail::linear_float_rows_avx2))
    return rows(w, x, m, bias, y, n0, n1);
  for (int64_t i = 0; i < m; i += detail::kFloatRowsMax) {
    const int64_t r = std::min(detail::kFloatRowsMax, m - i);
    float_kernel_upto_rows_max(w, r)(w, x + i * w.k, r, bias, y + i * w.n, n0, n1);
  }
}
// The float kernel linear() runs for m rows of w: decode's for one row, its rows kernel (or each row
// through decode's) up to kFloatRowsMax rows; above, the same in blocks (FloatRows::kRowInvariant) or the
// ISA's prefill GEMM (FloatRows::kPanelGemm), whose sums run in plain K order and so round differently.
detail::FloatKernel float_kernel_for(const PackedWeight& w, int64_t m, FloatRows mode) {
  if (m <= detail::kFloatRowsMax) return float_kernel_upto_rows_max(w, m);
  return mode == FloatRows::kPanelGemm ? float_kernel() : float_rows_blocked;
}

// AMX pays a tile configuration per task and works on 16 rows at once: prefill only.
// 2..16 rows (a multi-row step) on AVX-512: the rows kernel, which reads each weight block once for all rows.
detail::IntKernel int_kernel(int64_t m) {
  const bool rows = m >= 2 && m <= detail::kIntRowsMax;
  switch (active_isa()) {
    case Isa::kAmx:
      return m >= detail::kAmxMinRows ? detail::linear_int_amx : rows ? detail::linear_int_rows_avx512 : detail::linear_int_avx512;
    case Isa::kAvx512: return rows ? detail::linear_int_rows_avx512 : detail::linear_int_avx512;
    case Isa::kAvx2: return detail::linear_int_avx2;
    default: return detail::linear_int_scalar;
  }
}

// Pool tasks for a job streaming `bytes` of weights against m activation rows, at most `units`: up to 8
// per thread, so a core another process takes holds back little work, but at least kTaskWork
// weight-bytes × rows each. A decode GEMV over a small weight (SmolLM2-135M's 576×576 q4_0 is 186 KB)
// split 16 ways gives 12 KB streams the prefetcher never ramps up on, plus a contended claim per task:
// SmolLM2-135M int4 decode 188 tok/s with 16 tasks always, 217 with this rule. Larger weights (Qwen2.5-0.5B)
// get 16 tasks either way.
// The count is a multiple of the threads: 3 tasks on 2 threads take 2/3 of the serial time where 4 take
// 1/2 (unrounded, SmolLM2's [576, 1536] down projection and its q/k/v batch would be 3 and 5 tasks).
// body(t) for t in [0, tasks): on the pool when there is one and more than one task, else inline.
template <typename Fn>
void run_tasks(ThreadPool* pool, int64_t tasks, const Fn& body) {
  if (pool != nullptr && tasks > 1)
    pool->run(tasks, body);
  else
    for (int64_t t = 0; t < tasks; ++t) body(t);
}

// Task units of the integer kernels: one tile for decode and steps of 2 or 3 rows (which stream tile by
// tile), a pair of tiles from kIntRowsPairMinRows rows on. The rows kernel from there and a prefill kernel
// run tiles in pairs (rows_tile_pair, int_range), so a task edge inside a pair leaves both sides a lone
// tile that loads each activation row for half the work: with tile units, 16 tasks over a [4864, 896]
// weight's 304 tiles ran every 19th tile of an 8-row step alone.
// SmolLM2-135M's [576, 576] i8 weight (36 tiles) as 16 tasks run serially at m = 64: 65.1 µs as one range,
// 67.7 with tile units, 65.3 with pair units; whole 512-token prefills on 2 threads gain 2.6 % (SmolLM2
// int8) to 4.0 % (Qwen2.5 int8). Decode streams tile by tile: any edge is fine there.
// IntUnits: a packed weight's tiles grouped into those units — how many units, and the tiles
// [first(u0), end(u1)) that units [u0, u1) cover (the last unit may hold fewer tiles).
struct IntUnits {
  IntUnits(const PackedWeight& w, int64_t m) : tiles(w.n_padded / detail::kTileRows), per(m >= detail::kIntRowsPairMinRows ? 2 : 1) {}
  int64_t count() const { return (tiles + per - 1) / per; }
  int64_t first(int64_t u0) const { return u0 * per; }
  int64_t end(int64_t u1) const { return std::min(tiles, u1 * per); }
  int64_t tiles, per;
};

int64_t task_count(size_t bytes, int64_t m, int64_t units, int threads) {
  constexpr int64_t kTaskWork = int64_t{256} << 10;
  if (threads <= 1) return 1;
  const int64_t by_work = static_cast<int64_t>(bytes) * m / kTaskWork;
  return std::min(units, round_up(std::clamp<int64_t>(by_work, threads, int64_t{threads} * 8), threads));
}

Error pack_error(DType f, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, "cpu_fast: packing " + std::string(dtype_name(f)) + " weight: " + what);
}

}  // namespace

size_t PackedWeight::weight_bytes() const {
  switch (format) {
    case DType::kF32: return static_cast<size_t>(n * k * 4);
    case DType::kF16:
    case DType::kBF16: return static_cast<size_t>(n * k * 2);
    default: return q.size() + block_scales.size() * 2 + channel_scales.size() * 4;
  }
}

Result<PackedWeight> pack_weight(DType format, const void* data, int64_t n, int64_t k, const float* channel_scale,
                                 const std::function<void(uint64_t)>& done) {
  PackedWeight w;
  w.format = format;
  w.n = n;
  w.k = k;
  if (n <= 0 || k <= 0)
    return pack_error(format, "shape [" + std::to_string(n) + ", " + std::to_string(k) + "] must be positive");
  if (data == nullptr) return pack_error(format, "no data");
  switch (format) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      w.n_padded = n;
      w.k_padded = k;
      w.raw = data;
      return w;
    case DType::kI8:
      if (channel_scale == nullptr) return pack_error(format, "per-channel scale [" + std::to_string(n) + "] missing");
      break;
    case DType::kQ8_0:
    case DType::kQ4_0:
      if (k % kQBlock != 0) return pack_error(format, "k = " + std::to_string(k) + " is not a multiple of 32");
      break;
    default:
      return make_error(ErrorCode::kUnsupported, "cpu_fast: no kernel for weight dtype " + std::string(dtype_name(format)) +
                                                     " (supported: f32, f16, bf16, i8, q8_0, q4_0)");
  }
  w.source = data;
  w.source_scale = channel_scale;
  w.n_padded = round_up(n, detail::kTileRows);
  w.k_padded = round_up(k, 64);
  const int64_t tiles = w.n_padded / detail::kTileRows;
  const int64_t blocks = w.k_padded / kQBlock;  // per row, padding included
  try {
    // Not zeroed: the loops below write every byte, padding included.
    constexpr auto kNone = AlignedArray<uint8_t>::Init::kNone;
    w.q = AlignedArray<uint8_t>(static_cast<size_t>(tiles * detail::tile_bytes(w)), kNone);
    if (format == DType::kI8)
      w.channel_scales = AlignedArray<float>(static_cast<size_t>(w.n_padded), AlignedArray<float>::Init::kNone);
    else
      w.block_scales = AlignedArray<uint16_t>(static_cast<size_t>(w.n_padded * blocks), AlignedArray<uint16_t>::Init::kNone);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted, "cpu_fast: cannot allocate packed weight [" + std::to_string(n) +
                                                         ", " + std::to_string(k) + "]");
  }
  const auto* src = static_cast<const uint8_t*>(data);
  const int64_t nb = k / kQBlock;
  const uint64_t src_row_bytes = format == DType::kI8     ? static_cast<uint64_t>(k)
                                 : format == DType::kQ8_0 ? static_cast<uint64_t>(nb * kQ8Bytes)
                                                          : static_cast<uint64_t>(nb * kQ4Bytes);
  // Signed value of element (row, col); pads are 0.
  auto value = [&](int64_t row, int64_t col) -> int {
    if (row >= n || col >= k) return 0;
    if (format == DType::kI8) return static_cast<int8_t>(src[row * k + col]);
    if (format == DType::kQ8_0) return static_cast<int8_t>(src[(row * nb + col / kQBlock) * kQ8Bytes + kQScaleBytes + col % kQBlock]);
    const uint8_t byte = src[(row * nb + col / kQBlock) * kQ4Bytes + kQScaleBytes + col % (kQBlock / 2)];
    return ((col % kQBlock) < kQBlock / 2 ? (byte & 15) : (byte >> 4)) - 8;
  };
  auto block_scale = [&](int64_t row, int64_t blk) -> uint16_t {
    uint16_t d = 0;
    if (row < n && blk < nb) std::memcpy(&d, src + (row * nb + blk) * (format == DType::kQ8_0 ? kQ8Bytes : kQ4Bytes), kQScaleBytes);
    return d;
  };
  const int64_t steps = detail::steps_per_block(format);
  const int64_t tb = detail::tile_bytes(w);
  const int64_t full_blocks = k / kQBlock;
  const int64_t block_bytes = format == DType::kI8 ? kQBlock : format == DType::kQ8_0 ? kQ8Bytes : kQ4Bytes;
  const int64_t qs_offset = format == DType::kI8 ? 0 : kQScaleBytes;
  const uint32_t flip = format == DType::kQ4_0 ? 0u : 0x80808080u;
  // The AVX-512 packer gathers with 32-bit offsets of up to 15 source rows.
  const bool vector_pack = active_isa() >= Isa::kAvx512 && 15 * static_cast<uint64_t>(src_row_bytes) + 64 < (uint64_t{1} << 31);
  auto scale_at = [&](int64_t row, int64_t b) -> uint16_t& {
    return w.block_scales.data()[(row / detail::kTileRows * blocks + b) * detail::kTileRows + row % detail::kTileRows];
  };
  // Whole source blocks of one real row, 4 bytes at a time: a Q4_0 block's 16 bytes are already the
  // packed nibble pairs (element 4v+j low, 16+4v+j high), and i8 / q8_0 bytes only flip their sign bit.
  auto pack_row_blocks = [&](int64_t row) {
    uint8_t* tile = w.q.data() + row / detail::kTileRows * tb;
    const int64_t r = row % detail::kTileRows;
    for (int64_t b = 0; b < full_blocks; ++b) {
      const uint8_t* qs = src + row * static_cast<int64_t>(src_row_bytes) + b * block_bytes + qs_offset;
      for (int64_t v = 0; v < steps; ++v) {
        uint32_t word;
        std::memcpy(&word, qs + 4 * v, 4);
        word ^= flip;
        std::memcpy(tile + (b * steps + v) * 64 + 4 * r, &word, 4);
      }
      if (format != DType::kI8) scale_at(row, b) = block_scale(row, b);
    }
  };
  // Block b of one row through value(): pad rows and the padded K tail.
  auto pack_block_slowly = [&](int64_t row, int64_t b) {
    uint8_t* tile = w.q.data() + row / detail::kTileRows * tb;
    const int64_t r = row % detail::kTileRows;
    for (int64_t v = 0; v < steps; ++v)
      for (int64_t j = 0; j < 4; ++j) {
        uint8_t& dst = tile[(b * steps + v) * 64 + 4 * r + j];
        if (format == DType::kQ4_0)
          dst = static_cast<uint8_t>((value(row, 32 * b + 4 * v + j) + 8) | ((value(row, 32 * b + 16 + 4 * v + j) + 8) << 4));
        else
          dst = static_cast<uint8_t>(value(row, 32 * b + 4 * v + j) + 128);
      }
    if (format != DType::kI8) scale_at(row, b) = block_scale(row, b);
  };
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t row0 = t * detail::kTileRows;
    const int64_t real = std::min<int64_t>(detail::kTileRows, n - row0);
    if (vector_pack && real == detail::kTileRows) {
      // One gather per 64-byte vector: [4864, 896] i8 packs 1.4x, [896, 4864] q4_0 2-3x faster than below.
      detail::pack_tile_avx512(src + row0 * static_cast<int64_t>(src_row_bytes), static_cast<int64_t>(src_row_bytes),
                               block_bytes, qs_offset, full_blocks, steps, flip, w.q.data() + t * tb,
                               format == DType::kI8 ? nullptr : w.block_scales.data() + t * blocks * detail::kTileRows);
    } else {
      for (int64_t r = 0; r < real; ++r) pack_row_blocks(row0 + r);
      for (int64_t r = real; r < detail::kTileRows; ++r)
        for (int64_t b = 0; b < full_blocks; ++b) pack_block_slowly(row0 + r, b);
    }
    for (int64_t b = full_blocks; b < blocks; ++b)
      for (int64_t r = 0; r < detail::kTileRows; ++r) pack_block_slowly(row0 + r, b);
    if (format == DType::kI8)
      for (int64_t r = 0; r < detail::kTileRows; ++r)
        w.channel_scales.data()[row0 + r] = row0 + r < n ? channel_scale[row0 + r] : 0.0f;
    // Report progress every 64 tiles (rows are contiguous in every source format).
    if (done && ((t + 1) % 64 == 0 || t + 1 == tiles))
      done(static_cast<uint64_t>(std::min(row0 + detail::kTileRows, n)) * src_row_bytes);
  }
  return w;
}

Result<std::shared_ptr<PackedWeight>> shared_packed_weight(DType format, const void* data, int64_t n, int64_t k,
                                                          const float* channel_scale,
                                                          const std::function<void(uint64_t)>& done, ThreadPool* pool) {
  // Keyed by the source bytes' address and interpretation; an entry whose copy died (its program was
  // unloaded, so the address may be reused) has expired and is simply replaced.
  using Key = std::tuple<const void*, const float*, DType, int64_t, int64_t>;
  static std::mutex mu;
  static std::map<Key, std::weak_ptr<PackedWeight>> cache;
  const Key key{data, channel_scale, format, n, k};
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end())
    if (auto sp = it->second.lock()) return sp;
  HFS_ASSIGN_OR_RETURN(PackedWeight w, pack_weight(format, data, n, k, channel_scale, done));
  if (!w.is_integer()) {
    // A copy, 4 MiB at a time so that `done` can release the source as it goes.
    const size_t bytes = w.weight_bytes();
    try {
      w.copy = AlignedArray<uint8_t>(bytes, AlignedArray<uint8_t>::Init::kNone);
    } catch (const std::bad_alloc&) {
      return make_error(ErrorCode::kResourceExhausted, "cpu_fast: cannot allocate a copy of " + std::string(dtype_name(format)) +
                                                           " weight [" + std::to_string(n) + ", " + std::to_string(k) + "]");
    }
    constexpr size_t kStep = size_t{4} << 20;
    const int64_t threads = pool != nullptr ? pool->size() : 1;
    for (size_t off = 0; off < bytes; off += kStep) {
      const size_t len = std::min(kStep, bytes - off);
      const int64_t parts = len >= (size_t{256} << 10) ? threads : 1;
      run_tasks(pool, parts, [&](int64_t t) {
        const size_t a = len * static_cast<size_t>(t) / static_cast<size_t>(parts);
        const size_t b = len * static_cast<size_t>(t + 1) / static_cast<size_t>(parts);
        std::memcpy(w.copy.data() + off + a, static_cast<const uint8_t*>(data) + off + a, b - a);
      });
      if (done) done(off + len);
    }
    w.raw = w.copy.data();
    HFS_TRY(add_short_transpose(w));
  }
  auto sp = std::make_shared<PackedWeight>(std::move(w));
  for (auto it = cache.begin(); it != cache.end();) it = it->second.expired() ? cache.erase(it) : std::next(it);
  cache[key] = sp;
  return sp;
}

Status add_short_transpose(PackedWeight& w) {
  if (w.format != DType::kF32 || w.k > kShortTransposeK || w.n * w.k * 4 > kShortTransposeBytes ||
      detected_isa() < Isa::kAvx512)
    return Ok{};
  const int64_t np = round_up(w.n, 16);
  try {
    w.short_t = AlignedArray<float>(static_cast<size_t>(w.k * np));  // zeroed: outputs past n read zeros
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted, "cpu_fast: cannot allocate the transposed copy of f32 weight [" +
                                                         std::to_string(w.n) + ", " + std::to_string(w.k) + "]");
  }
  const auto* src = static_cast<const float*>(w.raw);
  float* t = w.short_t.data();
  for (int64_t n = 0; n < w.n; ++n)
    for (int64_t k = 0; k < w.k; ++k) t[k * np + n] = src[n * w.k + k];
  return Ok{};
}

void gather_rows_i8(const PackedWeight& w, const int32_t* ids, int64_t t, float* y) {
  const int64_t tb = detail::tile_bytes(w);
  for (int64_t i = 0; i < t; ++i) {
    const int64_t row = ids[i];
    const uint8_t* tile = w.q.data() + row / detail::kTileRows * tb + 4 * (row % detail::kTileRows);
    const float s = w.channel_scales.data()[row];
    float* yr = y + i * w.k;
    // Element k sits in 64-byte vector k/4 of the tile (8 per 32-block), at byte k%4 of the row's lane.
    for (int64_t k = 0; k < w.k; ++k) yr[k] = s * static_cast<float>(static_cast<int>(tile[(k / 4) * 64 + k % 4]) - 128);
  }
}

void gather_rows(const PackedWeight& w, const int32_t* ids, int64_t t, float* y) {
  if (w.is_integer()) {
    gather_rows_i8(w, ids, t, y);
    return;
  }
  embedding(w.raw, w.format, nullptr, ids, t, w.k, y);
}

LinearScratch::LinearScratch(int64_t k_padded, int64_t max_rows) {
  acts.k_padded = k_padded;
  acts.rows = max_rows;
  const auto n = static_cast<size_t>(k_padded * max_rows);
  acts.xq = AlignedArray<int8_t>(n);
  acts.block_scale = AlignedArray<float>(n / kQBlock);
  acts.block_bias = AlignedArray<int32_t>(n / kQBlock);
}

size_t LinearScratch::bytes() const {
  return acts.xq.size() + (acts.block_scale.size() + acts.block_bias.size()) * 4;
}

namespace {

void quantize_rows(const float* x, int64_t i0, int64_t i1, int64_t k, int offset, QuantizedActs& a) {
  const int64_t kp = a.k_padded;
  if (active_isa() >= Isa::kAvx512) {
    detail::quantize_acts_avx512(x, i0, i1, k, offset, a);
    return;
  }
  if (active_isa() >= Isa::kAvx2) {
    detail::quantize_acts_avx2(x, i0, i1, k, offset, a);
    return;
  }
  for (int64_t i = i0; i < i1; ++i) {
    int8_t* xq = a.xq.data() + i * kp;
    float* bs = a.block_scale.data() + i * (kp / 32);
    int32_t* bb = a.block_bias.data() + i * (kp / 32);
    const float* xr = x + i * k;
    for (int64_t b0 = 0; b0 < kp; b0 += 32) {
      const int64_t len = std::clamp<int64_t>(k - b0, 0, 32);
      float amax = 0;
      for (int64_t e = 0; e < len; ++e) amax = std::max(amax, std::fabs(xr[b0 + e]));
      const float s = amax / 127.0f, inv = s != 0 ? 1.0f / s : 0.0f;
      // |x·inv| ≤ 127: adding 1.5·2^23 rounds to nearest even in one add (nearbyint is a libm call
      // on baseline x86-64), and the loop vectorizes.
      constexpr float kMagic = 12582912.0f;
      for (int64_t e = 0; e < 32; ++e)
        xq[b0 + e] = e < len ? static_cast<int8_t>(static_cast<int32_t>((xr[b0 + e] * inv + kMagic) - kMagic)) : 0;
      int32_t sum = 0;
      for (int64_t e = 0; e < 32; ++e) sum += xq[b0 + e];
      bs[b0 / 32] = s;
      bb[b0 / 32] = -offset * sum;
    }
  }
}

}  // namespace

void quantize_acts(const float* x, int64_t m, int64_t k, int offset, QuantizedActs& a, ThreadPool* pool,
                   RowPrologue before) {
  a.offset = offset;
  // Rows are independent, so a prefill chunk's rows are split over the pool: serial, quantizing
  // 64 × 4864 (Qwen2.5-0.5B's down projection input) takes 164 µs, an eighth of quantize + GEMM on two
  // threads. At least kRowsWork elements a task; decode's single row stays on the caller.
  constexpr int64_t kRowsWork = int64_t{8} << 10;
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t tasks = std::min({m, int64_t{threads} * 4, m * k / kRowsWork});
  auto rows = [&](int64_t r0, int64_t r1) {
    if (before.fn != nullptr) before.fn(before.ctx, r0, r1);
    quantize_rows(x, r0, r1, k, offset, a);
  };
  if (threads <= 1 || tasks <= 1) {
    rows(0, m);
    return;
  }
  pool->run(tasks, [&](int64_t t) { rows(m * t / tasks, m * (t + 1) / tasks); });
}

void linear(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, LinearScratch& scratch,
            ThreadPool* pool, FloatRows mode) {
  const int threads = pool ? pool->size() : 1;
  if (!w.is_integer()) {
    const detail::FloatKernel kern = float_kernel_for(w, m, mode);
    const int64_t rows = detail::float_unit_rows(active_isa(), w.format, m);
    const int64_t units = (w.n + rows - 1) / rows;
    const int64_t chunks = task_count(w.weight_bytes(), m, units, threads);
    auto body = [&](int64_t c) {
      const int64_t u0 = units * c / chunks, u1 = units * (c + 1) / chunks;
      kern(w, x, m, bias, y, u0 * rows, std::min(w.n, u1 * rows));
    };
    run_tasks(pool, chunks, body);
    return;
  }
  quantize_acts(x, m, w.k, act_offset(w.format), scratch.acts, pool);
  linear_quantized(w, scratch.acts, m, bias, y, pool);
}

void linear_quantized(const PackedWeight& w, const QuantizedActs& a, int64_t m, const float* bias, float* y,
                      ThreadPool* pool) {
  const int threads = pool ? pool->size() : 1;
  const detail::IntKernel kern = int_kernel(m);
  const IntUnits iu(w, m);
  const int64_t units = iu.count();
  const int64_t chunks = task_count(w.weight_bytes(), m, units, threads);
  auto body = [&](int64_t c) { kern(w, a, m, bias, y, iu.first(units * c / chunks), iu.end(units * (c + 1) / chunks)); };
  run_tasks(pool, chunks, body);
}

void linear_batch(std::span<const LinearJob> jobs, const float* x, const QuantizedActs* acts, int64_t m,
                  ThreadPool* pool, FloatRows mode) {
  constexpr size_t kMaxJobs = 8;
  if (jobs.empty()) return;
  if (jobs.size() > kMaxJobs) {
    linear_batch(jobs.first(kMaxJobs), x, acts, m, pool, mode);
    linear_batch(jobs.subspan(kMaxJobs), x, acts, m, pool, mode);
    return;
  }
  const bool integer = jobs[0].w->is_integer();
  const detail::IntKernel ikern = int_kernel(m);
  // Units: IntUnits (integer) or float_unit_rows rows (float). The task budget
  // (task_count over all the weights' bytes) is shared out in proportion to each weight's units, at least
  // one task each.
  const int threads = pool != nullptr ? pool->size() : 1;
  const Isa isa = active_isa();
  int64_t units[kMaxJobs] = {}, tasks[kMaxJobs] = {}, frows[kMaxJobs] = {}, total_units = 0, total_tasks = 0;
  const size_t nj = jobs.size();
  for (size_t j = 0; j < nj; ++j) {
    frows[j] = detail::float_unit_rows(isa, jobs[j].w->format, m);
    units[j] = integer ? IntUnits(*jobs[j].w, m).count() : (jobs[j].w->n + frows[j] - 1) / frows[j];
    total_units += units[j];
  }
  size_t total_bytes = 0;
  for (size_t j = 0; j < nj; ++j) total_bytes += jobs[j].w->weight_bytes();
  const int64_t budget = task_count(total_bytes, m, total_units, threads);
  for (size_t j = 0; j < nj; ++j) {
    tasks[j] = threads == 1 ? 1 : std::clamp<int64_t>(budget * units[j] / total_units, 1, units[j]);
    total_tasks += tasks[j];
  }
  // A whole number of tasks per thread (see task_count): the rounding's remainder goes to the largest job.
  if (threads > 1) {
    size_t big = 0;
    for (size_t j = 1; j < nj; ++j)
      if (units[j] > units[big]) big = j;
    const int64_t add = std::min(round_up(total_tasks, threads) - total_tasks, units[big] - tasks[big]);
    tasks[big] += add;
    total_tasks += add;
  }
  auto body = [&](int64_t t) {
    size_t j = 0;
    while (t >= tasks[j]) t -= tasks[j++];
    const int64_t u0 = units[j] * t / tasks[j], u1 = units[j] * (t + 1) / tasks[j];
    const LinearJob& job = jobs[j];
    if (integer) {
      const IntUnits iu(*job.w, m);
      ikern(*job.w, job.acts != nullptr ? *job.acts : *acts, m, job.bias, job.y, iu.first(u0), iu.end(u1));
    } else {
      float_kernel_for(*job.w, m, mode)(*job.w, job.x != nullptr ? job.x : x, m, job.bias, job.y, u0 * frows[j],
                                        std::min(job.w->n, u1 * frows[j]));
    }
  };
  run_tasks(pool, total_tasks, body);
}

void linear_glu(const LinearJob& gate, const LinearJob& up, const float* x, const QuantizedActs* acts, int64_t m,
                float* y, ThreadPool* pool, FloatRows mode) {
  const bool integer = gate.w->is_integer();
  const detail::IntKernel ikern = int_kernel(m);
  const int64_t n = gate.w->n;
  const IntUnits iu(*gate.w, m);  // gate and up have the same shape
  const int64_t cols = integer ? detail::kTileRows * iu.per
                               : detail::float_unit_rows(active_isa(), gate.w->format, m);  // columns per unit
  const int64_t units = (n + cols - 1) / cols;
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t tasks = task_count(gate.w->weight_bytes() + up.w->weight_bytes(), m, units, threads);
  auto body = [&](int64_t t) {
    const int64_t u0 = units * t / tasks, u1 = units * (t + 1) / tasks;
    for (const LinearJob* j : {&gate, &up}) {
      if (integer)
        ikern(*j->w, *acts, m, j->bias, j->y, iu.first(u0), iu.end(u1));
      else
        float_kernel_for(*j->w, m, mode)(*j->w, x, m, j->bias, j->y, u0 * cols, std::min(n, u1 * cols));
    }
    const int64_t c0 = u0 * cols, c1 = std::min(n, u1 * cols);
    for (int64_t i = 0; i < m; ++i) silu_mul(gate.y + i * n + c0, up.y + i * n + c0, c1 - c0, y + i * n + c0);
  };
  run_tasks(pool, tasks, body);
}

}  // namespace hfs::cpu_fast
