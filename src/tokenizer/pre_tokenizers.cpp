// Pre-tokenizers (tokenizer.json "pre_tokenizer"): ByteLevel, Split, Metaspace, Digits, Whitespace,
// WhitespaceSplit, Sequence.
#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/components.h"
#include "tokenizer/regex.h"
#include "core/utf8.h"

namespace hfs::tok {
namespace {

// Keeps only the matches of `re` in each piece (JS `text.match(re)`).
void keep_matches(const Regex& re, std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  std::vector<Span> m;
  for (const auto& p : pieces) {
    m.clear();
    re.find_all(p, m);
    for (auto [b, e] : m)
      if (e > b) out.emplace_back(p, b, e - b);
  }
  pieces = std::move(out);
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::shared_ptr<const Regex> re) : add_prefix_space_(add_prefix_space), re_(std::move(re)) {}
  Status pre_tokenize(std::vector<std::string>& pieces, size_t) const override {
    if (add_prefix_space_)
      for (auto& p : pieces)
        if (p.empty() || p[0] != ' ') p.insert(p.begin(), ' ');
    if (re_) keep_matches(*re_, pieces);
    const auto& table = byte_to_char();
    for (auto& p : pieces) {
      std::string mapped;
      mapped.reserve(p.size() * 2);
      for (unsigned char c : p) mapped += table[c];
      p = std::move(mapped);
    }
    return Ok{};
  }

 private:
  bool add_prefix_space_;
  std::shared_ptr<const Regex> re_;
};

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// HF `tokenizers` split semantics: the pattern's matches (and the gaps between) are combined per
// `behavior`; `invert` swaps which spans count as matches. Empty spans are dropped.
void split_spans(std::string_view text, const std::vector<Span>& matches, Behavior behavior, bool invert,
                 std::vector<std::string>& out) {
  std::vector<std::pair<Span, bool>> spans;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) spans.push_back({{prev, b}, false});
    spans.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != text.size()) spans.push_back({{prev, text.size()}, false});
  if (invert)
    for (auto& s : spans) s.second = !s.second;
  std::vector<Span> res;
  switch (behavior) {
    case Behavior::kRemoved:
      for (auto& [sp, m] : spans)
        if (!m) res.push_back(sp);
      break;
    case Behavior::kIsolated:
      for (auto& [sp, m] : spans) res.push_back(sp);
      break;
    case Behavior::kMergedWithPrevious: {
      bool prev_match = false;
      for (auto& [sp, m] : spans) {
        if (m && !prev_match && !res.empty()) res.back().second = sp.second;
        else res.push_back(sp);
        prev_match = m;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool prev_match = false;
      for (size_t k = spans.size(); k-- > 0;) {
        auto& [sp, m] = spans[k];
        if (m && !prev_match && !res.empty()) res.back().first = sp.first;
        else res.push_back(sp);
        prev_match = m;
      }
      std::reverse(res.begin(), res.end());
      break;
    }
    case Behavior::kContiguous: {
      bool prev_match = false;
      for (auto& [sp, m] : spans) {
        if (m == prev_match && !res.empty()) res.back().second = sp.second;
        else res.push_back(sp);
        prev_match = m;
      }
      break;
    }
  }
  for (auto [b, e] : res)
    if (e > b) out.emplace_back(text.substr(b, e - b));
}

class Split final : public PreTokenizer {
 public:
  Split(std::shared_ptr<const Regex> re, Behavior b, bool invert) : re_(std::move(re)), behavior_(b), invert_(invert) {}
  Status pre_tokenize(std::vector<std::string>& pieces, size_t) const override {
    std::vector<std::string> out;
    std::vector<Span> m;
    for (const auto& p : pieces) {
      m.clear();
      if (re_) re_->find_all(p, m);
      split_spans(p, m, behavior_, invert_, out);
    }
    pieces = std::move(out);
    return Ok{};
  }

 private:
  std::shared_ptr<const Regex> re_;  // null: the empty String pattern, which never splits
  Behavior behavior_;
  bool invert_;
};

enum class Prepend { kAlways, kFirst, kNever };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string repl, Prepend scheme, bool split) : repl_(std::move(repl)), scheme_(scheme), split_(split) {}
  Status pre_tokenize(std::vector<std::string>& pieces, size_t section_index) const override {
    std::vector<std::string> out;
    for (auto& p : pieces) {
      std::string s = replace_all(p, " ", repl_);
      bool prepend = scheme_ == Prepend::kAlways || (scheme_ == Prepend::kFirst && section_index == 0);
      if (prepend && s.compare(0, repl_.size(), repl_) != 0) s = repl_ + s;
      if (!split_) {
        out.push_back(std::move(s));
        continue;
      }
      // HF: split on the replacement, each replacement starting a new piece (MergedWithNext).
      size_t start = 0;
      for (size_t pos = s.find(repl_, 1); pos != std::string::npos; pos = s.find(repl_, pos + repl_.size())) {
        if (pos > start) out.push_back(s.substr(start, pos - start));
        start = pos;
      }
      if (start < s.size()) out.push_back(s.substr(start));
    }
    pieces = std::move(out);
    return Ok{};
  }

 private:
  std::string repl_;
  Prepend scheme_;
  bool split_;
};

class MatchOnly final : public PreTokenizer {
 public:
  explicit MatchOnly(std::shared_ptr<const Regex> re) : re_(std::move(re)) {}
  Status pre_tokenize(std::vector<std::string>& pieces, size_t) const override {
    keep_matches(*re_, pieces);
    return Ok{};
  }

