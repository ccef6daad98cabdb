// A small zero-copy JSON reader for the big parts of tokenizer.json (vocab, merges), which are too
// large for a DOM on a machine where every fresh memory page is expensive: strings without escapes are
// views into the document; only escaped ones are decoded into a scratch buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hfstatic/error.h"

namespace hfs::tok {

class JsonCursor {
 public:
  JsonCursor(std::string_view doc, std::string name) : doc_(doc), name_(std::move(name)) {}
  size_t pos() const { return pos_; }
  void ws() {
    while (pos_ < doc_.size() && (doc_[pos_] == ' ' || doc_[pos_] == '\n' || doc_[pos_] == '\r' || doc_[pos_] == '\t')) ++pos_;
  }
  // Skips whitespace, then consumes `c` if it is next.
  bool eat(char c) {
    ws();
    if (pos_ < doc_.size() && doc_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  char peek() {
    ws();
    return pos_ < doc_.size() ? doc_[pos_] : '\0';
  }
  [[nodiscard]] Status expect(char c, std::string_view where);
  // A string value: a view into the document, or into `scratch` when it had escapes.
  [[nodiscard]] Result<std::string_view> string(std::string& scratch, std::string_view where);
  [[nodiscard]] Result<int64_t> integer(std::string_view where);
  // Skips any value and returns its raw text.
  [[nodiscard]] Result<std::string_view> skip_value(std::string_view where);
  Error error(std::string_view where, std::string_view expected) const;

 private:
  std::string_view doc_;
  std::string name_;
  size_t pos_ = 0;
};

}  // namespace hfs::tok
