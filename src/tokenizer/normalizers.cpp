// Normalizers (tokenizer.json "normalizer"): NFC/NFD/NFKC/NFKD, Prepend, Replace, Lowercase, Strip,
// StripAccents, Sequence.
#include "tokenizer/components.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "core/utf8.h"

namespace hfs::tok {
namespace {

class UnicodeNorm final : public Normalizer {
 public:
  explicit UnicodeNorm(NormForm f) : form_(f) {}
  Result<std::string> normalize(std::string text) const override { return unicode_normalize(text, form_); }

 private:
  NormForm form_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  Result<std::string> normalize(std::string text) const override { return prepend_ + text; }

 private:
  std::string prepend_;
};

// Replaces every match of the pattern by `content` (a literal pattern uses plain substring search).
class Replace final : public Normalizer {
 public:
  Replace(std::string literal, std::shared_ptr<const Regex> re, std::string content)
      : literal_(std::move(literal)), re_(std::move(re)), content_(std::move(content)) {}
  Result<std::string> normalize(std::string text) const override {
    if (!re_) return literal_.empty() ? text : replace_all(text, literal_, content_);
    std::vector<Span> m;
    re_->find_all(text, m);
    std::string out;
    size_t prev = 0;
    for (auto [b, e] : m) {
      out.append(text, prev, b - prev);
      out += content_;
      prev = e;
    }
    out.append(text, prev);
    return out;
  }

 private:
  std::string literal_;
  std::shared_ptr<const Regex> re_;
  std::string content_;
};

class Lowercase final : public Normalizer {
 public:
  Result<std::string> normalize(std::string text) const override { return unicode_lowercase(text); }
};

class StripAccents final : public Normalizer {
 public:
  Result<std::string> normalize(std::string text) const override { return remove_marks(text); }
};

class Strip final : public Normalizer {
 public:
  Strip(bool l, bool r) : left_(l), right_(r) {}
  Result<std::string> normalize(std::string text) const override {
    std::string_view v = text;
    if (left_) v = js_trim_start(v);
    if (right_) v = js_trim_end(v);
    return std::string(v);
  }

 private:
  bool left_, right_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> s) : steps_(std::move(s)) {}
  Result<std::string> normalize(std::string text) const override {
    for (const auto& s : steps_) {
      if (!s) continue;
      HFS_ASSIGN_OR_RETURN(auto r, s->normalize(std::move(text)));
      text = std::move(r);
    }
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& node) {
  if (node.is_null()) return std::unique_ptr<Normalizer>();
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
    return config_error("normalizer", "an object with a string \"type\"", node);
  const std::string& type = node["type"].get_ref<const std::string&>();
  std::string where = "normalizer " + type;
  if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeNorm(NormForm::kNFC));
  if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeNorm(NormForm::kNFD));
  if (type == "NFKC") return std::unique_ptr<Normalizer>(new UnicodeNorm(NormForm::kNFKC));
  if (type == "NFKD") return std::unique_ptr<Normalizer>(new UnicodeNorm(NormForm::kNFKD));
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new Lowercase());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccents());
  if (type == "Prepend") {
    HFS_ASSIGN_OR_RETURN(auto p, get_string(node, "prepend", where, "", true));
    return std::unique_ptr<Normalizer>(new Prepend(p));
  }
  if (type == "Strip") {
    HFS_ASSIGN_OR_RETURN(auto l, get_bool(node, "strip_left", where, false));
    HFS_ASSIGN_OR_RETURN(auto r, get_bool(node, "strip_right", where, false));
    return std::unique_ptr<Normalizer>(new Strip(l, r));
  }
  if (type == "Replace") {
    HFS_ASSIGN_OR_RETURN(auto content, get_string(node, "content", where, ""));
    const Json& pat = node.contains("pattern") ? node["pattern"] : Json();
    if (pat.is_object() && pat.contains("String") && pat["String"].is_string())
      return std::unique_ptr<Normalizer>(new Replace(pat["String"].get<std::string>(), nullptr, content));
    HFS_ASSIGN_OR_RETURN(auto pcre, pattern_to_pcre(pat, where));
    HFS_ASSIGN_OR_RETURN(auto re, Regex::compile(pcre, where));
    return std::unique_ptr<Normalizer>(new Replace("", re, content));
  }
  if (type == "Sequence") {
    if (!node.contains("normalizers") || !node["normalizers"].is_array())
      return config_error(where + ".normalizers", "an array", node.value("normalizers", Json()));
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& n : node["normalizers"]) {
      HFS_ASSIGN_OR_RETURN(auto s, make_normalizer(n));
      steps.push_back(std::move(s));
    }
    return std::unique_ptr<Normalizer>(new Sequence(std::move(steps)));
  }
  return make_error(ErrorCode::kUnsupported, "tokenizer: normalizer type '" + type +
                                                 "' is not supported (supported: NFC, NFD, NFKC, NFKD, Prepend, "
                                                 "Replace, Lowercase, Strip, StripAccents, Sequence)");
}

}  // namespace hfs::tok