 private:
  std::shared_ptr<const Regex> re_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> s) : steps_(std::move(s)) {}
  Status pre_tokenize(std::vector<std::string>& pieces, size_t section_index) const override {
    for (const auto& s : steps_)
      if (s) HFS_TRY(s->pre_tokenize(pieces, section_index));
    return Ok{};
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Result<std::unique_ptr<PreTokenizer>> match_only(const std::string& pattern, const std::string& where) {
  HFS_ASSIGN_OR_RETURN(auto re, Regex::compile(pattern, where));
  return std::unique_ptr<PreTokenizer>(new MatchOnly(re));
}

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& node) {
  if (node.is_null()) return std::unique_ptr<PreTokenizer>();
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
    return config_error("pre_tokenizer", "an object with a string \"type\"", node);
  const std::string& type = node["type"].get_ref<const std::string&>();
  std::string where = "pre_tokenizer " + type;
  const std::string ws = kJsSpaceClass;
  if (type == "ByteLevel") {
    HFS_ASSIGN_OR_RETURN(auto aps, get_bool(node, "add_prefix_space", where, false));
    HFS_ASSIGN_OR_RETURN(auto use_regex, get_bool(node, "use_regex", where, true));
    std::shared_ptr<const Regex> re;
    if (use_regex) {
      // GPT-2's pattern as transformers.js runs it (JS `\s`).
      std::string p = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" + ws + "\\p{L}\\p{N}]+|[" + ws + "]+(?![^" + ws +
                      "])|[" + ws + "]+";
      HFS_ASSIGN_OR_RETURN(auto r, Regex::compile(p, where));
      re = r;
    }
    return std::unique_ptr<PreTokenizer>(new ByteLevel(aps, re));
  }
  if (type == "Split") {
    HFS_ASSIGN_OR_RETURN(auto b, get_string(node, "behavior", where, "Isolated"));
    Behavior beh;
    std::string bl = b;
    for (auto& c : bl) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (bl == "removed") beh = Behavior::kRemoved;
    else if (bl == "isolated") beh = Behavior::kIsolated;
    else if (bl == "mergedwithprevious" || bl == "merged_with_previous") beh = Behavior::kMergedWithPrevious;
    else if (bl == "mergedwithnext" || bl == "merged_with_next") beh = Behavior::kMergedWithNext;
    else if (bl == "contiguous") beh = Behavior::kContiguous;
    else
      return config_error(where + ".behavior",
                          "one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous", node["behavior"]);
    HFS_ASSIGN_OR_RETURN(auto inv, get_bool(node, "invert", where, false));
    const Json& pat = node.contains("pattern") ? node["pattern"] : Json();
    std::shared_ptr<const Regex> re;
    bool empty_string = pat.is_object() && pat.contains("String") && pat["String"] == "";
    if (!empty_string) {
      HFS_ASSIGN_OR_RETURN(auto pcre, pattern_to_pcre(pat, where));
      HFS_ASSIGN_OR_RETURN(auto r, Regex::compile(pcre, where));
      re = r;
    }
    return std::unique_ptr<PreTokenizer>(new Split(re, beh, inv));
  }
  if (type == "Metaspace") {
    HFS_ASSIGN_OR_RETURN(auto repl, get_string(node, "replacement", where, "\xE2\x96\x81"));
    if (repl.empty()) return config_error(where + ".replacement", "a non-empty string", node["replacement"]);
    Prepend scheme = Prepend::kAlways;
    if (node.contains("prepend_scheme") && !node["prepend_scheme"].is_null()) {
      HFS_ASSIGN_OR_RETURN(auto s, get_string(node, "prepend_scheme", where, "always"));
      if (s == "always") scheme = Prepend::kAlways;
      else if (s == "first") scheme = Prepend::kFirst;
      else if (s == "never") scheme = Prepend::kNever;
      else return config_error(where + ".prepend_scheme", "one of always, first, never", node["prepend_scheme"]);
    } else if (node.contains("add_prefix_space")) {  // older files
      HFS_ASSIGN_OR_RETURN(auto a, get_bool(node, "add_prefix_space", where, true));
      scheme = a ? Prepend::kAlways : Prepend::kNever;
    }
    HFS_ASSIGN_OR_RETURN(auto split, get_bool(node, "split", where, true));
    return std::unique_ptr<PreTokenizer>(new Metaspace(repl, scheme, split));
  }
  if (type == "Digits") {
    HFS_ASSIGN_OR_RETURN(auto ind, get_bool(node, "individual_digits", where, false));
    return match_only(ind ? "[^0-9]+|[0-9]" : "[^0-9]+|[0-9]+", where);
  }
  if (type == "Whitespace") return match_only("[A-Za-z0-9_]+|[^A-Za-z0-9_" + ws + "]+", where);
  if (type == "WhitespaceSplit") return match_only("[^" + ws + "]+", where);
  if (type == "Sequence") {
    if (!node.contains("pretokenizers") || !node["pretokenizers"].is_array())
      return config_error(where + ".pretokenizers", "an array", node.value("pretokenizers", Json()));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& n : node["pretokenizers"]) {
      HFS_ASSIGN_OR_RETURN(auto s, make_pre_tokenizer(n));
      steps.push_back(std::move(s));
    }
    return std::unique_ptr<PreTokenizer>(new Sequence(std::move(steps)));
  }
  return make_error(ErrorCode::kUnsupported, "tokenizer: pre_tokenizer type '" + type +
                                                 "' is not supported (supported: ByteLevel, Split, Metaspace, Digits, "
                                                 "Whitespace, WhitespaceSplit, Sequence)");
}

}  // namespace hfs::tok
