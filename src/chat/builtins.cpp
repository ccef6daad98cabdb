#include "chat/builtins.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

namespace hfs::chat {
namespace {

Error type_error(std::string_view what, const std::string& detail) {
  return make_error(ErrorCode::kExecution, std::string(what) + ": " + detail);
}
Error bad_type(std::string_view what, std::string_view expected, const JValue& got) {
  return type_error(what, "expected " + std::string(expected) + ", got " + std::string(got.type_name()));
}

// ---- UTF-8 ----

struct CodePoint {
  uint32_t cp;
  size_t offset;
  size_t len;
};

std::vector<CodePoint> decode(std::string_view s) {
  std::vector<CodePoint> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + n > s.size()) n = 1;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) {  // invalid sequence: treat the lead byte alone
        n = 1;
        cp = c;
        break;
      }
      cp = (cp << 6) | (cc & 0x3F);
    }
    out.push_back({cp, i, n});
    i += n;
  }
  return out;
}

// Python's str.isspace() set.
bool py_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

std::string ascii_upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return s;
}
std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return s;
}
bool is_alpha_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (static_cast<unsigned char>(c) >= 0x80);
}
std::string py_title(std::string s) {
  bool prev_cased = false;
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') {
      if (!prev_cased) c = static_cast<char>(c - 32);
      prev_cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (prev_cased) c = static_cast<char>(c + 32);
      prev_cased = true;
    } else {
      prev_cased = is_alpha_byte(c);
    }
  }
  return s;
}
std::string py_capitalize(std::string s) {
  s = ascii_lower(std::move(s));
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 32);
  return s;
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every code point (and at both ends).
    auto cps = decode(s);
    int64_t done = 0;
    for (const CodePoint& c : cps) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out.append(s, c.offset, c.len);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  for (;;) {
    size_t hit = (count >= 0 && done >= count) ? std::string::npos : s.find(from, pos);
    if (hit == std::string::npos) {
      out.append(s, pos, std::string::npos);
      return out;
    }
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
    ++done;
  }
}

Result<JValue> py_split(const std::string& s, const JValue* sep, int64_t maxsplit) {
  JArray out;
  if (!sep || sep->is_none() || sep->is_undefined()) {
    auto cps = decode(s);
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && py_space(cps[i].cp)) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        std::string rest = s.substr(cps[i].offset);
        // Python keeps the remainder as is, minus trailing whitespace only when fully split.
        out.push_back(JValue::string(py_strip(rest, nullptr, false, true)));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !py_space(cps[j].cp)) ++j;
      size_t end = j < cps.size() ? cps[j].offset : s.size();
      out.push_back(JValue::string(s.substr(cps[i].offset, end - cps[i].offset)));
      i = j;
    }
    return JValue::array(std::move(out));
  }
  if (!sep->is_string()) return bad_type("split", "a string separator", *sep);
  const std::string& d = sep->as_string();
  if (d.empty()) return type_error("split", "empty separator");
  size_t pos = 0;
  for (;;) {
    size_t hit = (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) ? std::string::npos : s.find(d, pos);
    if (hit == std::string::npos) {
      out.push_back(JValue::string(s.substr(pos)));
      break;
    }
    out.push_back(JValue::string(s.substr(pos, hit - pos)));
    pos = hit + d.size();
  }
  return JValue::array(std::move(out));
}

Result<std::string> as_str_arg(std::string_view what, const JValue* v) {
  if (!v || !v->is_string()) return v ? bad_type(what, "a string", *v) : type_error(what, "missing string argument");
  return v->as_string();
}

Result<int64_t> as_int_arg(std::string_view what, const JValue* v, int64_t fallback) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool()) return bad_type(what, "an integer", *v);
  return v->as_int();
}

Status check_size(std::string_view what, size_t n, const BuiltinEnv& env) {
  if (n > env.max_bytes)
    return make_error(ErrorCode::kResourceExhausted, std::string(what) + ": result of " + std::to_string(n) +
                                                         " bytes/items exceeds the limit " + std::to_string(env.max_bytes));
  return Ok{};
}

