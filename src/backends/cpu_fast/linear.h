// cpu_fast/linear.h — y[M,N] = x[M,K] · W[N,K]^T (+ bias) for every weight format, decode and prefill.
//
// Float weights (f32/f16/bf16) are used in place (zero-copy). Integer formats are pre-packed once at
// load into a kernel layout (tiles of output rows, K padded to 64) and the activation rows are
// quantized per 32-block to int8 on the fly; on AVX-512 the dot products use VNNI vpdpbusd.
//
//   auto w = hfs::cpu_fast::pack_weight(hfs::DType::kQ4_0, bytes, N, K, nullptr);   // at load
//   hfs::cpu_fast::LinearScratch scratch(w->k_padded(), max_rows);                 // at load
//   hfs::cpu_fast::linear(*w, x, M, bias, y, scratch, &pool);                     // per step
//
// Packed layout of every integer format (B = K_padded / 32, T = N_padded / 16): tiles of 16 output
// rows with the 16 ROWS along the vector lanes and 4 K per lane, so one vpdpbusd against 4 broadcast
// activation bytes advances 16 outputs and each int32 lane sums its output's whole 32-block; a block
// then needs one convert + scale per 16 outputs (K along the lanes needed one per 64 products, which
// made prefill bound by float work instead of by vpdpbusd).
//   i8 / q8_0 : u8 [T][B][8][64] = int8 weight + 128 (vpdpbusd's unsigned operand is the weight);
//               in vector v of block b, byte 4c+j holds row 16t+c's element 32b+4v+j
//   q4_0      : u8 [T][B][4][64]; in vector v of block b, byte 4c+j holds row 16t+c's element
//               32b+4v+j in its low nibble and element 32b+16+4v+j in its high nibble, each as stored in
//               Q4_0 (q + 8)
//   block scales (q8_0, q4_0): f16 [T][B][16];  per-channel scales (i8): f32 [N_padded]
// The +128 / +8 offsets are removed exactly by starting each block's int32 sum at -offset·Σx.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"

namespace hfs::cpu_fast {

class ThreadPool;

// 64-byte-aligned owned array (vectors of over-aligned types would need a custom allocator anyway). Arrays
// of kSlabMinBytes and more live in huge-page slabs (huge_slab.h): packed weights are streamed every step.
template <typename T>
class AlignedArray {
 public:
  enum class Init { kZero, kNone };  // kNone: the caller writes every element before reading any
  AlignedArray() = default;
  explicit AlignedArray(size_t n, Init init = Init::kZero);
  T* data() const { return p_.get(); }
  size_t size() const { return n_; }

 private:
  struct Free {
    size_t slab_bytes = 0;  // 0: from aligned_alloc
    void operator()(T* p) const;
  };
  std::unique_ptr<T, Free> p_;
  size_t n_ = 0;
};

struct PackedWeight {
  DType format = DType::kF32;   // f32, f16, bf16 (unpacked), i8 (per-channel), q8_0, q4_0
  int64_t n = 0, k = 0;         // logical shape [n, k]
  int64_t n_padded = 0;         // multiple of 16, the packed tile's rows (integer formats), or n
  int64_t k_padded = 0;         // multiple of 64 (integer formats) or k
  const void* raw = nullptr;    // float formats: [n, k], in `copy` (shared_packed_weight) or the caller's
  AlignedArray<uint8_t> copy;   // float formats: the load-time copy on huge pages (shared_packed_weight)
  AlignedArray<uint8_t> q;      // integer formats: packed values
  AlignedArray<uint16_t> block_scales;  // q8_0 / q4_0
  AlignedArray<float> channel_scales;   // i8
  const void* source = nullptr;         // integer formats: the bytes packed (identifies a tied embedding)
  const float* source_scale = nullptr;  // i8: the per-channel scale given to pack_weight
  // f16 / bf16: the decode GEMV variant chosen at load (linear_half.h), -1 for the ISA's own kernel.
  int gemv_variant = -1;
  // f32 constants of short rows on an AVX-512 machine (add_short_transpose): W transposed, [k][n rounded up
  // to 16], what the AVX-512 kernels read for 1 to kFloatRowsMax activation rows; empty otherwise.
  AlignedArray<float> short_t;

