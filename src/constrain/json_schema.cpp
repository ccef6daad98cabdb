#include "constrain/json_schema.h"

#include "constrain/json_number_range.h"
#include "constrain/json_pattern.h"
#include "core/json_depth.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace hfs {
namespace {

// Ordered: objects keep the schema's property order, which is the order generation follows.
using json = nlohmann::ordered_json;

// The building blocks, each a GBNF rule, with the blocks it uses. Every value rule ends in `ws`, so the
// structure around values adds whitespace only after "{", "[", ":" and ",".
struct Primitive {
  const char* name;
  const char* body;
  std::vector<const char*> uses;
};
const std::vector<Primitive>& primitives() {
  static const std::vector<Primitive> p = {
      {"ws", R"((" " | "\n" [ \t]{0,20})?)", {}},
      {"boolean", R"(("true" | "false") ws)", {"ws"}},
      {"null", R"("null" ws)", {"ws"}},
      {"integer", R"("-"? ("0" | [1-9] [0-9]{0,15}) ws)", {"ws"}},
      {"number", R"("-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? ws)", {"ws"}},
      {"char", R"([^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))", {}},
      {"string", R"("\"" char* "\"" ws)", {"char", "ws"}},
      {"value", R"(object | array | string | number | boolean | null)",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object", R"("{" ws (string ":" ws value ("," ws string ":" ws value)*)? "}" ws)", {"string", "value", "ws"}},
      {"array", R"("[" ws (value ("," ws value)*)? "]" ws)", {"value", "ws"}},
      // Days stop at 28: a grammar cannot know each month's length, and every document must validate.
      {"date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | "1" [0-9] | "2" [0-8]))", {}},
      {"time", R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))", {}},
      {"uuid", R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})", {}},
      // Network formats: sound subsets (every string is valid by RFC 1123/5321/3986/4291 and ajv-formats),
      // short enough that no length limit (253 for a host name, 64 for a mailbox's local part) is reached.
      {"dec-octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9])", {}},
      {"ipv4", R"(dec-octet "." dec-octet "." dec-octet "." dec-octet)", {"dec-octet"}},
      {"ipv6", R"([0-9a-f]{1,4} (":" [0-9a-f]{1,4}){7})", {}},
      {"label", R"([a-z0-9] ([a-z0-9-]{0,18} [a-z0-9])?)", {}},
      {"hostname", R"(label ("." label){0,4})", {"label"}},
      {"email", R"([a-zA-Z0-9_+-]{1,20} ("." [a-zA-Z0-9_+-]{1,20}){0,2} "@" label ("." label){1,3})", {"label"}},
      {"uri", R"(("http" | "https") "://" hostname ("/" [a-zA-Z0-9._~-]{1,20}){0,4})", {"hostname"}},
  };
  return p;
}

// Keywords that describe and never constrain.
const std::set<std::string>& annotations() {
  static const std::set<std::string> s = {"title",      "description", "default",  "examples", "$schema", "$id",
                                          "$comment",   "deprecated",  "readOnly", "writeOnly", "$defs",  "definitions"};
  return s;
}
const std::set<std::string>& supported() {
  static const std::set<std::string> s = {"type",      "properties", "required", "additionalProperties", "enum",
                                          "const",     "items",      "prefixItems", "minItems",          "maxItems",
                                          "anyOf",     "oneOf",      "$ref",     "minLength",            "maxLength",
                                          "format",    "pattern",    "minimum",  "maximum",            "exclusiveMinimum",
                                          "exclusiveMaximum",        "multipleOf", "allOf",    "uniqueItems"};
  return s;
}

// Whether JSON value `v` is of `type` (a type name or a list of them), as JSON Schema defines the names:
// an integer is a number with no fractional part, 1.0 included.
bool value_has_type(const json& v, const json& type) {
  if (type.is_array())
    return std::any_of(type.begin(), type.end(), [&](const json& t) { return value_has_type(v, t); });
  if (!type.is_string()) return false;
  const std::string t = type.get<std::string>();
  if (t == "integer")
    return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  return (t == "number" && v.is_number()) || (t == "string" && v.is_string()) || (t == "boolean" && v.is_boolean()) ||
         (t == "null" && v.is_null()) || (t == "object" && v.is_object()) || (t == "array" && v.is_array());
}

// A rule name from a schema path: GBNF names are letters, digits and '-'.
std::string rule_name(std::string_view hint) {
  std::string out;
  for (const char c : hint) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (word) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "r" : out;
}

// A JSON pointer token: '~' and '/' escaped.
std::string pointer_token(std::string_view s) {
  std::string out;
  for (const char c : s) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// "{m,n}" for GBNF repetition; n < 0: unbounded.
std::string repeat(int64_t m, int64_t n) {
  if (n < 0) return "{" + std::to_string(m) + ",}";
  if (m == n) return "{" + std::to_string(m) + "}";
  return "{" + std::to_string(m) + "," + std::to_string(n) + "}";
}

class Converter {
 public:
  Converter(const json& root, const cst::Budget& budget) : root_(root), budget_(budget) {}

  Result<std::string> run() {
    rules_.emplace_back("root", "");
    names_.insert("root");
    HFS_ASSIGN_OR_RETURN(std::string body, visit(root_, "", "root"));
    rules_[0].second = std::move(body);
    std::set<std::string> emitted;
    std::vector<std::string> pending(used_.begin(), used_.end());
    while (!pending.empty()) {  // what the used primitives use in turn
      const std::string n = pending.back();
      pending.pop_back();
      if (!emitted.insert(n).second) continue;
      for (const char* u : primitive(n).uses) pending.emplace_back(u);
    }
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    for (const Primitive& p : primitives())
      if (emitted.count(p.name)) out += std::string(p.name) + " ::= " + p.body + "\n";
    return out;
  }

 private:
  static const Primitive& primitive(const std::string& name) {
    for (const Primitive& p : primitives())
      if (name == p.name) return p;
    return primitives()[0];
  }
  std::string use(const char* name) {
    used_.insert(name);
    return name;
  }

  Error error(const std::string& path, const std::string& what) const {
    return Error(ErrorCode::kInvalidArgument, "json schema: " + (path.empty() ? std::string("/") : path) + ": " + what);
  }

  // A new rule named after `hint` (made unique); an identical body already defined is reused.
  std::string define(const std::string& hint, std::string body) {
    if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
    const std::string name = reserve(hint);
    by_body_[body] = name;
    rules_.back().second = std::move(body);
    return name;
  }
  // A rule named after `hint`, its body set later (a $ref's target, which may refer to itself).
  std::string reserve(const std::string& hint) {
    const std::string base = rule_name(hint);
    std::string name = base;
    for (int i = 2; names_.count(name); ++i) name = base + "-" + std::to_string(i);
    names_.insert(name);
    rules_.emplace_back(name, "");
    return name;
  }

  Result<int64_t> count(const json& s, const char* key, const std::string& path, int64_t dflt) const {
    if (!s.contains(key)) return dflt;
    const json& v = s.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      return error(path, std::string("\"") + key + "\" must be a non-negative integer, got " + v.dump());
    return v.get<int64_t>();
  }

  // An expression matching exactly the documents of schema `s` (at `path`); `hint` names its rules.
  Result<std::string> visit(const json& s, const std::string& path, const std::string& hint) {
    // Subschemas (and $ref chains) recurse: bounded before the next level, and the clock checked per schema.
    struct Level {
      int64_t& d;
      explicit Level(int64_t& depth) : d(++depth) {}
      ~Level() { --d; }
    } level(depth_);
    if (budget_.too_deep(depth_)) return budget_.depth_error("json schema: " + (path.empty() ? std::string("/") : path));
    if (budget_.over_time()) return budget_.time_error("json schema: " + (path.empty() ? std::string("/") : path));
    HFS_ASSIGN_OR_RETURN(std::string body, visit_schema(s, path, hint));
    // A parent may write a subschema's expression twice (an array's first and later items, an object's
    // value in two rules): inlined, nested arrays would double the text per level (30 levels: gigabytes).
    // A long expression is named once instead, and the grammar stays linear in the schema.
    if (body.size() > 160) return define(hint, std::move(body));
    return body;
  }

  Result<std::string> visit_schema(const json& s, const std::string& path, const std::string& hint) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return use("value");
      return error(path, "the schema false accepts no document");
    }
    if (!s.is_object()) return error(path, "a schema must be an object or a boolean, got " + s.dump());
    for (const auto& [key, v] : s.items())
      if (!annotations().count(key) && !supported().count(key))
        return error(path, "unsupported keyword \"" + key + "\"");
    auto constraining = [&](std::initializer_list<const char*> except) {
      for (const auto& item : s.items()) {
        const std::string& key = item.key();
        if (!annotations().count(key) && std::none_of(except.begin(), except.end(), [&](const char* e) { return key == e; }))
          return key;
      }
      return std::string();
    };
    if (s.contains("allOf")) {
      HFS_ASSIGN_OR_RETURN(json merged, merge_all_of(s, path));
      return visit_schema(merged, path, hint);
    }
    if (s.contains("$ref")) {
      if (const std::string other = constraining({"$ref"}); !other.empty())
        return error(path, "\"$ref\" beside \"" + other + "\" is not supported (put the constraint in the referenced schema)");
      return ref(s.at("$ref"), path);
    }
    // const/enum list the documents themselves: a sibling keyword would have to filter that list, so
    // anything but a "type" every value satisfies is refused rather than silently dropped.
    for (const char* key : {"const", "enum"})
      if (s.contains(key)) {
        if (const std::string other = constraining({key, "type"}); !other.empty())
          return error(path, std::string("\"") + other + "\" beside \"" + key +
                                 "\" is not supported (list only values that satisfy it)");
        const json values = std::string(key) == "const" ? json::array({s.at(key)}) : s.at(key);
        if (!values.is_array() || values.empty())
          return error(path, "\"enum\" must be a non-empty array, got " + values.dump());
        std::string alts;
        for (const json& v : values) {
          if (s.contains("type") && !value_has_type(v, s.at("type")))
            return error(path, std::string("\"") + key + "\" value " + v.dump() + " is not of \"type\" " +
                                   s.at("type").dump() + " (no document could be both)");
          alts += (alts.empty() ? "" : " | ") + gbnf_literal(v.dump());
        }
        return "(" + alts + ") " + use("ws");
      }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) {
        if (const std::string other = constraining({key}); !other.empty())
          return error(path, std::string("\"") + key + "\" beside \"" + other + "\" is not supported (move it into each branch)");
        const json& branches = s.at(key);
        if (!branches.is_array() || branches.empty())
          return error(path, std::string("\"") + key + "\" must be a non-empty array of schemas");
        std::string alts;
        for (size_t i = 0; i < branches.size(); ++i) {
          HFS_ASSIGN_OR_RETURN(std::string b, visit(branches[i], path + "/" + key + "/" + std::to_string(i),
                                                      hint + "-" + std::to_string(i)));
          alts += (alts.empty() ? "" : " | ") + b;
        }
        return "(" + alts + ")";
      }
    if (!s.contains("type")) return typed(s, inferred_type(s), path, hint);
    const json& t = s.at("type");
    if (t.is_string()) return typed(s, t.get<std::string>(), path, hint);
    if (!t.is_array() || t.empty()) return error(path, "\"type\" must be a string or a non-empty array, got " + t.dump());
    std::string alts;
    for (const json& one : t) {
      if (!one.is_string()) return error(path, "\"type\" entries must be strings, got " + one.dump());
      HFS_ASSIGN_OR_RETURN(std::string b, typed(s, one.get<std::string>(), path, hint + "-" + one.get<std::string>()));
      alts += (alts.empty() ? "" : " | ") + b;
    }
    return "(" + alts + ")";
  }

  // allOf as one schema: the branches' keywords side by side. Keywords that meet merge where the result is
  // their intersection (required: union; properties: merged, a property in two branches only with the same
  // schema; anything else only with the same value); another meeting is an error naming the keyword.
  Result<json> merge_all_of(const json& s, const std::string& path) const {
    const json& branches = s.at("allOf");
    if (!branches.is_array() || branches.empty())
      return error(path, "\"allOf\" must be a non-empty array of schemas");
    json merged = json::object();
    // Where each keyword came from: additionalProperties sees only its own schema's properties, items only its
    // own prefixItems, so such pairs merge only from one place (else the merge would accept more than allOf).
    std::map<std::string, std::string> from;
    for (const auto& [k, v] : s.items())
      if (k != "allOf") merged[k] = v, from[k] = path.empty() ? "/" : path;
    for (size_t i = 0; i < branches.size(); ++i) {
      const json& b = branches[i];
      const std::string where = path + "/allOf/" + std::to_string(i);
      if (b.is_boolean() && b.get<bool>()) continue;
      if (!b.is_object()) return error(where, "an \"allOf\" branch must be an object (or true) to be merged");
      for (const auto& [k, v] : b.items()) {
        if (annotations().count(k)) continue;
        if (!merged.contains(k)) {
          merged[k] = v;
          from[k] = where;
        } else if (k == "required" && v.is_array() && merged[k].is_array()) {
          for (const json& r : v)
            if (std::find(merged[k].begin(), merged[k].end(), r) == merged[k].end()) merged[k].push_back(r);
        } else if (k == "properties" && v.is_object() && merged[k].is_object()) {
          for (const auto& [name, sub] : v.items()) {
            if (!merged[k].contains(name)) merged[k][name] = sub;
            else if (merged[k][name] != sub)
              return error(where, "\"allOf\": property \"" + name + "\" in two branches with different schemas is not supported");
          }
        } else if (merged[k] != v) {
          return error(where, "\"allOf\": \"" + k + "\" in two branches with different values is not supported");
        }
      }
    }
    for (const auto& [a, b] : {std::pair<const char*, const char*>{"additionalProperties", "properties"},
                               {"items", "prefixItems"}})
      if (from.count(a) && from.count(b) && from[a] != from[b])
        return error(path, std::string("\"allOf\": \"") + a + "\" (at " + from[a] + ") and \"" + b + "\" (at " + from[b] +
                               ") in different schemas are not supported: " + a + " sees only its own schema's " + b);
    return merged;
  }

  static std::string inferred_type(const json& s) {
    for (const char* k : {"properties", "required", "additionalProperties"})
      if (s.contains(k)) return "object";
    for (const char* k : {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"})
      if (s.contains(k)) return "array";
    for (const char* k : {"minLength", "maxLength", "format", "pattern"})
      if (s.contains(k)) return "string";
    // Numeric keywords alone: numbers that satisfy them (JSON Schema would let other types through too).
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
      if (s.contains(k)) return "number";
    return "";
  }

  Result<std::string> typed(const json& s, const std::string& type, const std::string& path, const std::string& hint) {
    if (type.empty()) return use("value");
    if (type == "object") return object(s, path, hint);
    if (type == "array") return array(s, path, hint);
    if (type == "string") return string(s, path, hint);
    if (type == "integer") return integer(s, path, hint);
    if (type == "number") return number(s, path);
    if (type == "boolean" || type == "null") return use(primitive(type).name);
    return error(path, "unknown type \"" + type + "\" (object, array, string, number, integer, boolean, null)");
  }

  static bool has_bounds(const json& s) {
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (s.contains(k)) return true;
    return false;
  }

  // The integer bounds [lo, hi] of `s` (inclusive), within what the integer rule writes (±kMaxJsonInteger).
  Result<std::pair<int64_t, int64_t>> integer_bounds(const json& s, const std::string& path) const {
    int64_t lo = -kMaxJsonInteger, hi = kMaxJsonInteger;
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      if (!s.contains(key)) continue;
      const json& v = s.at(key);
      const std::string k = key;
      if (v.is_boolean())
        return error(path, "\"" + k + "\" as a boolean (draft 4) is not supported: give the bound as a number");
      if (!v.is_number()) return error(path, "\"" + k + "\" must be a number, got " + v.dump());
      const bool lower = k == "minimum" || k == "exclusiveMinimum", exclusive = k.rfind("exclusive", 0) == 0;
      // The nearest integer inside the bound, clamped to the integers the rule writes.
      double b = v.get<double>();
      int64_t n;
      if (v.is_number_integer()) {
        const int64_t raw = v.is_number_unsigned() ? (v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v.get<uint64_t>()))
                                                   : v.get<int64_t>();
        n = std::clamp<int64_t>(raw, -kMaxJsonInteger - 1, kMaxJsonInteger + 1);
        if (exclusive) n += lower ? 1 : -1;
      } else {
        b = std::clamp(b, -1e17, 1e17);
        if (lower) n = static_cast<int64_t>(exclusive ? std::floor(b) + 1 : std::ceil(b));
        else n = static_cast<int64_t>(exclusive ? std::ceil(b) - 1 : std::floor(b));
      }
      if (lower) lo = std::max(lo, n);
      else hi = std::min(hi, n);
    }
    if (lo > hi)
      return error(path, "no integer of at most 16 digits satisfies the bounds (minimum " + std::to_string(lo) +
                             ", maximum " + std::to_string(hi) + ")");
    return std::make_pair(lo, hi);
  }

  Result<std::string> integer(const json& s, const std::string& path, const std::string& hint) {
    if (s.contains("multipleOf")) {
      if (has_bounds(s))
        return error(path, "\"multipleOf\" together with minimum/maximum is not supported (give one or the other)");
      return multiple_of(s.at("multipleOf"), path, hint);
    }
    if (!has_bounds(s)) return use("integer");
    HFS_ASSIGN_OR_RETURN(auto b, integer_bounds(s, path));
    return integer_range_gbnf(b.first, b.second) + " " + use("ws");
  }

  // The multiples of k with at most 15 digits (below 2^53, so that validators reading numbers as doubles agree):
  // a remainder automaton over the digits, one rule per (remainder, digits so far).
  Result<std::string> multiple_of(const json& m, const std::string& path, const std::string& hint) {
    constexpr int kDigits = 15;
    if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > 100)
      return error(path, "\"multipleOf\" " + m.dump() + " is not supported: an integer in [1, 100] on an integer is");
    const int64_t k = m.get<int64_t>();
    // live[len][r]: after `len` digits with remainder r, some continuation (within kDigits) ends on 0.
    std::vector<std::vector<char>> live(kDigits + 1, std::vector<char>(static_cast<size_t>(k), 0));
    live[kDigits][0] = 1;
    for (int len = kDigits - 1; len >= 1; --len)
      for (int64_t r = 0; r < k; ++r) {
        bool any = r == 0;
        for (int d = 0; d <= 9 && !any; ++d) any = live[len + 1][static_cast<size_t>((r * 10 + d) % k)];
        live[len][static_cast<size_t>(r)] = any;
      }
    // names[len][r]: the rest after `len` digits with remainder r (len 1..kDigits-1, live states only).
    std::vector<std::vector<std::string>> names(kDigits, std::vector<std::string>(static_cast<size_t>(k)));
    for (int len = 1; len < kDigits; ++len)
      for (int64_t r = 0; r < k; ++r)
        if (live[len][static_cast<size_t>(r)])
          names[len][static_cast<size_t>(r)] = reserve(hint + "-mod" + std::to_string(r) + "-" + std::to_string(len));
    // Alternatives after `len` digits with remainder r, over digits [from, to], into live states.
    auto next = [&](int len, int64_t r, int from, int to) {
      std::map<int64_t, std::string> by_target;
      for (int d = from; d <= to; ++d) by_target[(r * 10 + d) % k] += static_cast<char>('0' + d);
      std::string alts;
      for (const auto& [t, digits] : by_target) {
        if (!live[len + 1][static_cast<size_t>(t)]) continue;
        const bool last = len + 1 == kDigits;
        alts += (alts.empty() ? "" : " | ") + ("[" + digits + "]" + (last ? "" : " " + names[len + 1][static_cast<size_t>(t)]));
      }
      return alts;
    };
    for (int len = 1; len < kDigits; ++len)
      for (int64_t r = 0; r < k; ++r) {
        if (!live[len][static_cast<size_t>(r)]) continue;
        const std::string alts = next(len, r, 0, 9);  // non-empty: the state is live (r = 0 may also end)
        const std::string body = "(" + alts + ")" + (r == 0 ? "?" : "");
        for (auto& [n, b] : rules_)
          if (n == names[len][static_cast<size_t>(r)]) b = body;
      }
    return "\"-\"? (\"0\" | " + next(0, 0, 1, 9) + ") " + use("ws");
  }

  // Numbers within the bounds, written without an exponent (decimal_range_gbnf). An inclusive bound is its
  // integer exactly, or the shortest decimal that reads back as its double: the parser keeps no number's
  // source text, and for up to 15 significant digits the two agree. An exclusive bound becomes the inclusive
  // one that also holds once the number is read as a double, as validators read it (exclusive_as_inclusive:
  // 2.2499999999999999 is below 2.25 but reads as 2.25).
  Result<std::string> number(const json& s, const std::string& path) {
    if (s.contains("multipleOf"))
      return error(path, "\"multipleOf\" on a number is not supported (on an integer it is)");
    if (!has_bounds(s)) return use("number");
    std::optional<Decimal> lo, hi;
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      if (!s.contains(key)) continue;
      const std::string k = key;
      const json& v = s.at(key);
      if (v.is_boolean())
        return error(path, "\"" + k + "\" as a boolean (draft 4) is not supported: give the bound as a number");
      if (!v.is_number()) return error(path, "\"" + k + "\" must be a number, got " + v.dump());
      const bool lower = k == "minimum" || k == "exclusiveMinimum", exclusive = k.rfind("exclusive", 0) == 0;
      const Decimal b = number_bound(v, lower, exclusive);
      std::optional<Decimal>& slot = lower ? lo : hi;
      if (!slot || (lower ? b.compare(*slot) > 0 : b.compare(*slot) < 0)) slot = b;  // the tighter
    }
    const std::string alts = decimal_range_gbnf(lo, hi);
    if (alts.empty())
      return error(path, "no number satisfies the bounds (at least " + (lo ? lo->to_string() : "-inf") + ", at most " +
                             (hi ? hi->to_string() : "inf") + ", without an exponent, 16 integer and 16 fraction digits)");
    return alts + " " + use("ws");
  }

  // The inclusive bound (see number()) for `v` under `key`.
  static Decimal number_bound(const json& v, bool lower, bool exclusive) {
    if (exclusive) return exclusive_as_inclusive(v.get<double>(), lower);
    if (v.is_number_integer())
      return *Decimal::parse(v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>()));
    return shortest_decimal(v.get<double>());
  }

  Result<std::string> ref(const json& r, const std::string& path) {
    if (!r.is_string()) return error(path, "\"$ref\" must be a string, got " + r.dump());
    const std::string target = r.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (target.empty() || target[0] != '#')
      return error(path, "\"$ref\": only references inside this schema (#/$defs/...) are supported, got \"" + target + "\"");
    const json* node = &root_;
    if (target.size() > 1) {
      try {
        node = &root_.at(json::json_pointer(target.substr(1)));
      } catch (const std::exception&) {
        return error(path, "\"$ref\": \"" + target + "\" does not name a schema in this document");
      }
    }
    // Named before its body is converted, so recursive references end at the name.
    if (target == "#") return refs_[target] = "root";
    const std::string name = reserve("ref-" + target.substr(target.rfind('/') + 1));
    refs_[target] = name;
    HFS_ASSIGN_OR_RETURN(std::string body, visit(*node, target.substr(1), name));
    for (auto& [n, b] : rules_)
      if (n == name) b = std::move(body);
    return name;
  }

  Result<std::string> object(const json& s, const std::string& path, const std::string& hint) {
    const json empty = json::object();
    const json& props = s.contains("properties") ? s.at("properties") : empty;
    if (!props.is_object()) return error(path, "\"properties\" must be an object, got " + props.dump());
    std::vector<std::string> keys;
    for (const auto& [k, v] : props.items()) keys.push_back(k);
    std::set<std::string> required;
    if (s.contains("required")) {
      const json& r = s.at("required");
      if (!r.is_array()) return error(path, "\"required\" must be an array of names, got " + r.dump());
      for (const json& n : r) {
        if (!n.is_string()) return error(path, "\"required\" entries must be strings, got " + n.dump());
        required.insert(n.get<std::string>());
        if (!props.contains(n.get<std::string>())) keys.push_back(n.get<std::string>());  // any value
      }
    }
    const json additional = s.contains("additionalProperties") ? s.at("additionalProperties") : json(true);
    const std::string open = "\"{\" " + use("ws"), close = "\"}\" " + use("ws");
    if (keys.empty()) {  // a map: its values follow additionalProperties
      if (additional.is_boolean() && !additional.get<bool>()) return open + " " + close;
      HFS_ASSIGN_OR_RETURN(std::string v, visit(additional, path + "/additionalProperties", hint + "-value"));
      const std::string kv = use("string") + " \":\" ws " + v;
      return open + " (" + kv + " (\",\" ws " + kv + ")*)? " + close;
    }
    // One key-value pair per listed property, in order.
    std::vector<std::string> kv;
    for (const std::string& k : keys) {
      const json& sub = props.contains(k) ? props.at(k) : json(true);
      HFS_ASSIGN_OR_RETURN(std::string v, visit(sub, path + "/properties/" + pointer_token(k), hint + "-" + k));
      kv.push_back(gbnf_literal(json(k).dump()) + " \":\" ws " + v);
    }
    // after[i]: properties i.. once one is written (each led by a comma), a rule when optional ones make it
    // more than a sequence; rules, not nested copies, keep the grammar linear in the property count.
    const size_t n = keys.size();
    std::vector<std::string> after(n + 1);
    auto rest = [&](size_t i) { return after[i + 1].empty() ? std::string() : " " + after[i + 1]; };
    for (size_t i = n; i-- > 1;) {
      const std::string led = "\",\" ws " + kv[i];
      if (required.count(keys[i])) after[i] = led + rest(i);
      else after[i] = define(hint + "-after-" + keys[i], "(" + led + ")?" + rest(i));
    }
    // The first written property: the first required one, or any optional one before it, or (none
    // required) none at all.
    size_t j = 0;
    while (j < n && !required.count(keys[j])) ++j;
    std::string first = j < n ? kv[j] + rest(j) : "";
    for (size_t i = std::min(j, n); i-- > 0;) {
      first = "(" + kv[i] + rest(i) + (first.empty() ? ")?" : " | " + first + ")");
      if (i > 0) first = define(hint + "-from-" + keys[i], first);
    }
    return open + " " + first + " " + close;
  }

  // uniqueItems over an enum (or const) of n ≤ 32 values: the values in the enum's order, each at most once
  // (sound: distinct by construction; an array listing them in another order is valid but not generated).
  // One rule per (last value's index, count so far) keeps minItems/maxItems exact.
  Result<std::string> unique_items(const json& s, int64_t lo, int64_t hi, const std::string& path, const std::string& hint) {
    const json items = s.contains("items") ? s.at("items") : json(true);
    const bool listed = items.is_object() && (items.contains("enum") || items.contains("const"));
    if (s.contains("prefixItems") || !listed)
      return error(path, "\"uniqueItems\" is supported only with \"items\" an enum (or const) and no prefixItems");
    for (const auto& [k, v] : items.items())
      if (k != "enum" && k != "const" && k != "type" && !annotations().count(k))
        return error(path + "/items", "\"uniqueItems\": \"" + k + "\" beside the items' enum is not supported");
    const json values = items.contains("const") ? json::array({items.at("const")}) : items.at("enum");
    if (!values.is_array() || values.empty() || values.size() > 32)
      return error(path, "\"uniqueItems\": the items' enum must list 1 to 32 values");
    for (const json& v : values) {
      if (items.contains("type") && !value_has_type(v, items.at("type")))
        return error(path + "/items", "enum value " + v.dump() + " is not of \"type\" " + items.at("type").dump());
      if (std::count(values.begin(), values.end(), v) > 1)
        return error(path + "/items", "\"uniqueItems\": the enum lists " + v.dump() + " twice");
    }
    const int64_t n = static_cast<int64_t>(values.size());
    const int64_t most = hi < 0 ? n : std::min(hi, n);
    if (lo > most) return error(path, "minItems " + std::to_string(lo) + " with \"uniqueItems\" over " + std::to_string(n) +
                                          " values accepts no array");
    auto value = [&](int64_t i) { return gbnf_literal(values[static_cast<size_t>(i)].dump()) + " " + use("ws"); };
    // After c values, the last of them values[i]: live when lo is still reachable; a rule only where more can
    // follow (terminal states need none), ending allowed once c >= lo.
    auto live = [&](int64_t c, int64_t i) { return c + (n - 1 - i) >= lo; };
    auto terminal = [&](int64_t c, int64_t i) { return c == most || i == n - 1; };
    std::vector<std::vector<std::string>> rest(static_cast<size_t>(most + 1), std::vector<std::string>(static_cast<size_t>(n)));
    for (int64_t c = 1; c <= most; ++c)
      for (int64_t i = c - 1; i < n; ++i)
        if (live(c, i) && !terminal(c, i)) rest[c][i] = reserve(hint + "-u" + std::to_string(c) + "-" + std::to_string(i));
    auto then = [&](int64_t c, int64_t i) { return rest[c][i].empty() ? std::string() : " " + rest[c][i]; };
    for (int64_t c = 1; c <= most; ++c)
      for (int64_t i = c - 1; i < n; ++i) {
        if (rest[c][i].empty()) continue;
        std::string alts;
        for (int64_t j = i + 1; j < n; ++j)
          if (live(c + 1, j)) alts += (alts.empty() ? "" : " | ") + ("\",\" " + use("ws") + " " + value(j) + then(c + 1, j));
        const std::string body = "(" + alts + ")" + (c >= lo ? "?" : "");  // alts non-empty: the state is live
        for (auto& [nm, b] : rules_)
          if (nm == rest[c][i]) b = body;
      }
    std::string first;
    for (int64_t i = 0; i < n && most > 0; ++i)
      if (live(1, i)) first += (first.empty() ? "" : " | ") + (value(i) + then(1, i));
    std::string body = first.empty() ? std::string() : "(" + first + ")" + (lo == 0 ? "?" : "");
    return "\"[\" " + use("ws") + (body.empty() ? "" : " " + body) + " \"]\" " + use("ws");
  }

  Result<std::string> array(const json& s, const std::string& path, const std::string& hint) {
    HFS_ASSIGN_OR_RETURN(int64_t lo, count(s, "minItems", path, 0));
    HFS_ASSIGN_OR_RETURN(int64_t hi, count(s, "maxItems", path, -1));
    if (hi >= 0 && lo > hi) return error(path, "minItems " + std::to_string(lo) + " > maxItems " + std::to_string(hi));
    if (s.contains("uniqueItems")) {
      const json& u = s.at("uniqueItems");
      if (!u.is_boolean()) return error(path, "\"uniqueItems\" must be a boolean, got " + u.dump());
      if (u.get<bool>()) return unique_items(s, lo, hi, path, hint);
    }
    std::vector<std::string> prefix;
    if (s.contains("prefixItems")) {
      const json& p = s.at("prefixItems");
      if (!p.is_array()) return error(path, "\"prefixItems\" must be an array of schemas");
      for (size_t i = 0; i < p.size(); ++i) {
        HFS_ASSIGN_OR_RETURN(std::string e, visit(p[i], path + "/prefixItems/" + std::to_string(i), hint + "-" + std::to_string(i)));
        prefix.push_back(e);
      }
    }
    const int64_t k = static_cast<int64_t>(prefix.size());
    // The prefix is written whole (a shorter array is valid too, but never needed).
    if (hi >= 0 && hi < k)
      return error(path, "maxItems " + std::to_string(hi) + " below the " + std::to_string(k) + " prefixItems is not supported");
    const json items = s.contains("items") ? s.at("items") : json(true);
    const bool more = !(items.is_boolean() && !items.get<bool>());
    if (!more && lo > k) return error(path, "minItems " + std::to_string(lo) + " with \"items\": false after " +
                                                std::to_string(k) + " prefixItems accepts no array");
    std::string item;
    if (more) {
      HFS_ASSIGN_OR_RETURN(item, visit(items, path + "/items", hint + "-item"));
    }
    const std::string open = "\"[\" " + use("ws"), close = "\"]\" " + use("ws");
    const int64_t rest_lo = std::max<int64_t>(0, lo - k), rest_hi = !more ? 0 : hi < 0 ? -1 : hi - k;
    std::string body;
    for (int64_t i = 0; i < k; ++i) body += (i ? " \",\" ws " : "") + prefix[static_cast<size_t>(i)];
    if (rest_hi != 0) {
      const std::string led = "(\",\" ws " + item + ")";
      if (k > 0) {
        body += " " + led + repeat(rest_lo, rest_hi);
      } else {
        const std::string tail = rest_hi == 1 ? "" : " " + led + repeat(std::max<int64_t>(0, rest_lo - 1), rest_hi < 0 ? -1 : rest_hi - 1);
        body = item + tail;
        if (rest_lo == 0) body = "(" + body + ")?";
      }
    }
    return open + (body.empty() ? "" : " " + body) + " " + close;
  }

  Result<std::string> string(const json& s, const std::string& path, const std::string& hint) {
    if (s.contains("pattern")) return pattern(s, path, hint);
    if (s.contains("format")) {
      const json& f = s.at("format");
      if (s.contains("minLength") || s.contains("maxLength"))
        return error(path, "\"format\" with minLength/maxLength is not supported");
      const std::string name = f.is_string() ? f.get<std::string>() : f.dump();
      std::string body;
      if (name == "date") body = use("date");
      else if (name == "time") body = use("time");
      else if (name == "date-time") body = use("date") + " \"T\" " + use("time");
      else if (name == "uuid") body = use("uuid");
      else if (name == "ipv4" || name == "ipv6" || name == "hostname" || name == "email" || name == "uri")
        body = use(primitive(name).name);
      else
        return error(path, "unsupported \"format\": \"" + name +
                               "\" (date, time, date-time, uuid, email, hostname, ipv4, ipv6, uri)");
      return "\"\\\"\" " + body + " \"\\\"\" " + use("ws");
    }
    HFS_ASSIGN_OR_RETURN(int64_t lo, count(s, "minLength", path, 0));
    HFS_ASSIGN_OR_RETURN(int64_t hi, count(s, "maxLength", path, -1));
    if (hi >= 0 && lo > hi) return error(path, "minLength " + std::to_string(lo) + " > maxLength " + std::to_string(hi));
    if (lo == 0 && hi < 0) return use("string");
    use("ws");
    return "\"\\\"\" " + use("char") + repeat(lo, hi) + " \"\\\"\" ws";
  }

  // A string whose decoded value the ECMA-262 regex `pattern` matches somewhere (json_pattern.h).
  Result<std::string> pattern(const json& s, const std::string& path, const std::string& hint) {
    for (const char* other : {"format", "minLength", "maxLength"})
      if (s.contains(other))
        return error(path, std::string("\"pattern\" with \"") + other + "\" is not supported (a grammar for both would "
                           "be their intersection; fold the length into the pattern, e.g. ^.{1,8}$)");
    const json& p = s.at("pattern");
    if (!p.is_string()) return error(path, "\"pattern\" must be a string (an ECMA-262 regex), got " + p.dump());
    auto rules = json_pattern_rules(p.get<std::string>(), [&](const std::string& h) { return reserve(hint + "-" + h); },
                                    budget_);
    if (!rules) return error(path, "\"pattern\" " + p.dump() + ": " + rules.error().message());
    for (GbnfRule& r : *rules)
      for (auto& [n, b] : rules_)
        if (n == r.name) b = std::move(r.body);
    return "\"\\\"\" " + rules->front().name + " \"\\\"\" " + use("ws");
  }

  const json& root_;
  const cst::Budget& budget_;
  int64_t depth_ = 0;  // schemas being visited
  std::vector<std::pair<std::string, std::string>> rules_;  // in definition order, root first
  std::set<std::string> names_;
  std::map<std::string, std::string> by_body_;
  std::map<std::string, std::string> refs_;
  std::set<std::string> used_;
};

}  // namespace

