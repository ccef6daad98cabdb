// StreamDecoder: incremental detokenization by decoding a short window and emitting what it adds
// (HF DecodeStream's scheme), plus incremental clean-up of tokenization spaces.
#include <algorithm>

#include "hfstatic/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace hfs {
namespace {

bool ends_with_replacement(const std::string& s) { return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0; }
bool starts_with_replacement(const std::string& s) { return s.compare(0, 3, "\xEF\xBF\xBD") == 0; }

// Tokens of context a primed window starts with. Enough for every decoder's look-behind (Metaspace's
// first-token space, byte-fallback characters of up to 4 byte tokens); the window grows past it only
// when its text is empty (skipped special tokens) or starts inside a character.
constexpr size_t kPrimeWindow = 8;

// Length of the tail of `s` that may still become part of a clean-up rule (" .", " n't", " 's", ...):
// from the last space when what follows it is a proper prefix of a rule's remainder.
size_t cleanup_holdback(const std::string& s) {
  size_t sp = s.rfind(' ');
  if (sp == std::string::npos) return 0;
  std::string_view tail = std::string_view(s).substr(sp + 1);
  static const std::string_view kPrefixes[] = {"", "'", "n", "n'", "'v", "'r"};
  for (auto p : kPrefixes)
    if (tail == p) return s.size() - sp;
  return 0;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special) : tok_(&tok), skip_special_(skip_special) {}

void StreamDecoder::reset() {
  ids_.clear();
  prefix_index_ = 0;
  prefix_.clear();
  pending_.clear();
}

Status StreamDecoder::prime(std::span<const int32_t> context) {
  reset();
  const Tokenizer::Impl& im = *tok_->impl_;
  size_t take = std::min(context.size(), kPrimeWindow);
  for (;;) {
    auto window = context.subspan(context.size() - take);
    HFS_ASSIGN_OR_RETURN(auto text, decode_ids(im, window, skip_special_, /*clean_up=*/false));
    // Doubling keeps the total work linear in the context even when all of it decodes to nothing.
    if (take < context.size() && (text.empty() || starts_with_replacement(text))) {
      take = std::min(context.size(), take * 2);
      continue;
    }
    ids_.assign(window.begin(), window.end());
    prefix_ = std::move(text);
    return Ok{};
  }
}

Result<std::string> StreamDecoder::feed(int32_t id) {
  const Tokenizer::Impl& im = *tok_->impl_;
  ids_.push_back(id);
  auto text = decode_ids(im, ids_, skip_special_, /*clean_up=*/false);
  if (!text) {
    ids_.pop_back();
    return text.error();
  }
  // Hold back while the window's text ends inside a UTF-8 character (decoded as U+FFFD).
  if (text->size() <= prefix_.size() || ends_with_replacement(*text)) return std::string();
  std::string piece = text->substr(prefix_.size());
  size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<long>(prefix_index_));
  HFS_ASSIGN_OR_RETURN(auto prefix, decode_ids(im, ids_, skip_special_, /*clean_up=*/false));
  prefix_ = std::move(prefix);
  prefix_index_ = new_prefix_index;
  if (!im.clean_up_tokenization_spaces) return piece;
  pending_ = clean_up_tokenization(pending_ + piece);
  size_t hold = cleanup_holdback(pending_);
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

Result<std::string> StreamDecoder::flush() {
  const Tokenizer::Impl& im = *tok_->impl_;
  std::string piece;
  if (!ids_.empty()) {
    HFS_ASSIGN_OR_RETURN(auto text, decode_ids(im, ids_, skip_special_, /*clean_up=*/false));
    if (text.size() > prefix_.size()) piece = text.substr(prefix_.size());
  }
  if (im.clean_up_tokenization_spaces) piece = clean_up_tokenization(pending_ + piece);
  reset();
  return piece;
}

}  // namespace hfs