  bool is_integer() const { return format == DType::kI8 || format == DType::kQ8_0 || format == DType::kQ4_0; }
  size_t weight_bytes() const;  // bytes streamed per full pass (what decode bandwidth is measured on)
};

// `data` is [n, k] in `format`; `channel_scale` [n] f32 is required for i8 and ignored otherwise.
// Errors: unsupported format, k not a multiple of 32 for q8_0/q4_0, missing scale.
// `done(bytes)`, if given, is called as packing moves through the source: its first `bytes` bytes have been
// read for the last time (lets the caller release them while a large weight is still being packed).
[[nodiscard]] Result<PackedWeight> pack_weight(DType format, const void* data, int64_t n, int64_t k,
                                               const float* channel_scale,
                                               const std::function<void(uint64_t)>& done = nullptr);

// pack_weight for a constant, packed once per process: every delegate that packs the same bytes (the
// prefill and decode methods of a program, several Runners sharing one Program) gets the same copy,
// which lives while any of them holds it. Thread-safe. Float weights are copied too (into `copy`, on
// huge pages, `done` reporting progress as for packing): Qwen2.5-0.5B f16 decode read its weights
// 11-39 % faster from the copy than from the program's file mapping (bench/results/log/cpu-fast-design.md, "Weight formats").
// `pool`, if given, shares the float copy's memcpy (and its page faults) out: 1 GB in ~200 ms on two
// threads against ~320 ms on one.
[[nodiscard]] Result<std::shared_ptr<PackedWeight>> shared_packed_weight(DType format, const void* data, int64_t n,
                                                                         int64_t k, const float* channel_scale,
                                                                         const std::function<void(uint64_t)>& done = nullptr,
                                                                         ThreadPool* pool = nullptr);

// An f32 weight whose rows are short (k ≤ kShortTransposeK, at most kShortTransposeBytes) gets, on a CPU
// with AVX-512, a transposed copy in `short_t`: decode and multi-row steps then sum each output in one FMA
// chain along K with 16 outputs in the lanes, instead of a dot product per output that ends in a lane sum
// costing more than its FMAs (K = 64: 4 FMAs, about 10 instructions of sum). Each output's chain does not
// depend on the other rows or outputs of the call, so every row of a step is still what decode gives it.
// Nothing to do for other weights. Errors: the copy cannot be allocated.
inline constexpr int64_t kShortTransposeK = 512;
inline constexpr int64_t kShortTransposeBytes = int64_t{16} << 20;
[[nodiscard]] Status add_short_transpose(PackedWeight& w);

// Rows ids[i] of an i8 weight [n, k] as f32 (row · its channel scale), read from the packed copy: an
// i8 embedding (tied to the LM head or not) gathers its rows there, so the original table's released
// pages are never faulted back in. Bit-identical to dequantizing the original. ids must be in [0, n).
void gather_rows_i8(const PackedWeight& w, const int32_t* ids, int64_t t, float* y);
// The same for an i8 or float (f32/f16/bf16) weight: float rows come from w.raw, widened exactly.
void gather_rows(const PackedWeight& w, const int32_t* ids, int64_t t, float* y);

// Activation rows quantized per 32-block (owned scratch sized at load; `quantize` never allocates).
struct QuantizedActs {
  int64_t k_padded = 0, rows = 0;
  AlignedArray<int8_t> xq;     // [rows][k_padded]
  AlignedArray<float> block_scale;   // [rows][k_padded/32]: the 32-block's scale
  AlignedArray<int32_t> block_bias;  // [rows][k_padded/32]: -offset * Σ of the 32-block's values
  int offset = 0;              // the offset block_bias was computed for (128 for i8/q8_0, 8 for q4_0)
};

struct LinearScratch {
  LinearScratch() = default;
  LinearScratch(int64_t k_padded, int64_t max_rows);
  QuantizedActs acts;
  size_t bytes() const;
};

// How float weights (f32/f16/bf16) run more than kFloatRowsMax activation rows (a prefill chunk).
//   kRowInvariant  every row bit for bit what a one-row (decode) call gives it: the decode kernel's K order
//                  for every row, kFloatRowsMax rows at a time (docs/determinism.md). The default.
//   kPanelGemm     the prefill panel GEMM: each output summed in plain K order, outputs along the lanes —
//                  faster for long chunks, but a prompt row then rounds differently from a decode row
//                  (cpu_fast setting "deterministic": false).
// Integer formats give every row the same bits either way (their block sums are exact and every kernel
// runs the same float epilogue).
enum class FloatRows : uint8_t { kRowInvariant, kPanelGemm };

// y [m, n] = x [m, k] · Wᵀ + bias ([n] or nullptr). Integer formats need scratch sized for (k_padded, ≥ m)
// rows. `pool` may be nullptr (runs on the calling thread). Does not allocate. The outputs do not depend
// on the pool's size: work is split over output columns only.
void linear(const PackedWeight& w, const float* x, int64_t m, const float* bias, float* y, LinearScratch& scratch,
            ThreadPool* pool, FloatRows mode = FloatRows::kRowInvariant);

// The integer path with activations already quantized by quantize_acts (with offset 8 for q4_0, 128
// otherwise): lets several linears that read the same activation (q/k/v, gate/up) quantize it once.
void linear_quantized(const PackedWeight& w, const QuantizedActs& acts, int64_t m, const float* bias, float* y,
                      ThreadPool* pool);
inline int act_offset(DType format) { return format == DType::kQ4_0 ? 8 : 128; }

// One output of a batch of linears that read the same activation (q/k/v, gate/up).
struct LinearJob {
  const PackedWeight* w = nullptr;
  const float* bias = nullptr;  // [n] or nullptr
  float* y = nullptr;           // [m, n]
  // This job's own input, in place of the batch's x / acts (the experts' down projections of a moe step,
  // each reading its own hidden activation); nullptr: the batch's.
  const float* x = nullptr;
  const QuantizedActs* acts = nullptr;
};

// Runs the jobs as ONE thread-pool job (tasks split across the weights in proportion to their rows), so
// small projections such as k and v do not each pay a dispatch and a barrier. Either every weight is
// float (x is read) or every weight is integer with the same act_offset and k_padded (`acts` holds x
// quantized for them); a job's own x / acts replace the batch's for it. Does not allocate.
void linear_batch(std::span<const LinearJob> jobs, const float* x, const QuantizedActs* acts, int64_t m,
                  ThreadPool* pool, FloatRows mode = FloatRows::kRowInvariant);

// The gate/up projections of a gated MLP fused with silu(gate)·up: gate.y and up.y [m, n] are written as
// by linear_batch, and y [m, n] = silu(gate.y)·up.y, each task finishing the columns it produced while
// they are in its cache. Both weights have the same n and are both float (x is read) or both integer
// (acts as for linear_batch). Bit-identical to linear_batch followed by silu_mul. Does not allocate.
void linear_glu(const LinearJob& gate, const LinearJob& up, const float* x, const QuantizedActs* acts, int64_t m,
                float* y, ThreadPool* pool, FloatRows mode = FloatRows::kRowInvariant);

// Work that produces rows of a linear's input, run by quantize_acts just before it quantizes them, on
// the same thread: fn(ctx, r0, r1) writes rows [r0, r1) of x (e.g. residual add + RMSNorm), so they are
// computed on the pool and quantized while in that core's cache instead of in a serial pass of their own.
struct RowPrologue {
  void (*fn)(void* ctx, int64_t r0, int64_t r1) = nullptr;
  void* ctx = nullptr;
};
// Quantizes rows of x [m, k] (k ≤ acts.k_padded; the rest is zero) for weights stored with `offset`.
// `pool`, if given, shares the rows out (the same bytes either way). `before`, if set, runs for each
// range of rows first (see RowPrologue). Does not allocate.
void quantize_acts(const float* x, int64_t m, int64_t k, int offset, QuantizedActs& acts, ThreadPool* pool = nullptr,
                   RowPrologue before = {});

}  // namespace hfs::cpu_fast