// Attribute lookup for selectattr/map/sort/join(attribute=): "a.b" walks nested dicts.
JValue lookup_path(const JValue& v, const std::string& path) {
  JValue cur = v;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur.is_object() || cur.is_namespace()) {
      const JValue* f = cur.as_object().find(part);
      cur = f ? *f : JValue();
    } else if (cur.is_array() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      cur = py_index(cur, std::strtoll(part.c_str(), nullptr, 10));
    } else {
      return JValue();
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

Result<JArray> iterable_items(std::string_view what, const JValue& v) {
  if (v.is_array()) return v.as_array();
  if (v.is_undefined()) return JArray{};
  if (v.is_object()) {
    JArray keys;
    for (const auto& [k, _] : v.as_object().entries) keys.push_back(JValue::string(k));
    return keys;
  }
  if (v.is_string()) {
    JArray chars;
    const std::string& s = v.as_string();
    for (const CodePoint& c : decode(s)) chars.push_back(JValue::string(s.substr(c.offset, c.len)));
    return chars;
  }
  return bad_type(what, "an iterable (list, dict or string)", v);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

Result<JValue> filter_tojson(const JValue& v, const CallArgs& args) {
  int indent = -1;
  if (const JValue* ind = args.get(0, "indent"); ind && !ind->is_none()) {
    if (!ind->is_int()) return bad_type("tojson(indent)", "an integer", *ind);
    indent = static_cast<int>(std::clamp<int64_t>(ind->as_int(), 0, 64));
  }
  bool sort_keys = false;
  if (const JValue* sk = args.get(99, "sort_keys")) sort_keys = sk->truthy();
  HFS_ASSIGN_OR_RETURN(auto s, to_json(v, indent, sort_keys));
  return JValue::string(std::move(s));
}

Result<JValue> filter_select(std::string_view name, const JValue& v, const CallArgs& args, const BuiltinEnv&) {
  bool by_attr = name == "selectattr" || name == "rejectattr";
  bool keep_if = name == "select" || name == "selectattr";
  HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
  size_t first_test_arg = 0;
  std::string attr;
  if (by_attr) {
    HFS_ASSIGN_OR_RETURN(auto a, as_str_arg(name, args.get(0, "attribute")));
    attr = std::move(a);
    first_test_arg = 1;
  }
  std::string test;
  CallArgs test_args;
  if (first_test_arg < args.positional.size()) {
    const JValue& t = args.positional[first_test_arg];
    if (!t.is_string()) return bad_type(name, "a test name", t);
    test = t.as_string();
    if (!is_known_test(test)) return make_error(ErrorCode::kUnsupported, std::string(name) + ": unknown test '" + test + "'");
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(first_test_arg) + 1,
                                args.positional.end());
  }
  JArray out;
  for (const JValue& item : items) {
    JValue subject = by_attr ? lookup_path(item, attr) : item;
    bool pass;
    if (test.empty()) {
      pass = subject.truthy();
    } else {
      HFS_ASSIGN_OR_RETURN(auto r, apply_test(test, subject, test_args));
      pass = r;
    }
    if (pass == keep_if) out.push_back(item);
  }
  return JValue::array(std::move(out));
}

Result<JValue> filter_map(const JValue& v, const CallArgs& args, const BuiltinEnv& env) {
  HFS_ASSIGN_OR_RETURN(auto items, iterable_items("map", v));
  JArray out;
  if (const JValue* attr = args.get(99, "attribute")) {
    if (!attr->is_string()) return bad_type("map(attribute)", "a string", *attr);
    const JValue* dflt = args.get(99, "default");
    for (const JValue& item : items) {
      JValue r = lookup_path(item, attr->as_string());
      out.push_back(r.is_undefined() && dflt ? *dflt : r);
    }
    return JValue::array(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string())
    return type_error("map", "expected a filter name or attribute=");
  std::string f = args.positional[0].as_string();
  if (!is_known_filter(f)) return make_error(ErrorCode::kUnsupported, "map: unknown filter '" + f + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const JValue& item : items) {
    HFS_ASSIGN_OR_RETURN(auto r, apply_filter(f, item, rest, env));
    out.push_back(std::move(r));
  }
  return JValue::array(std::move(out));
}

Result<JValue> filter_sort(const JValue& v, const CallArgs& args) {
  HFS_ASSIGN_OR_RETURN(auto items, iterable_items("sort", v));
  bool reverse = false, case_sensitive = false;
  if (const JValue* r = args.get(0, "reverse")) reverse = r->truthy();
  if (const JValue* c = args.get(1, "case_sensitive")) case_sensitive = c->truthy();
  std::string attr;
  if (const JValue* a = args.get(2, "attribute"); a && a->is_string()) attr = a->as_string();
  JArray sorted = items;
  std::vector<JValue> keys;
  for (const JValue& it : sorted) {
    JValue k = attr.empty() ? it : lookup_path(it, attr);
    if (!case_sensitive && k.is_string()) k = JValue::string(ascii_lower(k.as_string()));
    keys.push_back(std::move(k));
  }
  std::vector<size_t> order(sorted.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Status err;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (!err.ok()) return false;
    auto c = py_compare(keys[a], keys[b]);
    if (!c) {
      err = c.error();
      return false;
    }
    return reverse ? c.value() > 0 : c.value() < 0;
  });
  HFS_TRY(std::move(err));
  JArray out;
  for (size_t i : order) out.push_back(sorted[i]);
  return JValue::array(std::move(out));
}

Result<JValue> filter_indent(const JValue& v, const CallArgs& args) {
  std::string pad = "    ";
  if (const JValue* w = args.get(0, "width")) {
    if (w->is_string()) pad = w->as_string();
    else if (w->is_int()) pad = std::string(static_cast<size_t>(std::clamp<int64_t>(w->as_int(), 0, 1024)), ' ');
  }
  bool first = false, blank = false;
  if (const JValue* f = args.get(1, "first")) first = f->truthy();
  if (const JValue* b = args.get(2, "blank")) blank = b->truthy();
  std::string s = v.str();
  std::string out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool indent_it = is_first ? first : (blank || !line.empty());
    if (indent_it && !(is_first && line.empty() && !blank && s.empty())) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out.push_back('\n');
    start = nl + 1;
    is_first = false;
  }
  return JValue::string(std::move(out));
}

