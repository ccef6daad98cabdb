// The vocabulary a constrained generation masks (constraint.h): each token's bytes from the program's
// embedded tokenizer, its EOS ids the end tokens. Built once per Runner or Engine, on the first
// constrained generation, and shared by every TokenConstraint over that program.
#pragma once

#include <memory>
#include <span>

#include "hfstatic/constraint.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"
#include "hfstatic/tokenizer.h"

namespace hfs {

// `who` prefixes errors ("generate", "engine: add"); a program without an embedded tokenizer is an error
// saying constraint_vocab must be given instead.
[[nodiscard]] inline Result<std::shared_ptr<const TokenVocabulary>> program_vocabulary(
    const Program* program, std::span<const int32_t> eos_token_ids, const std::string& who) {
  if (program == nullptr)
    return make_error(ErrorCode::kInvalidArgument,
                      who + ": GenerationConfig::constraint needs constraint_vocab when there is no program (no "
                            "tokenizer to take the vocabulary from)");
  HFS_ASSIGN_OR_RETURN_CTX(auto tok, Tokenizer::from_program(*program), who + ": constraint");
  std::vector<int32_t> eos(eos_token_ids.begin(), eos_token_ids.end());
  HFS_ASSIGN_OR_RETURN_CTX(auto vocab, token_vocabulary(*tok, eos), who + ": constraint");
  return vocab;
}

}  // namespace hfs
