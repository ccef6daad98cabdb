#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace hfs::chat {

const JValue* JObject::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void JObject::set(std::string key, JValue v) {
  for (auto& [k, old] : entries) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(v));
}

const JValue* CallArgs::get(size_t i, std::string_view name) const {
  if (i < positional.size()) return &positional[i];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

JValue JValue::none() {
  JValue v;
  v.kind_ = Kind::kNone;
  return v;
}
JValue JValue::boolean(bool b) {
  JValue v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  v.i_ = b ? 1 : 0;
  return v;
}
JValue JValue::integer(int64_t i) {
  JValue v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
JValue JValue::floating(double f) {
  JValue v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
JValue JValue::string(std::string s) {
  JValue v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}
JValue JValue::array(JArray a) {
  JValue v;
  v.kind_ = Kind::kArray;
  v.a_ = std::make_shared<JArray>(std::move(a));
  return v;
}
JValue JValue::object(JObject o) {
  JValue v;
  v.kind_ = Kind::kObject;
  v.o_ = std::make_shared<JObject>(std::move(o));
  return v;
}
JValue JValue::ns(JObject o) {
  JValue v = object(std::move(o));
  v.kind_ = Kind::kNamespace;
  return v;
}
JValue JValue::function(std::string name, NativeFn fn) {
  JValue v;
  v.kind_ = Kind::kFunction;
  v.s_ = std::move(name);
  v.fn_ = std::make_shared<NativeFn>(std::move(fn));
  return v;
}

JValue JValue::from_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return none();
    case Value::Kind::kBool: return boolean(v.as_bool());
    case Value::Kind::kInt: return integer(v.as_int());
    case Value::Kind::kFloat: return floating(v.as_float());
    case Value::Kind::kString: return string(v.as_string());
    case Value::Kind::kArray: {
      JArray a;
      a.reserve(v.size());
      for (const Value& e : v.as_array()) a.push_back(from_value(e));
      return array(std::move(a));
    }
    case Value::Kind::kObject: {
      JObject o;
      for (const auto& [k, e] : v.as_object()) o.entries.emplace_back(k, from_value(e));
      return object(std::move(o));
    }
  }
  return JValue();
}

bool JValue::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0.0;
    case Kind::kString: return !s_.empty();
    case Kind::kArray: return !a_->empty();
    case Kind::kObject: return !o_->entries.empty();
    case Kind::kNamespace:
    case Kind::kFunction: return true;
  }
  return false;
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f);
  std::string s(buf, res.ptr);
  // Python switches to exponent notation at 1e16 and below 1e-4; to_chars picks the shortest form,
  // so rebuild with Python's rule from the shortest digits.
  auto e = s.find_first_of("eE");
  std::string mant = e == std::string::npos ? s : s.substr(0, e);
  int exp10 = e == std::string::npos ? 0 : std::stoi(s.substr(e + 1));
  bool neg = !mant.empty() && mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  int point = -1;
  for (char c : mant) {
    if (c == '.') point = static_cast<int>(digits.size());
    else digits.push_back(c);
  }
  if (point < 0) point = static_cast<int>(digits.size());
  // Normalise to digits d1d2d3... with decimal exponent: value = 0.d1d2.. * 10^dec
  size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) return neg ? "-0.0" : "0.0";
  digits.erase(0, lead);
  int dec = point - static_cast<int>(lead) + exp10;  // position of decimal point relative to digits start
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int sci = dec - 1;
  std::string out;
  if (neg) out.push_back('-');
  if (sci >= 16 || sci < -4) {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", sci < 0 ? '-' : '+', std::abs(sci));
    out.append(eb);
    return out;
  }
  if (dec <= 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-dec), '0');
    out.append(digits);
  } else if (static_cast<size_t>(dec) >= digits.size()) {
    out.append(digits);
    out.append(static_cast<size_t>(dec) - digits.size(), '0');
    out.append(".0");
  } else {
    out.append(digits, 0, static_cast<size_t>(dec));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(dec), std::string::npos);
  }
  return out;
}

namespace {
std::string py_quote(const std::string& s) {
  // Python prefers single quotes unless the string contains one and no double quote.
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == q) {
          out.push_back('\\');
          out.push_back(c);
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\x%02x", static_cast<unsigned char>(c));
          out += b;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back(q);
  return out;
}
}  // namespace

std::string JValue::repr() const {
  if (kind_ == Kind::kString) return py_quote(s_);
  if (kind_ == Kind::kUndefined) return "None";
  return str();
}

