// Decoders (tokenizer.json "decoder"): ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace,
// BPEDecoder, Sequence. Each maps the token strings to text pieces that are finally concatenated.
#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/components.h"
#include "tokenizer/regex.h"
#include "core/utf8.h"

namespace hfs::tok {
namespace {

class ByteLevel final : public Decoder {
 public:
  explicit ByteLevel(const std::vector<std::string>* added) : added_(added) {}
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    auto flush = [&] {
      if (!bytes.empty()) out.push_back(decode_utf8_lossy(bytes));
      bytes.clear();
    };
    for (const auto& t : tokens) {
      if (added_ && std::binary_search(added_->begin(), added_->end(), t)) {  // added tokens stay as written
        flush();
        out.push_back(t);
        continue;
      }
      for (size_t i = 0; i < t.size();) {
        int b = char_to_byte(next_cp(t, i));
        bytes.push_back(static_cast<char>(b < 0 ? 0 : b));  // not a stand-in: a 0 byte, as transformers.js
      }
    }
    flush();
    tokens = std::move(out);
    return Ok{};
  }
  void piece(std::string& t) const override {
    if (added_ && std::binary_search(added_->begin(), added_->end(), t)) return;
    std::string bytes;
    for (size_t i = 0; i < t.size();) {
      int b = char_to_byte(next_cp(t, i));
      bytes.push_back(static_cast<char>(b < 0 ? 0 : b));
    }
    t = std::move(bytes);
  }

 private:
  const std::vector<std::string>* added_;
};

class Metaspace final : public Decoder {
 public:
  explicit Metaspace(std::string repl) : repl_(std::move(repl)) {}
  Status decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], repl_, " ");
      if (i == 0 && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
    }
    return Ok{};
  }
  void piece(std::string& t) const override { t = replace_all(t, repl_, " "); }

 private:
  std::string repl_;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class ByteFallback final : public Decoder {
 public:
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    auto flush = [&] {
      if (!bytes.empty()) out.push_back(decode_utf8_lossy(bytes, /*strip_bom=*/true));
      bytes.clear();
    };
    for (auto& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        // parseInt(hex, 16) semantics: the leading hex digits count.
        int d0 = hex_digit(t[3]), d1 = hex_digit(t[4]);
        if (d0 >= 0) byte = d1 >= 0 ? d0 * 16 + d1 : d0;
      }
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
    return Ok{};
  }
  void piece(std::string& t) const override {
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
      int d0 = hex_digit(t[3]), d1 = hex_digit(t[4]);
      if (d0 >= 0) t = std::string(1, static_cast<char>(d1 >= 0 ? d0 * 16 + d1 : d0));
    }
  }
};

class Fuse final : public Decoder {
 public:
  Status decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
    return Ok{};
  }
};

// Removes up to `start` leading and `stop` trailing copies of the one-character `content`.
class Strip final : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  Status decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return Ok{};
    for (auto& t : tokens) {
      std::string_view v = t;
      for (size_t i = 0; i < start_ && v.substr(0, content_.size()) == content_; ++i) v.remove_prefix(content_.size());
      for (size_t i = 0; i < stop_ && v.size() >= content_.size() && v.substr(v.size() - content_.size()) == content_; ++i)
        v.remove_suffix(content_.size());
      t = std::string(v);
    }
    return Ok{};
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class Replace final : public Decoder {
 public:
  Replace(std::string literal, std::shared_ptr<const Regex> re, std::string content)
      : literal_(std::move(literal)), re_(std::move(re)), content_(std::move(content)) {}
  Status decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      if (!re_) {
        if (!literal_.empty()) t = replace_all(t, literal_, content_);
        continue;
      }
      std::vector<Span> m;
      re_->find_all(t, m);
      std::string out;
      size_t prev = 0;
      for (auto [b, e] : m) {
        out.append(t, prev, b - prev);
        out += content_;
        prev = e;
      }
      out.append(t, prev);
      t = std::move(out);
    }
    return Ok{};
  }
  void piece(std::string& t) const override {
    std::vector<std::string> one(1, std::move(t));
    (void)decode_chain(one);  // never fails
    t = std::move(one[0]);
  }

 private:
  std::string literal_;
  std::shared_ptr<const Regex> re_;
  std::string content_;
};