Result<JValue> to_number(const JValue& v, bool want_int, const JValue* dflt) {
  JValue fallback = dflt ? *dflt : (want_int ? JValue::integer(0) : JValue::floating(0.0));
  if (v.is_int() || v.is_bool()) return want_int ? JValue::integer(v.as_int()) : JValue::floating(v.as_float());
  if (v.is_float()) {
    if (!want_int) return v;
    double f = v.as_float();
    if (!std::isfinite(f) || std::fabs(f) > 9.2e18) return fallback;
    return JValue::integer(static_cast<int64_t>(f));
  }
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), nullptr, true, true);
    if (s.empty()) return fallback;
    char* end = nullptr;
    if (want_int) {
      errno = 0;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (*end == '\0' && errno == 0) return JValue::integer(i);
      double f = std::strtod(s.c_str(), &end);  // Jinja's int filter accepts "3.7" → 3
      if (*end == '\0' && std::isfinite(f) && std::fabs(f) < 9.2e18) return JValue::integer(static_cast<int64_t>(f));
      return fallback;
    }
    double f = std::strtod(s.c_str(), &end);
    if (*end == '\0') return JValue::floating(f);
  }
  return fallback;
}

}  // namespace

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  auto cps = decode(s);
  std::set<uint32_t> set;
  if (chars)
    for (const CodePoint& c : decode(*chars)) set.insert(c.cp);
  auto strip_it = [&](uint32_t cp) { return chars ? set.count(cp) > 0 : py_space(cp); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b].cp)) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1].cp)) --e;
  if (b == e) return {};
  size_t from = cps[b].offset;
  size_t to = cps[e - 1].offset + cps[e - 1].len;
  return std::string(s.substr(from, to - from));
}

