// hfs::token_vocabulary (llm_runner.h): a tokenizer's vocabulary as the bytes a grammar constrains. Here, in
// the layer that uses both, so that the grammar layer (constrain) needs no tokenizer.
#include <optional>
#include <string>
#include <vector>

#include "hfstatic/constraint.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"

namespace hfs {

Result<std::shared_ptr<const TokenVocabulary>> token_vocabulary(const Tokenizer& tok, std::span<const int32_t> end_ids) {
  std::vector<std::string> bytes(static_cast<size_t>(tok.vocab_size()));
  std::vector<int32_t> excluded;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    std::optional<std::string> b = tok.token_bytes(id);
    if (!b || tok.is_special(id)) {
      excluded.push_back(id);
      continue;
    }
    bytes[static_cast<size_t>(id)] = std::move(*b);
  }
  std::vector<int32_t> ends;
  for (int32_t id : end_ids)
    if (id >= 0 && id < tok.vocab_size()) ends.push_back(id);
  return TokenVocabulary::create(std::move(bytes), excluded, ends);
}

}  // namespace hfs
