#include "chat/evaluator.h"

#include <cmath>
#include <limits>

#include "chat/builtins.h"
#include "chat/lexer.h"

namespace hfs::chat {

std::string format_time(const std::string& fmt, int64_t t) {
  static const char* kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
  static const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                  "July",    "August",   "September", "October", "November", "December"};
  int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  int64_t secs = t - days * 86400;
  // Howard Hinnant's civil_from_days.
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
  int64_t weekday = ((days % 7) + 11) % 7;  // 1970-01-01 was a Thursday (4)
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  static const int kCum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  int64_t yday = kCum[m - 1] + d + (leap && m > 2 ? 1 : 0);
  int64_t hh = secs / 3600, mm = (secs / 60) % 60, ss = secs % 60;
  auto two = [](int64_t v) {
    std::string s = std::to_string(v);
    return s.size() < 2 ? "0" + s : s;
  };
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out.push_back(fmt[i]);
      continue;
    }
    char c = fmt[++i];
    switch (c) {
      case 'a': out += std::string(kDays[weekday]).substr(0, 3); break;
      case 'A': out += kDays[weekday]; break;
      case 'b': out += std::string(kMonths[m - 1]).substr(0, 3); break;
      case 'B': out += kMonths[m - 1]; break;
      case 'd': out += two(d); break;
      case 'e': out += (d < 10 ? " " : "") + std::to_string(d); break;
      case 'H': out += two(hh); break;
      case 'I': out += two(hh % 12 == 0 ? 12 : hh % 12); break;
      case 'j': {
        std::string s = std::to_string(yday);
        out += std::string(3 - std::min<size_t>(3, s.size()), '0') + s;
        break;
      }
      case 'm': out += two(m); break;
      case 'M': out += two(mm); break;
      case 'p': out += hh < 12 ? "AM" : "PM"; break;
      case 'S': out += two(ss); break;
      case 'y': out += two(((y % 100) + 100) % 100); break;
      case 'Y': out += std::to_string(y); break;
      case '%': out.push_back('%'); break;
      default:
        out.push_back('%');
        out.push_back(c);
    }
  }
  return out;
}

namespace {

struct Frame {
  JObject vars;
  const Frame* parent = nullptr;
  const JValue* lookup(std::string_view name) const {
    for (const Frame* f = this; f; f = f->parent)
      if (const JValue* v = f->vars.find(name)) return v;
    return nullptr;
  }
};

enum class Flow { kNormal, kBreak, kContinue };

bool checked_add(int64_t a, int64_t b, int64_t& r) { return !__builtin_add_overflow(a, b, &r); }
bool checked_sub(int64_t a, int64_t b, int64_t& r) { return !__builtin_sub_overflow(a, b, &r); }
bool checked_mul(int64_t a, int64_t b, int64_t& r) { return !__builtin_mul_overflow(a, b, &r); }

// "messages[0].role"-style description of an expression, for error messages.
std::string describe(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kName: return e.name;
    case ExprKind::kAttr: return describe(*e.items[0]) + "." + e.name;
    case ExprKind::kIndex: return describe(*e.items[0]) + "[...]";
    case ExprKind::kCall: return describe(*e.items[0]) + "(...)";
    case ExprKind::kLiteral: return e.literal.repr();
    default: return "expression";
  }
}

class Evaluator {
 public:
  Evaluator(const RenderLimits& limits, int64_t now) : limits_(limits), now_(now) {
    env_.max_bytes = limits.max_output_bytes;
  }

  Result<std::string> run(const Program& program, const JObject& variables) {
    Frame root;
    install_globals(root);
    for (const auto& [k, v] : variables.entries) root.vars.set(k, v);
    root_ = &root;
    std::string out;
    HFS_TRY(exec_body(program.body, root, out));
    return out;
  }