JValue py_index(const JValue& base, int64_t index) {
  if (base.is_array()) {
    const JArray& a = base.as_array();
    int64_t n = static_cast<int64_t>(a.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return JValue();
    return a[static_cast<size_t>(index)];
  }
  if (base.is_string()) {
    const std::string& s = base.as_string();
    auto cps = decode(s);
    int64_t n = static_cast<int64_t>(cps.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return JValue();
    const CodePoint& c = cps[static_cast<size_t>(index)];
    return JValue::string(s.substr(c.offset, c.len));
  }
  return JValue();
}

Result<JValue> py_slice(const JValue& base, const JValue* start, const JValue* stop, const JValue* step) {
  auto get = [](const JValue* v, bool& present) -> Result<int64_t> {
    present = v && !v->is_none() && !v->is_undefined();
    if (!present) return int64_t{0};
    if (!v->is_int() && !v->is_bool()) return bad_type("slice", "integer bounds", *v);
    return v->as_int();
  };
  bool has_start, has_stop, has_step;
  HFS_ASSIGN_OR_RETURN(auto s0, get(start, has_start));
  HFS_ASSIGN_OR_RETURN(auto s1, get(stop, has_stop));
  HFS_ASSIGN_OR_RETURN(auto s2, get(step, has_step));
  int64_t st = has_step ? s2 : 1;
  if (st == 0) return type_error("slice", "step cannot be zero");
  std::vector<CodePoint> cps;
  int64_t n;
  if (base.is_array()) {
    n = static_cast<int64_t>(base.as_array().size());
  } else if (base.is_string()) {
    cps = decode(base.as_string());
    n = static_cast<int64_t>(cps.size());
  } else {
    return bad_type("slice", "a list or string", base);
  }
  // Python's slice.indices()
  auto clamp = [&](int64_t v, bool present, int64_t dflt) {
    if (!present) return dflt;
    if (v < 0) v += n;
    if (st > 0) return std::clamp<int64_t>(v, 0, n);
    return std::clamp<int64_t>(v, -1, n - 1);
  };
  int64_t b = clamp(s0, has_start, st > 0 ? 0 : n - 1);
  int64_t e = clamp(s1, has_stop, st > 0 ? n : -1);
  std::vector<int64_t> idx;
  if (st > 0)
    for (int64_t i = b; i < e; i += st) idx.push_back(i);
  else
    for (int64_t i = b; i > e; i += st) idx.push_back(i);
  if (base.is_array()) {
    JArray out;
    out.reserve(idx.size());
    for (int64_t i : idx) out.push_back(base.as_array()[static_cast<size_t>(i)]);
    return JValue::array(std::move(out));
  }
  std::string out;
  const std::string& s = base.as_string();
  for (int64_t i : idx) out.append(s, cps[static_cast<size_t>(i)].offset, cps[static_cast<size_t>(i)].len);
  return JValue::string(std::move(out));
}

Result<int> py_compare(const JValue& a, const JValue& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());  // UTF-8 byte order == code-point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    const JArray& x = a.as_array();
    const JArray& y = b.as_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return py_compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return make_error(ErrorCode::kExecution, "cannot order a " + std::string(a.type_name()) + " and a " +
                                               std::string(b.type_name()));
}

bool is_known_filter(std::string_view name) {
  static const std::set<std::string_view> kFilters = {
      "trim", "length", "count", "upper", "lower", "title", "capitalize", "tojson", "items", "default", "d",
      "first", "last", "join", "replace", "string", "int", "float", "list", "selectattr", "rejectattr", "select",
      "reject", "map", "safe", "abs", "reverse", "sort", "unique", "indent", "escape", "e", "round", "sum", "min",
      "max", "wordcount", "dictsort", "batch", "bool"};
  return kFilters.count(name) > 0;
}

bool is_known_test(std::string_view name) {
  static const std::set<std::string_view> kTests = {
      "defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence",
      "boolean", "true", "false", "callable", "odd", "even", "divisibleby", "equalto", "eq", "==", "ne", "!=",
      "lt", "<", "gt", ">", "le", "<=", "ge", ">=", "in", "sameas", "lower", "upper", "escaped"};
  return kTests.count(name) > 0;
}

Result<bool> apply_test(std::string_view name, const JValue& v, const CallArgs& args) {
  auto arg = [&]() -> Result<JValue> {
    const JValue* a = args.get(0, "value");
    if (!a) return type_error("test '" + std::string(name) + "'", "missing argument");
    return *a;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return v.is_array() || v.is_object() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_array() || v.is_object() || v.is_string() || v.is_undefined();
  if (name == "callable") return v.is_function();
  if (name == "escaped") return false;
  if (name == "lower") return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is_int() && !v.is_bool()) return bad_type("test '" + std::string(name) + "'", "an integer", v);
    if (name == "odd") return v.as_int() % 2 != 0;
    if (name == "even") return v.as_int() % 2 == 0;
    HFS_ASSIGN_OR_RETURN(auto d, arg());
    if (!d.is_int() || d.as_int() == 0) return type_error("divisibleby", "needs a non-zero integer");
    return v.as_int() % d.as_int() == 0;
  }
  HFS_ASSIGN_OR_RETURN(auto other, arg());
  if (name == "equalto" || name == "eq" || name == "==") return v.equals(other);
  if (name == "ne" || name == "!=") return !v.equals(other);
  if (name == "sameas") {
    if (v.kind() != other.kind()) return false;
    return v.equals(other);
  }
  if (name == "in") {
    if (other.is_string()) {
      if (!v.is_string()) return bad_type("test 'in'", "a string", v);
      return other.as_string().find(v.as_string()) != std::string::npos;
    }
    if (other.is_array()) {
      for (const JValue& e : other.as_array())
        if (e.equals(v)) return true;
      return false;
    }
    if (other.is_object()) return v.is_string() && other.as_object().find(v.as_string()) != nullptr;
    return bad_type("test 'in'", "a container", other);
  }
  HFS_ASSIGN_OR_RETURN(auto c, py_compare(v, other));
  if (name == "lt" || name == "<") return c < 0;
  if (name == "gt" || name == ">") return c > 0;
  if (name == "le" || name == "<=") return c <= 0;
  if (name == "ge" || name == ">=") return c >= 0;
  return make_error(ErrorCode::kUnsupported, "unknown test '" + std::string(name) + "'");
}

