// HuggingFace config reading: config.json (with gemma3's nested text_config), generation_config.json,
// and the tokenizer files that get embedded in the program.
//
//   auto cfg = hfs::read_hf_config(dir);
//   auto layers = cfg->require_int("num_hidden_layers");        // kBadCheckpoint naming the key if absent
//   auto eps = cfg->number_or("rms_norm_eps", 1e-6);             // null and absent both mean "default"
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/value.h"

namespace hfs {

struct HfConfig {
  std::string dir;
  std::string model_type;  // config.json model_type ("gemma3" even when the text part is read)
  Value root;              // config.json
  Value text;              // text_config when present (gemma3 multimodal), else root
  std::string where;       // "DIR/config.json" or "DIR/config.json text_config", for messages

  // Token ids: generation_config.json overrides config.json (and text_config); -1 / empty = absent.
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = -1;
  // The file (and part) each id came from, for messages: "DIR/generation_config.json", ...
  std::string bos_where, eos_where, pad_where;

  // Lookups in `text`; a key holding null counts as absent. Wrong kinds are kBadCheckpoint naming the key.
  const Value* get(std::string_view key) const;
  [[nodiscard]] Result<int64_t> require_int(std::string_view key) const;
  [[nodiscard]] Result<int64_t> int_or(std::string_view key, int64_t def) const;
  [[nodiscard]] Result<double> number_or(std::string_view key, double def) const;
  [[nodiscard]] Result<bool> bool_or(std::string_view key, bool def) const;
  [[nodiscard]] Result<std::string> string_or(std::string_view key, std::string def) const;
  // Range-checked lookups: kBadCheckpoint naming the key, the value and the accepted range. `why` (may be
  // empty) says where an upper bound comes from, e.g. "the largest tensor dimension in the checkpoint".
  [[nodiscard]] Result<int64_t> int_in(std::string_view key, int64_t lo, int64_t hi, std::string_view why = {}) const;
  [[nodiscard]] Result<int64_t> int_in_or(std::string_view key, int64_t def, int64_t lo, int64_t hi,
                                          std::string_view why = {}) const;
  // A finite number > 0 (eps, RoPE bases, scales), or ≥ 0 (soft-caps, where 0 means off); `hi` bounds it
  // (e.g. RoPE bases are used in float32).
  [[nodiscard]] Result<double> positive_or(std::string_view key, double def, double hi = 1.7976931348623157e308) const;
  [[nodiscard]] Result<double> non_negative_or(std::string_view key, double def) const;

  // "DIR/config.json: key 'k' ..." errors.
  Error bad_value(std::string_view key, const std::string& msg) const;
  Error unsupported(std::string_view key, const std::string& msg) const;
};

[[nodiscard]] Result<HfConfig> read_hf_config(const std::string& dir);

// Tokenizer files present in the directory (tokenizer.json, tokenizer_config.json, special_tokens_map.json).
struct EmbeddedFile {
  std::string file_name;
  std::shared_ptr<const std::string> bytes;
};
[[nodiscard]] Result<std::vector<EmbeddedFile>> read_tokenizer_files(const std::string& dir);

}  // namespace hfs