 private:
  // ---- errors and limits ----
  static Error located(int line, int col, const Error& e) {
    if (e.message().rfind("chat template: ", 0) == 0) return e;
    return make_error(e.code(), "chat template: " + where(line, col) + ": " + e.message());
  }
  static Error fail(const Expr& at, ErrorCode code, const std::string& msg) {
    return make_error(code, "chat template: " + where(at.line, at.col) + ": " + msg);
  }
  Status step(int line, int col) {
    if (++steps_ > limits_.max_steps)
      return make_error(ErrorCode::kResourceExhausted, "chat template: " + where(line, col) + ": more than " +
                                                           std::to_string(limits_.max_steps) + " evaluation steps");
    return Ok{};
  }
  Status append(std::string& out, std::string_view s, int line, int col) {
    if (out.size() + s.size() > limits_.max_output_bytes)
      return make_error(ErrorCode::kResourceExhausted, "chat template: " + where(line, col) + ": output exceeds " +
                                                           std::to_string(limits_.max_output_bytes) + " bytes");
    out.append(s);
    return Ok{};
  }
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& depth) : d(depth) { ++d; }
    ~DepthGuard() { --d; }
  };
  Status check_depth(int line, int col) const {
    if (depth_ > limits_.max_depth)
      return make_error(ErrorCode::kResourceExhausted, "chat template: " + where(line, col) + ": nesting deeper than " +
                                                           std::to_string(limits_.max_depth) + " (recursive macro?)");
    return Ok{};
  }

  // ---- globals ----
  void install_globals(Frame& root) {
    root.vars.set("raise_exception", JValue::function("raise_exception", [](const CallArgs& a) -> Result<JValue> {
      std::string msg = a.positional.empty() ? std::string("(no message)") : a.positional[0].str();
      return make_error(ErrorCode::kInvalidArgument, "raise_exception: " + msg);
    }));
    root.vars.set("namespace", JValue::function("namespace", [](const CallArgs& a) -> Result<JValue> {
      JObject o;
      for (const JValue& p : a.positional) {
        if (!p.is_object()) return make_error(ErrorCode::kExecution, "namespace(): positional argument must be a dict");
        for (const auto& [k, v] : p.as_object().entries) o.set(k, v);
      }
      for (const auto& [k, v] : a.keyword) o.set(k, v);
      return JValue::ns(std::move(o));
    }));
    root.vars.set("dict", JValue::function("dict", [](const CallArgs& a) -> Result<JValue> {
      JObject o;
      for (const auto& [k, v] : a.keyword) o.set(k, v);
      return JValue::object(std::move(o));
    }));
    root.vars.set("range", JValue::function("range", [this](const CallArgs& a) -> Result<JValue> {
      int64_t start = 0, stop = 0, st = 1;
      for (const JValue& p : a.positional)
        if (!p.is_int() && !p.is_bool())
          return make_error(ErrorCode::kExecution, "range(): expected integers, got " + std::string(p.type_name()));
      if (a.positional.size() == 1) {
        stop = a.positional[0].as_int();
      } else if (a.positional.size() == 2 || a.positional.size() == 3) {
        start = a.positional[0].as_int();
        stop = a.positional[1].as_int();
        if (a.positional.size() == 3) st = a.positional[2].as_int();
      } else {
        return make_error(ErrorCode::kExecution, "range(): expected 1 to 3 arguments, got " +
                                                     std::to_string(a.positional.size()));
      }
      if (st == 0) return make_error(ErrorCode::kExecution, "range(): step must not be zero");
      long double count = st > 0 ? (static_cast<long double>(stop) - start + st - 1) / st
                                 : (static_cast<long double>(start) - stop - st - 1) / -st;
      if (count > static_cast<long double>(std::min<int64_t>(limits_.max_steps, static_cast<int64_t>(limits_.max_items))))
        return make_error(ErrorCode::kResourceExhausted, "range(): too many elements");
      JArray out;
      if (st > 0)
        for (int64_t i = start; i < stop; i += st) out.push_back(JValue::integer(i));
      else
        for (int64_t i = start; i > stop; i += st) out.push_back(JValue::integer(i));
      return JValue::array(std::move(out));
    }));
    if (now_ >= 0) {
      root.vars.set("strftime_now", JValue::function("strftime_now", [this](const CallArgs& a) -> Result<JValue> {
        if (a.positional.empty() || !a.positional[0].is_string())
          return make_error(ErrorCode::kExecution, "strftime_now(): expected a format string");
        return JValue::string(format_time(a.positional[0].as_string(), now_));
      }));
    }
  }

  // ---- statements ----
  Result<Flow> exec_body(const Body& body, Frame& frame, std::string& out) {
    DepthGuard g(depth_);
    for (const StmtPtr& sp : body) {
      const Stmt& s = *sp;
      HFS_TRY(step(s.line, s.col));
      HFS_TRY(check_depth(s.line, s.col));
      switch (s.kind) {
        case StmtKind::kText: HFS_TRY(append(out, s.text, s.line, s.col)); break;
        case StmtKind::kOutput: {
          HFS_ASSIGN_OR_RETURN(auto v, eval(*s.expr, frame));
          HFS_TRY(append(out, v.str(), s.line, s.col));
          break;
        }
        case StmtKind::kIf: {
          const Body* chosen = nullptr;
          for (size_t i = 0; i < s.conds.size(); ++i) {
            HFS_ASSIGN_OR_RETURN(auto c, eval(*s.conds[i], frame));
            if (c.truthy()) {
              chosen = &s.bodies[i];
              break;
            }
          }
          if (!chosen && s.bodies.size() > s.conds.size()) chosen = &s.bodies.back();
          if (chosen) {
            auto f = exec_body(*chosen, frame, out);
            if (!f) return f;
            if (f.value() != Flow::kNormal) return f;
          }
          break;
        }
        case StmtKind::kFor: {
          HFS_TRY(exec_for(s, frame, out));
          break;
        }
        case StmtKind::kSet: HFS_TRY(exec_set(s, frame)); break;
        case StmtKind::kMacro: frame.vars.set(s.text, make_macro(s)); break;
        case StmtKind::kCallBlock: {
          Frame* site = &frame;
          const Body* caller_body = &s.bodies[0];
          JValue caller = JValue::function("caller", [this, site, caller_body](const CallArgs&) -> Result<JValue> {
            std::string text;
            Frame inner;
            inner.parent = site;
            HFS_TRY(exec_body(*caller_body, inner, text));
            return JValue::string(std::move(text));
          });
          HFS_ASSIGN_OR_RETURN(auto v, eval_call(*s.expr, frame, &caller));
          HFS_TRY(append(out, v.str(), s.line, s.col));
          break;
        }
        case StmtKind::kBreak: return Flow::kBreak;
        case StmtKind::kContinue: return Flow::kContinue;
      }
    }
    return Flow::kNormal;
  }

  Status bind_targets(const Stmt& s, Frame& f, const JValue& item) {
    if (s.targets.size() == 1) {
      f.vars.set(s.targets[0], item);
      return Ok{};
    }
    if (!item.is_array() || item.as_array().size() != s.targets.size())
      return make_error(ErrorCode::kExecution, "chat template: " + where(s.line, s.col) + ": cannot unpack a " +
                                                   std::string(item.type_name()) + " into " +
                                                   std::to_string(s.targets.size()) + " variables");
    for (size_t i = 0; i < s.targets.size(); ++i) f.vars.set(s.targets[i], item.as_array()[i]);
    return Ok{};
  }

  Result<Flow> exec_for(const Stmt& s, Frame& frame, std::string& out) {
    HFS_ASSIGN_OR_RETURN(auto iter, eval(*s.expr, frame));
    JArray items;
    const JValue& it = iter;
    if (it.is_array()) {
      items = it.as_array();
    } else if (it.is_object()) {
      for (const auto& [k, _] : it.as_object().entries) items.push_back(JValue::string(k));
    } else if (it.is_string()) {
      auto r = apply_filter("list", it, CallArgs{}, env_);
      if (!r) return located(s.line, s.col, r.error());
      items = r->as_array();
    } else if (!it.is_undefined()) {
      return fail(*s.expr, ErrorCode::kExecution,
                  "cannot iterate over " + describe(*s.expr) + " (a " + std::string(it.type_name()) + ")");
    }
    if (s.cond) {
      JArray kept;
      for (const JValue& item : items) {
        HFS_TRY(step(s.line, s.col));
        Frame f;
        f.parent = &frame;
        HFS_TRY(bind_targets(s, f, item));
        HFS_ASSIGN_OR_RETURN(auto c, eval(*s.cond, f));
        if (c.truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      HFS_TRY(step(s.line, s.col));
      Frame f;
      f.parent = &frame;
      const JValue& item = items[static_cast<size_t>(i)];
      HFS_TRY(bind_targets(s, f, item));
      JObject loop;
      loop.entries.reserve(10);
      loop.entries.emplace_back("index0", JValue::integer(i));
      loop.entries.emplace_back("index", JValue::integer(i + 1));
      loop.entries.emplace_back("revindex0", JValue::integer(n - i - 1));
      loop.entries.emplace_back("revindex", JValue::integer(n - i));
      loop.entries.emplace_back("first", JValue::boolean(i == 0));
      loop.entries.emplace_back("last", JValue::boolean(i == n - 1));
      loop.entries.emplace_back("length", JValue::integer(n));
      loop.entries.emplace_back("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : JValue());
      loop.entries.emplace_back("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : JValue());
      loop.entries.emplace_back("cycle", JValue::function("loop.cycle", [i](const CallArgs& a) -> Result<JValue> {
        if (a.positional.empty()) return make_error(ErrorCode::kExecution, "loop.cycle(): needs at least one value");
        return a.positional[static_cast<size_t>(i) % a.positional.size()];
      }));
      f.vars.set("loop", JValue::object(std::move(loop)));
      auto flow = exec_body(s.bodies[0], f, out);
      if (!flow) return flow;
      if (flow.value() == Flow::kBreak) break;
    }
    if (n == 0 && s.bodies.size() > 1) {
      Frame f;
      f.parent = &frame;
      auto flow = exec_body(s.bodies[1], f, out);
      if (!flow) return flow;
    }
    return Flow::kNormal;
  }

  Status exec_set(const Stmt& s, Frame& frame) {
    JValue value;
    if (!s.bodies.empty()) {
      std::string text;
      HFS_TRY(exec_body(s.bodies[0], frame, text));
      value = JValue::string(std::move(text));
    } else {
      HFS_ASSIGN_OR_RETURN(auto v, eval(*s.expr, frame));
      value = std::move(v);
    }
    if (!s.text.empty()) {
      const JValue* target = frame.lookup(s.targets[0]);
      if (!target || !target->is_namespace())
        return make_error(ErrorCode::kExecution, "chat template: " + where(s.line, s.col) + ": cannot set attribute '" +
                                                     s.text + "' of '" + s.targets[0] + "': it is a " +
                                                     std::string(target ? target->type_name() : "undefined") +
                                                     ", not a namespace()");
      target->namespace_object().set(s.text, std::move(value));
      return Ok{};
    }
    if (s.targets.size() == 1) {
      frame.vars.set(s.targets[0], std::move(value));
      return Ok{};
    }
    return bind_targets(s, frame, value);
  }

  JValue make_macro(const Stmt& s) {
    const Stmt* def = &s;
    return JValue::function(s.text, [this, def](const CallArgs& a) -> Result<JValue> { return call_macro(*def, a); });
  }

  Result<JValue> call_macro(const Stmt& def, const CallArgs& a) {
    DepthGuard g(depth_);
    HFS_TRY(check_depth(a.line, a.col));
    HFS_TRY(step(a.line, a.col));
    if (a.positional.size() > def.params.size())
      return make_error(ErrorCode::kExecution, "macro '" + def.text + "' takes " + std::to_string(def.params.size()) +
                                                   " arguments, got " + std::to_string(a.positional.size()));
    Frame f;
    f.parent = root_;
    for (const auto& [k, v] : a.keyword) {
      bool known = k == "caller";
      for (const MacroParam& p : def.params) known = known || p.name == k;
      if (!known) return make_error(ErrorCode::kExecution, "macro '" + def.text + "' has no parameter '" + k + "'");
      if (k == "caller") f.vars.set(k, v);
    }
    for (size_t i = 0; i < def.params.size(); ++i) {
      const MacroParam& p = def.params[i];
      const JValue* given = a.get(i, p.name);
      if (given) {
        f.vars.set(p.name, *given);
      } else if (p.default_value) {
        HFS_ASSIGN_OR_RETURN(auto d, eval(*p.default_value, f));
        f.vars.set(p.name, std::move(d));
      } else {
        f.vars.set(p.name, JValue());
      }
    }
    std::string text;
    HFS_TRY(exec_body(def.bodies[0], f, text));
    return JValue::string(std::move(text));
  }

  // ---- expressions ----
  Result<JValue> get_attr(const Expr& at, const JValue& base, const std::string& name) {
    if (base.is_undefined())
      return fail(at, ErrorCode::kExecution, "'" + describe(*at.items[0]) + "' is undefined (reading ." + name + ")");
    if (base.is_object() || base.is_string()) {
      JValue m = get_method(base, name, env_);
      if (!m.is_undefined()) return m;
    }
    if (base.is_object() || base.is_namespace()) {
      const JValue* v = base.as_object().find(name);
      return v ? *v : JValue();
    }
    return JValue();
  }

  Result<JValue> get_item(const Expr& at, const JValue& base, const JValue& key) {
    if (base.is_undefined())
      return fail(at, ErrorCode::kExecution, "'" + describe(*at.items[0]) + "' is undefined (subscripting it)");
    if ((base.is_array() || base.is_string()) && (key.is_int() || key.is_bool())) return py_index(base, key.as_int());
    if ((base.is_object() || base.is_namespace()) && key.is_string()) {
      const JValue* v = base.as_object().find(key.as_string());
      if (v) return *v;
      return get_attr(at, base, key.as_string());
    }
    return JValue();
  }

  Result<JValue> eval_call(const Expr& e, Frame& frame, const JValue* caller) {
    auto callee = eval(*e.items[0], frame);
    if (!callee) return callee;
    if (!callee->is_function()) {
      std::string what = callee->is_undefined() ? "undefined" : "a " + std::string(callee->type_name());
      return fail(e, ErrorCode::kExecution, "'" + describe(*e.items[0]) + "' is not callable (it is " + what + ")");
    }
    CallArgs args;
    args.line = e.line;
    args.col = e.col;
    HFS_TRY(eval_args(e, frame, args));
    if (caller) args.keyword.emplace_back("caller", *caller);
    auto r = callee->as_function()(args);
    if (!r) return located(e.line, e.col, r.error());
    return r;
  }

  Status eval_args(const Expr& e, Frame& frame, CallArgs& args) {
    for (size_t i = 1; i < e.items.size(); ++i) {
      HFS_ASSIGN_OR_RETURN(auto v, eval(*e.items[i], frame));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [k, ke] : e.kwargs) {
      HFS_ASSIGN_OR_RETURN(auto v, eval(*ke, frame));
      args.keyword.emplace_back(k, std::move(v));
    }
    return Ok{};
  }

  Result<JValue> eval(const Expr& e, Frame& frame) {
    DepthGuard g(depth_);
    HFS_TRY(check_depth(e.line, e.col));
    switch (e.kind) {
      case ExprKind::kLiteral: return e.literal;
      case ExprKind::kName: {
        const JValue* v = frame.lookup(e.name);
        return v ? *v : JValue();
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        JArray a;
        for (const ExprPtr& item : e.items) {
          auto v = eval(*item, frame);
          if (!v) return v;
          a.push_back(std::move(v.value()));
        }
        return JValue::array(std::move(a));
      }
      case ExprKind::kDict: {
        JObject o;
        for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
          auto k = eval(*e.items[i], frame);
          if (!k) return k;
          auto v = eval(*e.items[i + 1], frame);
          if (!v) return v;
          if (!k->is_string() && !k->is_number())
            return fail(*e.items[i], ErrorCode::kExecution,
                        "dict keys must be strings or numbers, got " + std::string(k->type_name()));
          o.set(k->str(), std::move(v.value()));
        }
        return JValue::object(std::move(o));
      }
      case ExprKind::kAttr: {
        auto base = eval(*e.items[0], frame);
        if (!base) return base;
        return get_attr(e, base.value(), e.name);
      }
      case ExprKind::kIndex: {
        auto base = eval(*e.items[0], frame);
        if (!base) return base;
        auto key = eval(*e.items[1], frame);
        if (!key) return key;
        return get_item(e, base.value(), key.value());
      }
      case ExprKind::kSlice: {
        auto base = eval(*e.items[0], frame);
        if (!base) return base;
        JValue bounds[3];
        for (int i = 0; i < 3; ++i) {
          if (!e.items[static_cast<size_t>(i) + 1]) continue;
          auto b = eval(*e.items[static_cast<size_t>(i) + 1], frame);
          if (!b) return b;
          bounds[i] = std::move(b.value());
        }
        if (base->is_undefined())
          return fail(e, ErrorCode::kExecution, "'" + describe(*e.items[0]) + "' is undefined (slicing it)");
        auto r = py_slice(base.value(), &bounds[0], &bounds[1], &bounds[2]);
        if (!r) return located(e.line, e.col, r.error());
        return r;
      }
      case ExprKind::kCall: return eval_call(e, frame, nullptr);
      case ExprKind::kFilter: {
        auto operand = eval(*e.items[0], frame);
        if (!operand) return operand;
        CallArgs args;
        args.line = e.line;
        args.col = e.col;
        HFS_TRY(eval_args(e, frame, args));
        auto r = apply_filter(e.name, operand.value(), args, env_);
        if (!r) return located(e.line, e.col, r.error());
        return r;
      }
      case ExprKind::kTest: {
        auto operand = eval(*e.items[0], frame);
        if (!operand) return operand;
        CallArgs args;
        HFS_TRY(eval_args(e, frame, args));
        auto r = apply_test(e.name, operand.value(), args);
        if (!r) return located(e.line, e.col, r.error());
        return JValue::boolean(r.value() != e.negated);
      }
      case ExprKind::kUnary: {
        auto v = eval(*e.items[0], frame);
        if (!v) return v;
        if (e.name == "not") return JValue::boolean(!v->truthy());
        if (!v->is_number())
          return fail(e, ErrorCode::kExecution, "bad operand type for unary " + e.name + ": " + std::string(v->type_name()));
        if (e.name == "+") return v->is_float() ? v.value() : JValue::integer(v->as_int());
        if (v->is_float()) return JValue::floating(-v->as_float());
        int64_t r;
        if (!checked_sub(0, v->as_int(), r)) return fail(e, ErrorCode::kExecution, "integer overflow in unary -");
        return JValue::integer(r);
      }
      case ExprKind::kBinary: {
        auto l = eval(*e.items[0], frame);
        if (!l) return l;
        if (e.name == "and") return l->truthy() ? eval(*e.items[1], frame) : l;
        if (e.name == "or") return l->truthy() ? l : eval(*e.items[1], frame);
        auto r = eval(*e.items[1], frame);
        if (!r) return r;
        return binary(e, l.value(), r.value());
      }
      case ExprKind::kTernary: {
        auto c = eval(*e.items[1], frame);
        if (!c) return c;
        if (c->truthy()) return eval(*e.items[0], frame);
        if (e.items[2]) return eval(*e.items[2], frame);
        return JValue();
      }
    }
    return JValue();
  }

  Status check_size(const Expr& e, size_t n) const {
    if (n > limits_.max_output_bytes)
      return fail(e, ErrorCode::kResourceExhausted, "value of " + std::to_string(n) + " bytes/items exceeds the limit " +
                                                        std::to_string(limits_.max_output_bytes));
    return Ok{};
  }

  Status check_items(const Expr& e, size_t n) const {
    if (n > limits_.max_items)
      return fail(e, ErrorCode::kResourceExhausted,
                  "list of " + std::to_string(n) + " items exceeds the limit " + std::to_string(limits_.max_items));
    return Ok{};
  }

  Result<JValue> binary(const Expr& e, const JValue& l, const JValue& r) {
    const std::string& op = e.name;
    auto type_err = [&]() {
      return fail(e, ErrorCode::kExecution, "unsupported operand types for " + op + ": '" + std::string(l.type_name()) +
                                                "' and '" + std::string(r.type_name()) + "'");
    };
    if (op == "==") return JValue::boolean(l.equals(r));
    if (op == "!=") return JValue::boolean(!l.equals(r));
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      auto c = py_compare(l, r);
      if (!c) return located(e.line, e.col, c.error());
      int v = c.value();
      return JValue::boolean(op == "<" ? v < 0 : op == ">" ? v > 0 : op == "<=" ? v <= 0 : v >= 0);
    }
    if (op == "in" || op == "not in") {
      bool found;
      if (r.is_string()) {
        if (!l.is_string())
          return fail(e, ErrorCode::kExecution, "'in <string>' requires a string on the left, got " + std::string(l.type_name()));
        found = r.as_string().find(l.as_string()) != std::string::npos;
      } else if (r.is_array()) {
        found = false;
        for (const JValue& x : r.as_array()) found = found || x.equals(l);
      } else if (r.is_object() || r.is_namespace()) {
        found = l.is_string() && r.as_object().find(l.as_string()) != nullptr;
      } else if (r.is_undefined()) {
        found = false;
      } else {
        return fail(e, ErrorCode::kExecution, "argument of type '" + std::string(r.type_name()) + "' is not a container");
      }
      return JValue::boolean(op == "in" ? found : !found);
    }
    if (op == "~") {
      std::string s = l.str();
      std::string t = r.str();
      HFS_TRY(check_size(e, s.size() + t.size()));
      return JValue::string(s + t);
    }
    if (op == "+") {
      if (l.is_string() && r.is_string()) {
        HFS_TRY(check_size(e, l.as_string().size() + r.as_string().size()));
        return JValue::string(l.as_string() + r.as_string());
      }
      if (l.is_array() && r.is_array()) {
        HFS_TRY(check_items(e, l.as_array().size() + r.as_array().size()));
        JArray a = l.as_array();
        a.insert(a.end(), r.as_array().begin(), r.as_array().end());
        return JValue::array(std::move(a));
      }
    }
    if (op == "*" && ((l.is_string() || l.is_array()) != (r.is_string() || r.is_array()))) {
      const JValue& seq = l.is_string() || l.is_array() ? l : r;
      const JValue& times = l.is_string() || l.is_array() ? r : l;
      if (!times.is_int() && !times.is_bool()) return type_err();
      int64_t n = std::max<int64_t>(0, times.as_int());
      size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_array().size();
      const size_t cap = seq.is_string() ? limits_.max_output_bytes : limits_.max_items;
      if (unit > 0 && static_cast<uint64_t>(n) > cap / unit)
        return fail(e, ErrorCode::kResourceExhausted, "repetition result exceeds the limit");
      if (seq.is_string()) {
        std::string s;
        for (int64_t i = 0; i < n; ++i) s += seq.as_string();
        return JValue::string(std::move(s));
      }
      JArray a;
      for (int64_t i = 0; i < n; ++i) a.insert(a.end(), seq.as_array().begin(), seq.as_array().end());
      return JValue::array(std::move(a));
    }
    if (!l.is_number() || !r.is_number()) return type_err();
    bool ints = !l.is_float() && !r.is_float();
    int64_t a = l.as_int(), b = r.as_int(), out = 0;
    double x = l.as_float(), y = r.as_float();
    if (op == "+") {
      if (!ints) return JValue::floating(x + y);
      if (!checked_add(a, b, out)) return fail(e, ErrorCode::kExecution, "integer overflow in +");
      return JValue::integer(out);
    }
    if (op == "-") {
      if (!ints) return JValue::floating(x - y);
      if (!checked_sub(a, b, out)) return fail(e, ErrorCode::kExecution, "integer overflow in -");
      return JValue::integer(out);
    }
    if (op == "*") {
      if (!ints) return JValue::floating(x * y);
      if (!checked_mul(a, b, out)) return fail(e, ErrorCode::kExecution, "integer overflow in *");
      return JValue::integer(out);
    }
    if (op == "/") {
      if (y == 0) return fail(e, ErrorCode::kExecution, "division by zero");
      return JValue::floating(x / y);
    }
    if (op == "//" || op == "%") {
      if (ints ? b == 0 : y == 0) return fail(e, ErrorCode::kExecution, "integer division or modulo by zero");
      if (ints) {
        if (a == std::numeric_limits<int64_t>::min() && b == -1)
          return fail(e, ErrorCode::kExecution, "integer overflow in " + op);
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
          --q;
          m += b;
        }
        return JValue::integer(op == "//" ? q : m);
      }
      if (op == "//") return JValue::floating(std::floor(x / y));
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return JValue::floating(m);
    }
    if (op == "**") {
      if (ints && b >= 0) {
        if (a == 0 || a == 1) return JValue::integer(b == 0 ? 1 : a);
        if (a == -1) return JValue::integer(b % 2 == 0 ? 1 : -1);
        int64_t result = 1;
        for (int64_t k = 0; k < b; ++k)  // |a| >= 2: overflows within 63 rounds
          if (!checked_mul(result, a, result)) return fail(e, ErrorCode::kExecution, "integer overflow in **");
        return JValue::integer(result);
      }
      return JValue::floating(std::pow(x, y));
    }
    return type_err();
  }

  RenderLimits limits_;
  int64_t now_;
  BuiltinEnv env_;
  const Frame* root_ = nullptr;
  int depth_ = 0;
  int64_t steps_ = 0;
};

}  // namespace

Result<std::string> evaluate(const Program& program, const JObject& variables, const RenderLimits& limits,
                             int64_t now_unix_seconds) {
  Evaluator ev(limits, now_unix_seconds);
  return ev.run(program, variables);
}

}  // namespace hfs::chat