Result<JValue> apply_filter(std::string_view name, const JValue& v, const CallArgs& args, const BuiltinEnv& env) {
  if (name == "safe") return v;
  if (name == "string") return JValue::string(v.str());
  if (name == "trim") {
    const JValue* chars = args.get(0, "chars");
    std::string cs = chars && chars->is_string() ? chars->as_string() : std::string();
    return JValue::string(py_strip(v.str(), chars && chars->is_string() ? &cs : nullptr, true, true));
  }
  if (name == "upper") return JValue::string(ascii_upper(v.str()));
  if (name == "lower") return JValue::string(ascii_lower(v.str()));
  if (name == "title") return JValue::string(py_title(v.str()));
  if (name == "capitalize") return JValue::string(py_capitalize(v.str()));
  if (name == "escape" || name == "e") return JValue::string(html_escape(v.str()));
  if (name == "length" || name == "count") {
    if (v.is_string()) return JValue::integer(static_cast<int64_t>(utf8_length(v.as_string())));
    if (v.is_array()) return JValue::integer(static_cast<int64_t>(v.as_array().size()));
    if (v.is_object() || v.is_namespace()) return JValue::integer(static_cast<int64_t>(v.as_object().entries.size()));
    if (v.is_undefined()) return JValue::integer(0);
    return bad_type("length", "a string, list or dict", v);
  }
  if (name == "wordcount") {
    HFS_ASSIGN_OR_RETURN(auto parts, py_split(v.str(), nullptr, -1));
    return JValue::integer(static_cast<int64_t>(parts.as_array().size()));
  }
  if (name == "tojson") return filter_tojson(v, args);
  if (name == "items" || name == "dictsort") {
    if (v.is_undefined()) return JValue::array({});
    if (!v.is_object()) return bad_type(name, "a dict", v);
    JArray out;
    for (const auto& [k, e] : v.as_object().entries) out.push_back(JValue::array({JValue::string(k), e}));
    if (name == "dictsort")
      std::stable_sort(out.begin(), out.end(), [](const JValue& a, const JValue& b) {
        return ascii_lower(a.as_array()[0].as_string()) < ascii_lower(b.as_array()[0].as_string());
      });
    return JValue::array(std::move(out));
  }
  if (name == "default" || name == "d") {
    const JValue* dflt = args.get(0, "default_value");
    bool boolean = false;
    if (const JValue* b = args.get(1, "boolean")) boolean = b->truthy();
    bool use_default = v.is_undefined() || (boolean && !v.truthy());
    if (!use_default) return v;
    return dflt ? *dflt : JValue::string("");
  }
  if (name == "first" || name == "last") {
    HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
    if (items.empty()) return JValue();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      JValue minus_one = JValue::integer(-1);
      return py_slice(v, nullptr, nullptr, &minus_one);
    }
    HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
    JArray out(items.rbegin(), items.rend());
    return JValue::array(std::move(out));
  }
  if (name == "list") {
    HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
    return JValue::array(std::move(items));
  }
  if (name == "unique") {
    HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
    JArray out;
    for (const JValue& e : items) {
      bool seen = false;
      for (const JValue& o : out) seen = seen || o.equals(e);
      if (!seen) out.push_back(e);
    }
    return JValue::array(std::move(out));
  }
  if (name == "join") {
    std::string sep;
    if (const JValue* d = args.get(0, "d")) sep = d->str();
    std::string attr;
    if (const JValue* a = args.get(1, "attribute"); a && a->is_string()) attr = a->as_string();
    HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += sep;
      out += (attr.empty() ? items[i] : lookup_path(items[i], attr)).str();
      HFS_TRY(check_size("join", out.size(), env));
    }
    return JValue::string(std::move(out));
  }
  if (name == "replace") {
    HFS_ASSIGN_OR_RETURN(auto from, as_str_arg("replace", args.get(0, "old")));
    HFS_ASSIGN_OR_RETURN(auto to, as_str_arg("replace", args.get(1, "new")));
    HFS_ASSIGN_OR_RETURN(auto count, as_int_arg("replace", args.get(2, "count"), -1));
    std::string s = v.str();
    if (!from.empty() && !to.empty()) {
      // bound before building: every hit may grow the string
      size_t hits = 0;
      for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + from.size())) ++hits;
      if (to.size() > from.size()) HFS_TRY(check_size("replace", s.size() + hits * (to.size() - from.size()), env));
    } else if (from.empty()) {
      HFS_TRY(check_size("replace", s.size() + (s.size() + 1) * to.size(), env));
    }
    return JValue::string(py_replace(s, from, to, count));
  }
  if (name == "int") return to_number(v, true, args.get(0, "default"));
  if (name == "float") return to_number(v, false, args.get(0, "default"));
  if (name == "bool") return JValue::boolean(v.truthy());
  if (name == "abs") {
    if (v.is_int()) {
      if (v.as_int() == std::numeric_limits<int64_t>::min()) return type_error("abs", "integer overflow");
      return JValue::integer(std::llabs(v.as_int()));
    }
    if (v.is_float()) return JValue::floating(std::fabs(v.as_float()));
    return bad_type("abs", "a number", v);
  }
  if (name == "round") {
    if (!v.is_number()) return bad_type("round", "a number", v);
    HFS_ASSIGN_OR_RETURN(auto prec, as_int_arg("round", args.get(0, "precision"), 0));
    std::string method = "common";
    if (const JValue* m = args.get(1, "method"); m && m->is_string()) method = m->as_string();
    double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(prec, -300, 300)));
    double x = v.as_float() * scale;
    x = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::round(x);
    return JValue::floating(x / scale);
  }
  if (name == "sum" || name == "min" || name == "max") {
    HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
    std::string attr;
    if (const JValue* a = args.get(99, "attribute"); a && a->is_string()) attr = a->as_string();
    if (name == "sum") {
      JValue acc = JValue::integer(0);
      if (const JValue* s = args.get(99, "start")) acc = *s;
      for (const JValue& e : items) {
        JValue x = attr.empty() ? e : lookup_path(e, attr);
        if (!x.is_number() || !acc.is_number()) return bad_type("sum", "numbers", x);
        acc = (x.is_float() || acc.is_float()) ? JValue::floating(acc.as_float() + x.as_float())
                                               : JValue::integer(acc.as_int() + x.as_int());
      }
      return acc;
    }
    if (items.empty()) return JValue();
    JValue best = items.front();
    for (const JValue& e : items) {
      HFS_ASSIGN_OR_RETURN(
          auto c, py_compare(attr.empty() ? e : lookup_path(e, attr), attr.empty() ? best : lookup_path(best, attr)));
      if ((name == "min" && c < 0) || (name == "max" && c > 0)) best = e;
    }
    return best;
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return filter_select(name, v, args, env);
  if (name == "map") return filter_map(v, args, env);
  if (name == "sort") return filter_sort(v, args);
  if (name == "indent") return filter_indent(v, args);
  if (name == "batch") {
    HFS_ASSIGN_OR_RETURN(auto items, iterable_items(name, v));
    HFS_ASSIGN_OR_RETURN(auto n, as_int_arg("batch", args.get(0, "linecount"), 1));
    if (n <= 0) return type_error("batch", "linecount must be positive");
    JArray out, cur;
    for (const JValue& e : items) {
      cur.push_back(e);
      if (static_cast<int64_t>(cur.size()) == n) {
        out.push_back(JValue::array(std::move(cur)));
        cur.clear();
      }
    }
    if (!cur.empty()) out.push_back(JValue::array(std::move(cur)));
    return JValue::array(std::move(out));
  }
  return make_error(ErrorCode::kUnsupported, "filter '" + std::string(name) + "' is not supported");
}

