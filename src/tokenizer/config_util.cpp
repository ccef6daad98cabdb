#include "tokenizer/components.h"
#include "tokenizer/regex.h"

namespace hfs::tok {

Error config_error(std::string_view where, std::string_view expected, const Json& got) {
  std::string g = got.dump();
  if (g.size() > 120) g = g.substr(0, 117) + "...";
  return make_error(ErrorCode::kTokenizer,
                    "tokenizer: " + std::string(where) + ": expected " + std::string(expected) + ", got " + g);
}

Result<std::string> get_string(const Json& node, std::string_view key, std::string_view where, std::string fallback,
                               bool required) {
  auto it = node.find(std::string(key));
  if (it == node.end() || it->is_null()) {
    if (required) return config_error(std::string(where) + "." + std::string(key), "a string", nullptr);
    return fallback;
  }
  if (!it->is_string()) return config_error(std::string(where) + "." + std::string(key), "a string", *it);
  return it->get<std::string>();
}

Result<bool> get_bool(const Json& node, std::string_view key, std::string_view where, bool fallback) {
  auto it = node.find(std::string(key));
  if (it == node.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return config_error(std::string(where) + "." + std::string(key), "a boolean", *it);
  return it->get<bool>();
}

Result<std::string> pattern_to_pcre(const Json& node, std::string_view where) {
  std::string w = std::string(where) + ".pattern";
  if (!node.is_object()) return config_error(w, "{\"Regex\": ...} or {\"String\": ...}", node);
  if (auto it = node.find("Regex"); it != node.end()) {
    if (!it->is_string()) return config_error(w + ".Regex", "a string", *it);
    return translate_hf_regex(it->get_ref<const std::string&>(), w);
  }
  if (auto it = node.find("String"); it != node.end()) {
    if (!it->is_string()) return config_error(w + ".String", "a string", *it);
    return escape_literal(it->get_ref<const std::string&>());
  }
  return config_error(w, "{\"Regex\": ...} or {\"String\": ...}", node);
}

}  // namespace hfs::tok
