#include "stepper.h"

#include <algorithm>

namespace hfs::py_bind {

Stepper::Stepper(std::unique_ptr<Generation> gen, std::shared_ptr<const Tokenizer> tokenizer,
                 std::vector<int32_t> eos_ids, const GenerationConfig& config, std::vector<std::string> stop_strings,
                 std::span<const int32_t> context)
    : gen_(std::move(gen)),
      tokenizer_(std::move(tokenizer)),
      eos_ids_(std::move(eos_ids)),
      config_(config),
      stop_strings_(std::move(stop_strings)) {
  if (!tokenizer_) return;
  decoder_ = std::make_unique<StreamDecoder>(*tokenizer_);
  // A context the tokenizer cannot decode (ids outside its vocabulary) leaves the decoder unprimed: the
  // text is then that of the generated ids alone, as before priming existed.
  (void)decoder_->prime(context);
}

bool Stepper::is_stop_token(int32_t t) const {
  if (!config_.ignore_eos && std::find(eos_ids_.begin(), eos_ids_.end(), t) != eos_ids_.end()) return true;
  return std::find(config_.stop_tokens.begin(), config_.stop_tokens.end(), t) != config_.stop_tokens.end();
}

std::string Stepper::stop_reason() const {
  if (!done_) return "";
  if (stopped_by_string_) return "stop_string";
  switch (gen_->stop_reason()) {
    case GenerationResult::Stop::kMaxTokens: return "max_tokens";
    case GenerationResult::Stop::kStopToken: return "stop_token";
    case GenerationResult::Stop::kCancelled: return "cancelled";
    case GenerationResult::Stop::kContextFull: return "context_full";
  }
  return "";
}

Result<std::optional<int32_t>> Stepper::step_token() {
  if (done_) return std::optional<int32_t>();
  auto tok = gen_->next();
  if (!tok) {
    done_ = true;
    return tok.error();
  }
  if (!*tok) done_ = true;
  return *tok;
}

size_t Stepper::held_back() const {
  size_t keep = 0;
  for (const std::string& s : stop_strings_) {
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > keep; --k) {
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  return keep;
}

Result<std::optional<std::string>> Stepper::step_text() {
  if (!decoder_) return make_error(ErrorCode::kInternal, "stream: text mode without a tokenizer");
  for (;;) {
    if (done_) {
      if (pending_.empty()) return std::optional<std::string>();
      return std::optional<std::string>(std::exchange(pending_, std::string()));
    }
    auto tok = gen_->next();
    if (!tok) {
      done_ = true;
      pending_.clear();
      return tok.error();
    }
    if (!*tok) {
      done_ = true;
      HFS_ASSIGN_OR_RETURN(auto rest, decoder_->flush());
      pending_ += rest;
    } else if (is_stop_token(**tok)) {
      continue;  // not rendered; the next step reports the end
    } else {
      auto piece = decoder_->feed(**tok);
      if (!piece) {
        done_ = true;
        return piece.error();
      }
      pending_ += *piece;
    }
    size_t cut = std::string::npos;
    for (const std::string& s : stop_strings_) cut = std::min(cut, pending_.find(s));
    if (cut != std::string::npos) {
      pending_.resize(cut);
      done_ = true;
      stopped_by_string_ = true;
    }
    const size_t keep = done_ ? 0 : held_back();
    if (pending_.size() > keep) {
      std::string out = pending_.substr(0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return std::optional<std::string>(std::move(out));
    }
  }
}

}  // namespace hfs::py_bind