Result<std::string> json_schema_to_gbnf(std::string_view schema_json, const ConstraintLimits& limits) {
  return json_schema_to_gbnf(schema_json, cst::Budget(limits));
}

Result<std::string> json_schema_to_gbnf(std::string_view schema_json, const cst::Budget& budget) {
  const ConstraintLimits& limits = budget.limits();
  // Parsing, copying and printing a JSON value recurse per level: the text's nesting is bounded first.
  // Each schema level takes at most two levels of JSON ({"properties": {"a": {...}}}).
  const int64_t json_levels = 2 * static_cast<int64_t>(std::max(limits.max_nesting, 0)) + 1;
  if (auto at = json_nesting_exceeds(schema_json, static_cast<size_t>(json_levels)))
    return make_error(ErrorCode::kInvalidArgument, "json schema: the document nests deeper than " +
                                                       std::to_string(json_levels) + " levels at offset " + std::to_string(*at) +
                                                       " (twice ConstraintLimits::max_nesting, plus one)");
  json schema;
  try {
    schema = json::parse(schema_json);
  } catch (const json::parse_error& e) {
    return make_error(ErrorCode::kInvalidArgument, std::string("json schema: not valid JSON: ") + e.what());
  }
  return Converter(schema, budget).run();
}

}  // namespace hfs
