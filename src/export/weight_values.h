// Weight value checks at export: a program must not carry NaN or ±inf weights (every output would be NaN;
// llama.cpp refuses such data too), nor finite values that round to inf in the dtype they are stored as
// (f32 beyond 65504 stored as f16).
//
//   HFS_TRY(hfs::check_weight_values(*ckpt, {{"model.embed_tokens.weight", hfs::DType::kF16}, ...}));
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"
#include "hfstatic/ext/safetensors.h"

namespace hfs {

// Reads tensors with pread in 1 MiB pieces rather than through the checkpoint's mapping: a pass over every
// weight then costs one copy from the page cache instead of a page fault per 4 KiB, which measured twice as
// slow. Files stay open for the scanner's lifetime.
class WeightValueScanner {
 public:
  WeightValueScanner() = default;
  WeightValueScanner(const WeightValueScanner&) = delete;
  WeightValueScanner& operator=(const WeightValueScanner&) = delete;
  ~WeightValueScanner();

  // `stored`: the dtype the program keeps the weight in (i8/q4_0 accept every finite value). Errors name
  // the file, tensor, element (index per dimension and flat) and value: kBadCheckpoint for NaN/±inf,
  // kInvalidArgument for a value the chosen dtype cannot hold.
  [[nodiscard]] Status check(const Checkpoint& ck, const std::string& tensor, DType stored);

 private:
  std::map<std::string, int> fds_;  // path → descriptor
  std::vector<std::byte> buf_;
};

// Checks every (tensor, stored dtype) pair, a few tensors at a time on separate threads (the pass is bound
// by memory bandwidth, which one core does not saturate). The error returned is that of the first failing
// pair in `weights` order, whatever the threads' timing.
[[nodiscard]] Status check_weight_values(const Checkpoint& ck, const std::vector<std::pair<std::string, DType>>& weights);

}  // namespace hfs