class BpeSuffix final : public Decoder {
 public:
  explicit BpeSuffix(std::string suffix) : suffix_(std::move(suffix)) {}
  Status decode_chain(std::vector<std::string>& tokens) const override {
    if (suffix_.empty()) return Ok{};
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    return Ok{};
  }
  void piece(std::string& t) const override {
    if (!suffix_.empty()) t = replace_all(t, suffix_, " ");
  }

 private:
  std::string suffix_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> s) : steps_(std::move(s)) {}
  Status decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& s : steps_)
      if (s) HFS_TRY(s->decode_chain(tokens));
    return Ok{};
  }
  void piece(std::string& t) const override {
    for (const auto& s : steps_)
      if (s) s->piece(t);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

Result<size_t> get_count(const Json& node, const char* key, const std::string& where) {
  if (!node.contains(key) || node[key].is_null()) return size_t{0};
  if (!node[key].is_number_unsigned() && !(node[key].is_number_integer() && node[key].get<int64_t>() >= 0))
    return config_error(where + "." + key, "a non-negative integer", node[key]);
  return node[key].get<size_t>();
}

}  // namespace

Result<std::unique_ptr<Decoder>> make_decoder(const Json& node, const DecoderContext& ctx) {
  if (node.is_null()) return std::unique_ptr<Decoder>();
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
    return config_error("decoder", "an object with a string \"type\"", node);
  const std::string& type = node["type"].get_ref<const std::string&>();
  std::string where = "decoder " + type;
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(new ByteLevel(ctx.added_token_contents));
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(new ByteFallback());
  if (type == "Fuse") return std::unique_ptr<Decoder>(new Fuse());
  if (type == "Metaspace") {
    HFS_ASSIGN_OR_RETURN(auto repl, get_string(node, "replacement", where, "\xE2\x96\x81"));
    return std::unique_ptr<Decoder>(new Metaspace(repl));
  }
  if (type == "Strip") {
    HFS_ASSIGN_OR_RETURN(auto content, get_string(node, "content", where, ""));
    HFS_ASSIGN_OR_RETURN(auto start, get_count(node, "start", where));
    HFS_ASSIGN_OR_RETURN(auto stop, get_count(node, "stop", where));
    return std::unique_ptr<Decoder>(new Strip(content, start, stop));
  }
  if (type == "Replace") {
    HFS_ASSIGN_OR_RETURN(auto content, get_string(node, "content", where, ""));
    const Json& pat = node.contains("pattern") ? node["pattern"] : Json();
    if (pat.is_object() && pat.contains("String") && pat["String"].is_string())
      return std::unique_ptr<Decoder>(new Replace(pat["String"].get<std::string>(), nullptr, content));
    HFS_ASSIGN_OR_RETURN(auto pcre, pattern_to_pcre(pat, where));
    HFS_ASSIGN_OR_RETURN(auto re, Regex::compile(pcre, where));
    return std::unique_ptr<Decoder>(new Replace("", re, content));
  }
  if (type == "BPEDecoder") {
    HFS_ASSIGN_OR_RETURN(auto suffix, get_string(node, "suffix", where, "</w>"));
    return std::unique_ptr<Decoder>(new BpeSuffix(suffix));
  }
  if (type == "Sequence") {
    if (!node.contains("decoders") || !node["decoders"].is_array())
      return config_error(where + ".decoders", "an array", node.value("decoders", Json()));
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const auto& n : node["decoders"]) {
      HFS_ASSIGN_OR_RETURN(auto s, make_decoder(n, ctx));
      steps.push_back(std::move(s));
    }
    return std::unique_ptr<Decoder>(new Sequence(std::move(steps)));
  }
  return make_error(ErrorCode::kUnsupported, "tokenizer: decoder type '" + type +
                                                 "' is not supported (supported: ByteLevel, Metaspace, ByteFallback, "
                                                 "Fuse, Strip, Replace, BPEDecoder, Sequence)");
}

}  // namespace hfs::tok
