// Tokenizer::Impl: everything a loaded tokenizer.json (+ tokenizer_config.json) holds.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hfstatic/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/components.h"

namespace hfs {

struct Tokenizer::Impl {
  std::string name;
  tok::BpeModel model;
  std::vector<int32_t> id_to_sym;  // id → symbol of its token string; -1 for holes

  std::vector<tok::AddedToken> added;
  std::unordered_map<std::string, int32_t> added_lookup;  // content (and normalized content) → index in `added`
  tok::AddedSplitter split_raw;   // tokens matched before normalization
  tok::AddedSplitter split_norm;  // normalized tokens, matched in normalized text
  std::vector<std::string> added_contents_sorted;
  std::vector<char> id_is_special;  // decode(skip_special) drops these

  std::unique_ptr<tok::Normalizer> normalizer;
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer;
  std::unique_ptr<tok::PostProcessor> post_processor;
  std::unique_ptr<tok::Decoder> decoder;

  // tokenizer_config.json
  bool clean_up_tokenization_spaces = true;
  bool remove_space = false;
  bool lowercase_and_remove_accent = false;
  std::optional<int32_t> bos;
  std::vector<int32_t> eos;

  // Token string → the id encode emits for it; -1 when unknown.
  int32_t resolve(std::string_view s) const {
    if (!added_lookup.empty()) {
      auto it = added_lookup.find(std::string(s));
      if (it != added_lookup.end()) return added[static_cast<size_t>(it->second)].id;
    }
    int32_t sym = model.syms.find(s);
    return sym < 0 ? -1 : model.vocab_id[static_cast<size_t>(sym)];
  }
  // Index into `added` when `s` is an added token's (normalized) content, else -1.
  int32_t added_index(std::string_view s) const {
    if (added_lookup.empty()) return -1;
    auto it = added_lookup.find(std::string(s));
    return it == added_lookup.end() ? -1 : it->second;
  }

  [[nodiscard]] Status encode_text(std::string_view text, std::vector<int32_t>& ids) const;
  [[nodiscard]] Status encode_plain(std::string_view text, size_t section_index, std::vector<int32_t>& ids) const;
};

// Ids → text; `clean_up` applies clean_up_tokenization (StreamDecoder applies it itself, incrementally).
[[nodiscard]] Result<std::string> decode_ids(const Tokenizer::Impl& im, std::span<const int32_t> ids, bool skip_special,
                                             bool clean_up);
// HF/transformers.js clean_up_tokenization: drops the space before . ? ! , and English contractions.
std::string clean_up_tokenization(std::string s);

// Builds an Impl from the two JSON documents (loader.cpp).
[[nodiscard]] Result<std::unique_ptr<Tokenizer::Impl>> load_tokenizer_impl(std::string_view tokenizer_json,
                                                                           std::string_view config_json,
                                                                           const std::string& name);

}  // namespace hfs