JValue get_method(const JValue& base, const std::string& name, const BuiltinEnv& env) {
  if (base.is_string()) {
    std::string s = base.as_string();
    auto fn = [&](NativeFn f) { return JValue::function("str." + name, std::move(f)); };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      bool l = name != "rstrip", r = name != "lstrip";
      return fn([s, l, r](const CallArgs& a) -> Result<JValue> {
        const JValue* c = a.get(0, "chars");
        if (c && !c->is_none() && !c->is_string()) return bad_type("strip", "a string or none", *c);
        std::string chars = c && c->is_string() ? c->as_string() : std::string();
        return JValue::string(py_strip(s, c && c->is_string() ? &chars : nullptr, l, r));
      });
    }
    if (name == "startswith" || name == "endswith") {
      bool start = name == "startswith";
      return fn([s, start](const CallArgs& a) -> Result<JValue> {
        const JValue* p = a.get(0, "prefix");
        if (!p) return type_error(start ? "startswith" : "endswith", "missing argument");
        auto test = [&](const std::string& x) {
          if (x.size() > s.size()) return false;
          return start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
        };
        if (p->is_string()) return JValue::boolean(test(p->as_string()));
        if (p->is_array()) {
          for (const JValue& e : p->as_array()) {
            if (!e.is_string()) return bad_type("startswith/endswith", "a tuple of strings", e);
            if (test(e.as_string())) return JValue::boolean(true);
          }
          return JValue::boolean(false);
        }
        return bad_type(start ? "startswith" : "endswith", "a string or tuple of strings", *p);
      });
    }
    if (name == "split") {
      return fn([s](const CallArgs& a) -> Result<JValue> {
        HFS_ASSIGN_OR_RETURN(auto maxsplit, as_int_arg("split", a.get(1, "maxsplit"), -1));
        return py_split(s, a.get(0, "sep"), maxsplit);
      });
    }
    if (name == "upper") return fn([s](const CallArgs&) -> Result<JValue> { return JValue::string(ascii_upper(s)); });
    if (name == "lower") return fn([s](const CallArgs&) -> Result<JValue> { return JValue::string(ascii_lower(s)); });
    if (name == "title") return fn([s](const CallArgs&) -> Result<JValue> { return JValue::string(py_title(s)); });
    if (name == "capitalize")
      return fn([s](const CallArgs&) -> Result<JValue> { return JValue::string(py_capitalize(s)); });
    if (name == "replace") {
      return fn([s, env](const CallArgs& a) -> Result<JValue> {
        CallArgs fa;
        fa.positional = a.positional;
        fa.keyword = a.keyword;
        return apply_filter("replace", JValue::string(s), fa, env);
      });
    }
    if (name == "join") {
      return fn([s, env](const CallArgs& a) -> Result<JValue> {
        const JValue* items = a.get(0, "iterable");
        if (!items) return type_error("join", "missing argument");
        HFS_ASSIGN_OR_RETURN(auto list, iterable_items("join", *items));
        std::string out;
        for (size_t i = 0; i < list.size(); ++i) {
          if (!list[i].is_string()) return bad_type("str.join", "strings", list[i]);
          if (i) out += s;
          out += list[i].as_string();
          HFS_TRY(check_size("join", out.size(), env));
        }
        return JValue::string(std::move(out));
      });
    }
    if (name == "count" || name == "find") {
      bool count = name == "count";
      return fn([s, count](const CallArgs& a) -> Result<JValue> {
        HFS_ASSIGN_OR_RETURN(auto sub, as_str_arg(count ? "count" : "find", a.get(0, "sub")));
        if (!count) {
          size_t p = s.find(sub);
          return JValue::integer(p == std::string::npos ? -1 : static_cast<int64_t>(utf8_length(s.substr(0, p))));
        }
        if (sub.empty()) return JValue::integer(static_cast<int64_t>(utf8_length(s) + 1));
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return JValue::integer(n);
      });
    }
    return JValue();
  }
  if (base.is_object()) {
    auto fn = [&](NativeFn f) { return JValue::function("dict." + name, std::move(f)); };
    if (name == "items" || name == "keys" || name == "values") {
      return fn([base, name](const CallArgs&) -> Result<JValue> {
        JArray out;
        for (const auto& [k, v] : base.as_object().entries) {
          if (name == "items") out.push_back(JValue::array({JValue::string(k), v}));
          else if (name == "keys") out.push_back(JValue::string(k));
          else out.push_back(v);
        }
        return JValue::array(std::move(out));
      });
    }
    if (name == "get") {
      return fn([base](const CallArgs& a) -> Result<JValue> {
        const JValue* k = a.get(0, "key");
        if (!k) return type_error("dict.get", "missing key");
        const JValue* hit = k->is_string() ? base.as_object().find(k->as_string()) : nullptr;
        if (hit) return *hit;
        const JValue* d = a.get(1, "default");
        return d ? *d : JValue::none();
      });
    }
  }
  return JValue();
}

}  // namespace hfs::chat
