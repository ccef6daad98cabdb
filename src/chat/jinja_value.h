// Chat-template runtime values: Python-like (undefined, none, bool, int, float, str, list, dict,
// namespace, callable) with Python/Jinja semantics for truthiness, equality, str() and tojson.
//
// Lists and dicts are shared and treated as immutable once built; a namespace is the one mutable
// object (`{% set ns.x = 1 %}` writes through every copy, which is what makes it escape loop scopes).
// Dicts keep insertion order, like Python dicts, so items()/tojson print keys in the order given.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/value.h"

namespace hfs::chat {

class JValue;
using JArray = std::vector<JValue>;

struct JObject {
  std::vector<std::pair<std::string, JValue>> entries;
  const JValue* find(std::string_view key) const;
  void set(std::string key, JValue v);
};

struct CallArgs {
  std::vector<JValue> positional;
  std::vector<std::pair<std::string, JValue>> keyword;
  int line = 0;
  int col = 0;
  // Positional argument i, else keyword `name`, else nullptr.
  const JValue* get(size_t i, std::string_view name) const;
};

using NativeFn = std::function<Result<JValue>(const CallArgs&)>;

class JValue {
 public:
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kNamespace, kFunction };

  JValue() = default;
  static JValue none();
  static JValue boolean(bool b);
  static JValue integer(int64_t i);
  static JValue floating(double f);
  static JValue string(std::string s);
  static JValue array(JArray a);
  static JValue object(JObject o);
  static JValue ns(JObject o);
  static JValue function(std::string name, NativeFn fn);
  static JValue from_value(const Value& v);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kFloat ? static_cast<int64_t>(f_) : i_; }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& as_string() const { return s_; }
  const JArray& as_array() const { return *a_; }
  const JObject& as_object() const { return *o_; }
  JObject& namespace_object() const { return *o_; }
  const NativeFn& as_function() const { return *fn_; }

  // Python truthiness: undefined/none/False/0/""/[]/{} are false; namespaces and callables true.
  bool truthy() const;
  // Python str(): True, None, 1.5, ['a', 1], {'k': 'v'}; undefined → "".
  std::string str() const;
  // Python repr() (strings quoted), used inside list/dict str().
  std::string repr() const;
  // Jinja == (numbers compare across int/float/bool, containers deeply).
  bool equals(const JValue& o) const;
  // "undefined", "none", "boolean", "integer", "float", "string", "list", "dict", "namespace", "function"
  std::string_view type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<JArray> a_;
  std::shared_ptr<JObject> o_;
  std::shared_ptr<NativeFn> fn_;
};

// json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) as HF's tojson filter calls it.
// indent < 0 → one line with ", " / ": " separators; indent ≥ 0 → "," / ": " and newlines.
// Errors (kExecution) on undefined/functions, and on nesting deeper than 64.
[[nodiscard]] Result<std::string> to_json(const JValue& v, int indent, bool sort_keys);

// Python float repr: shortest round-trip digits, always with a '.' or exponent (1.0, 0.1, 1e+16).
std::string float_repr(double f);

}  // namespace hfs::chat
