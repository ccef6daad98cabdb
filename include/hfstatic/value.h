// hfstatic/value.h — a JSON-like value: program metadata and op attributes.
//
//   hfs::Value v = hfs::Value::object();
//   v.set("n_layers", hfs::Value(int64_t{5}));
//   int64_t n = v.get("n_layers")->as_int();
//   std::string s = v.to_json();                  // {"n_layers":5}
//   hfs::Result<hfs::Value> back = hfs::Value::parse_json(s);
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"

namespace hfs {

class HFS_API Value {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt, kFloat, kString, kArray, kObject };
  using Array = std::vector<Value>;
  using Object = std::map<std::string, Value, std::less<>>;

  Value() = default;
  explicit Value(bool b) : kind_(Kind::kBool), b_(b) {}
  Value(int64_t i) : kind_(Kind::kInt), i_(i) {}  // NOLINT
  Value(int i) : kind_(Kind::kInt), i_(i) {}      // NOLINT
  Value(double f) : kind_(Kind::kFloat), f_(f) {}  // NOLINT
  Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}  // NOLINT
  Value(const char* s) : kind_(Kind::kString), s_(s) {}  // NOLINT
  Value(Array a) : kind_(Kind::kArray), a_(std::make_shared<Array>(std::move(a))) {}  // NOLINT
  Value(Object o) : kind_(Kind::kObject), o_(std::make_shared<Object>(std::move(o))) {}  // NOLINT
  static Value object() { return Value(Object{}); }
  static Value array() { return Value(Array{}); }
  static Value int_array(const std::vector<int64_t>& v);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Accessors assume the kind was checked; they return a zero value otherwise (never throw).
  bool as_bool() const { return kind_ == Kind::kBool && b_; }
  int64_t as_int() const { return kind_ == Kind::kInt ? i_ : kind_ == Kind::kFloat ? static_cast<int64_t>(f_) : 0; }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : kind_ == Kind::kInt ? static_cast<double>(i_) : 0.0; }
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // Object access. get() returns nullptr when not an object or the key is absent.
  const Value* get(std::string_view key) const;
  void set(std::string key, Value v);  // turns a null value into an object first
  // Array append (turns a null value into an array first).
  void push_back(Value v);
  size_t size() const;  // elements of an array/object, else 0

  bool operator==(const Value& o) const;
  // Compact JSON; floats print with enough digits to round-trip.
  std::string to_json(int indent = -1) const;
  // Strict JSON; rejects nesting deeper than 64 and documents larger than `max_bytes`.
  static Result<Value> parse_json(std::string_view text, size_t max_bytes = 256u << 20);

 private:
  Kind kind_ = Kind::kNull;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<Array> a_;   // shared: Values are cheap to copy; copies are immutable in practice
  std::shared_ptr<Object> o_;
};

using Metadata = Value::Object;
using Attrs = Value::Object;

}  // namespace hfs
