// The pipeline stages of a tokenizer.json, built from their JSON config nodes: normalizers,
// pre-tokenizers, decoders and post-processors. Each factory returns kUnsupported naming the type it
// does not know, and kTokenizer for a malformed node ("<stage>.<key>: expected ..., got ...").
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"

namespace hfs::tok {

using Json = nlohmann::json;

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  [[nodiscard]] virtual Result<std::string> normalize(std::string text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits each piece further (in place). `section_index` is the index of the text section between
  // added tokens (Metaspace's prepend_scheme "first" only prepends in section 0).
  [[nodiscard]] virtual Status pre_tokenize(std::vector<std::string>& pieces, size_t section_index) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  [[nodiscard]] virtual Status decode_chain(std::vector<std::string>& tokens) const = 0;
  // One token's raw bytes in the middle of a text (Tokenizer::token_bytes): no lossy UTF-8 decoding (a byte
  // token stays its byte), no start-of-text rule (Metaspace's first-space removal, Strip). Default: as is.
  virtual void piece(std::string& /*token*/) const {}
};

// What a decoder needs to know about the tokenizer (ByteLevel passes added tokens through untouched).
struct DecoderContext {
  const std::vector<std::string>* added_token_contents = nullptr;  // sorted
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds special tokens around `ids` (when `add_special`); `resolve` maps a token string to its id.
  [[nodiscard]] virtual Status process(std::vector<int32_t>& ids, bool add_special) const = 0;
};

// Token string → id (added tokens first, then the vocabulary); -1 when unknown.
using ResolveFn = std::function<int32_t(std::string_view)>;

// A null JSON node yields nullptr (no stage).
[[nodiscard]] Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& node);
[[nodiscard]] Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& node);
[[nodiscard]] Result<std::unique_ptr<Decoder>> make_decoder(const Json& node, const DecoderContext& ctx);
[[nodiscard]] Result<std::unique_ptr<PostProcessor>> make_post_processor(const Json& node, const ResolveFn& resolve);

// Config access helpers with the error wording shared by all stages.
Error config_error(std::string_view where, std::string_view expected, const Json& got);
[[nodiscard]] Result<std::string> get_string(const Json& node, std::string_view key, std::string_view where,
                                             std::string fallback, bool required = false);
[[nodiscard]] Result<bool> get_bool(const Json& node, std::string_view key, std::string_view where, bool fallback);
// A {"Regex": ...} or {"String": ...} pattern → PCRE2 pattern.
[[nodiscard]] Result<std::string> pattern_to_pcre(const Json& node, std::string_view where);

}  // namespace hfs::tok
