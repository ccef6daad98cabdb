// Duplicate-key search with nlohmann's SAX parser: no DOM is built, one key set per open object.
#include "core/json_duplicate_keys.h"

#include <nlohmann/json.hpp>
#include <unordered_set>

namespace hfs {
namespace {

using Json = nlohmann::json;

class DuplicateFinder : public nlohmann::json_sax<Json> {
 public:
  std::optional<std::vector<std::string>> found;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }

  bool start_object(std::size_t) override {
    scopes_.push_back({true, {}, {}});
    return true;
  }
  bool key(string_t& k) override {
    Scope& s = scopes_.back();
    if (!s.keys.insert(k).second) {
      std::vector<std::string> path;
      for (const Scope& outer : scopes_)
        if (outer.is_object && &outer != &s) path.push_back(outer.current);
      path.push_back(k);
      found = std::move(path);
      return false;  // stop: the first duplicate is reported
    }
    s.current = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    scopes_.push_back({false, {}, {}});
    return true;
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Scope {
    bool is_object;
    std::unordered_set<std::string> keys;
    std::string current;  // the key whose value is being read (objects only)
  };
  bool value() { return true; }
  bool close() {
    scopes_.pop_back();
    return true;
  }
  std::vector<Scope> scopes_;
};

}  // namespace

std::optional<std::vector<std::string>> first_duplicate_key(std::string_view json) {
  DuplicateFinder finder;
  Json::sax_parse(json.begin(), json.end(), &finder, nlohmann::detail::input_format_t::json, /*strict=*/true,
                  /*ignore_comments=*/false);
  return finder.found;
}

}  // namespace hfs