std::string JValue::str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return float_repr(f_);
    case Kind::kString: return s_;
    case Kind::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < a_->size(); ++i) {
        if (i) out += ", ";
        out += (*a_)[i].repr();
      }
      return out + "]";
    }
    case Kind::kObject: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : o_->entries) {
        if (!first) out += ", ";
        first = false;
        out += py_quote(k) + ": " + v.repr();
      }
      return out + "}";
    }
    case Kind::kNamespace: return "<Namespace>";
    case Kind::kFunction: return "<function " + s_ + ">";
  }
  return "";
}

bool JValue::equals(const JValue& o) const {
  if (is_number() && o.is_number()) {
    if ((kind_ == Kind::kFloat) || (o.kind_ == Kind::kFloat)) return as_float() == o.as_float();
    return i_ == o.i_;
  }
  if ((kind_ == Kind::kUndefined || kind_ == Kind::kNone) && (o.kind_ == Kind::kUndefined || o.kind_ == Kind::kNone))
    return kind_ == o.kind_;
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kString: return s_ == o.s_;
    case Kind::kArray: {
      if (a_ == o.a_) return true;
      if (a_->size() != o.a_->size()) return false;
      for (size_t i = 0; i < a_->size(); ++i)
        if (!(*a_)[i].equals((*o.a_)[i])) return false;
      return true;
    }
    case Kind::kObject: {
      if (o_ == o.o_) return true;
      if (o_->entries.size() != o.o_->entries.size()) return false;
      for (const auto& [k, v] : o_->entries) {
        const JValue* other = o.o_->find(k);
        if (!other || !v.equals(*other)) return false;
      }
      return true;
    }
    case Kind::kNamespace: return o_ == o.o_;
    case Kind::kFunction: return fn_ == o.fn_;
    default: return true;
  }
}

std::string_view JValue::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kArray: return "list";
    case Kind::kObject: return "dict";
    case Kind::kNamespace: return "namespace";
    case Kind::kFunction: return "function";
  }
  return "?";
}

namespace {

void json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\u%04x", static_cast<unsigned char>(c));
          out += b;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

Status json_rec(std::string& out, const JValue& v, int indent, bool sort_keys, int depth) {
  if (depth > 64) return make_error(ErrorCode::kExecution, "tojson: value nested deeper than 64 levels");
  auto newline = [&](int d) {
    out.push_back('\n');
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(d), ' ');
  };
  switch (v.kind()) {
    case JValue::Kind::kNone: out += "null"; return Ok{};
    case JValue::Kind::kBool: out += v.as_bool() ? "true" : "false"; return Ok{};
    case JValue::Kind::kInt: out += std::to_string(v.as_int()); return Ok{};
    case JValue::Kind::kFloat: {
      double f = v.as_float();
      if (std::isnan(f)) out += "NaN";
      else if (std::isinf(f)) out += f > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(f);
      return Ok{};
    }
    case JValue::Kind::kString: json_string(out, v.as_string()); return Ok{};
    case JValue::Kind::kArray: {
      const JArray& a = v.as_array();
      if (a.empty()) {
        out += "[]";
        return Ok{};
      }
      out.push_back('[');
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        HFS_TRY(json_rec(out, a[i], indent, sort_keys, depth + 1));
      }
      if (indent >= 0) newline(depth);
      out.push_back(']');
      return Ok{};
    }
    case JValue::Kind::kObject:
    case JValue::Kind::kNamespace: {
      std::vector<const std::pair<std::string, JValue>*> items;
      for (const auto& e : v.as_object().entries) items.push_back(&e);
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      if (items.empty()) {
        out += "{}";
        return Ok{};
      }
      out.push_back('{');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        json_string(out, items[i]->first);
        out += ": ";
        HFS_TRY(json_rec(out, items[i]->second, indent, sort_keys, depth + 1));
      }
      if (indent >= 0) newline(depth);
      out.push_back('}');
      return Ok{};
    }
    case JValue::Kind::kUndefined:
    case JValue::Kind::kFunction:
      return make_error(ErrorCode::kExecution, "tojson: cannot serialise a value of type " + std::string(v.type_name()));
  }
  return Ok{};
}

}  // namespace

Result<std::string> to_json(const JValue& v, int indent, bool sort_keys) {
  std::string out;
  HFS_TRY(json_rec(out, v, indent, sort_keys, 0));
  return out;
}

}  // namespace hfs::chat
