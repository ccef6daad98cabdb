// fuzz/targets/tokenizer_json.h — tokenizer.json loader: hfs::Tokenizer::from_json on arbitrary text.
//
// The input is split at the first NUL byte: before it the tokenizer.json text, after it the
// tokenizer_config.json text (empty when there is no NUL). A tokenizer that loads must encode and decode
// a short fixed text without crashing.
#pragma once

#include <cstring>

#include "common.h"
#include "hfstatic/tokenizer.h"

namespace hfs::fuzz {

inline std::string fuzz_tokenizer_json(const uint8_t* data, size_t size) {
  std::string_view all = as_text(data, size);
  size_t nul = all.find('\0');
  std::string_view tok_json = all.substr(0, nul);
  std::string_view config_json = nul == std::string_view::npos ? std::string_view() : all.substr(nul + 1);
  auto tok = Tokenizer::from_json(tok_json, config_json, "fuzz/tokenizer.json");
  if (!tok) return "";
  auto ids = (*tok)->encode("Hello world! <s> 123 ünï", true);
  if (ids) {
    for (int32_t id : *ids)
      if (id < 0 || id >= (*tok)->vocab_size()) return "encode returned id " + std::to_string(id) + " outside vocab";
    (void)(*tok)->decode(*ids, false);
    (void)(*tok)->decode(*ids, true);
  }
  return "";
}

}  // namespace hfs::fuzz
