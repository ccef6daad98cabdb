#include "hfstatic/value.h"

#include <nlohmann/json.hpp>

namespace hfs {
namespace {

const std::string kEmptyString;
const Value::Array kEmptyArray;
const Value::Object kEmptyObject;

nlohmann::json to_nlohmann(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return nullptr;
    case Value::Kind::kBool: return v.as_bool();
    case Value::Kind::kInt: return v.as_int();
    case Value::Kind::kFloat: return v.as_float();
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kArray: {
      nlohmann::json a = nlohmann::json::array();
      for (const Value& e : v.as_array()) a.push_back(to_nlohmann(e));
      return a;
    }
    case Value::Kind::kObject: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [k, e] : v.as_object()) o[k] = to_nlohmann(e);
      return o;
    }
  }
  return nullptr;
}

Result<Value> from_nlohmann(const nlohmann::json& j, int depth) {
  if (depth > 64) return make_error(ErrorCode::kBadManifest, "JSON nesting deeper than 64");
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value();
    case nlohmann::json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      Value::Array a;
      a.reserve(j.size());
      for (const auto& e : j) {
        HFS_ASSIGN_OR_RETURN(auto r, from_nlohmann(e, depth + 1));
        a.push_back(std::move(r));
      }
      return Value(std::move(a));
    }
    case nlohmann::json::value_t::object: {
      Value::Object o;
      for (const auto& [k, e] : j.items()) {
        HFS_ASSIGN_OR_RETURN(auto r, from_nlohmann(e, depth + 1));
        o.emplace(k, std::move(r));
      }
      return Value(std::move(o));
    }
    default: return make_error(ErrorCode::kBadManifest, "unsupported JSON value (binary)");
  }
}

}  // namespace

Value Value::int_array(const std::vector<int64_t>& v) {
  Array a;
  a.reserve(v.size());
  for (int64_t x : v) a.emplace_back(x);
  return Value(std::move(a));
}

const std::string& Value::as_string() const { return kind_ == Kind::kString ? s_ : kEmptyString; }
const Value::Array& Value::as_array() const { return kind_ == Kind::kArray ? *a_ : kEmptyArray; }
const Value::Object& Value::as_object() const { return kind_ == Kind::kObject ? *o_ : kEmptyObject; }

const Value* Value::get(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  auto it = o_->find(key);
  return it == o_->end() ? nullptr : &it->second;
}

void Value::set(std::string key, Value v) {
  if (kind_ != Kind::kObject) *this = Value::object();
  if (o_.use_count() > 1) o_ = std::make_shared<Object>(*o_);  // copy on write: copies stay independent
  (*o_)[std::move(key)] = std::move(v);
}

void Value::push_back(Value v) {
  if (kind_ != Kind::kArray) *this = Value::array();
  if (a_.use_count() > 1) a_ = std::make_shared<Array>(*a_);
  a_->push_back(std::move(v));
}

size_t Value::size() const {
  if (kind_ == Kind::kArray) return a_->size();
  if (kind_ == Kind::kObject) return o_->size();
  return 0;
}

bool Value::operator==(const Value& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kNull: return true;
    case Kind::kBool: return b_ == o.b_;
    case Kind::kInt: return i_ == o.i_;
    case Kind::kFloat: return f_ == o.f_;
    case Kind::kString: return s_ == o.s_;
    case Kind::kArray: return *a_ == *o.a_;
    case Kind::kObject: return *o_ == *o.o_;
  }
  return false;
}

std::string Value::to_json(int indent) const { return to_nlohmann(*this).dump(indent); }

Result<Value> Value::parse_json(std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes)
    return make_error(ErrorCode::kBadManifest,
                      "JSON document of " + std::to_string(text.size()) + " bytes exceeds limit " + std::to_string(max_bytes));
  // Depth is bounded before building the DOM: nlohmann's recursive parser could overflow the stack on
  // deeply nested hostile input.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > 64) return make_error(ErrorCode::kBadManifest, "JSON nesting deeper than 64");
    } else if (c == ']' || c == '}') --depth;
  }
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(ErrorCode::kBadManifest, "malformed JSON");
  return from_nlohmann(j, 0);
}

}  // namespace hfs
