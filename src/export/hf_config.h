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

  // Lookups in `text`; a key holding null counts as absent. Wrong kinds are kBadCheckpoint naming the key.
  const Value* get(std::string_view key) const;
  [[nodiscard]] Result<int64_t> require_int(std::string_view key) const;
  [[nodiscard]] Result<int64_t> int_or(std::string_view key, int64_t def) const;
  [[nodiscard]] Result<double> number_or(std::string_view key, double def) const;
  [[nodiscard]] Result<bool> bool_or(std::string_view key, bool def) const;
  [[nodiscard]] Result<std::string> string_or(std::string_view key, std::string def) const;

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
