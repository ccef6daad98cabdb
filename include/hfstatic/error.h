// hfstatic/error.h — the one error vocabulary of the public API.
//
// Every fallible call returns `Status` (no value) or `Result<T>`. No exception crosses the public API;
// the Python binding turns a failed Status into an exception.
//
//   hfs::Result<std::shared_ptr<const hfs::Program>> p = hfs::Program::load("model.hfs");
//   if (!p) { std::fprintf(stderr, "%s\n", p.error().to_string().c_str()); return 1; }
//   std::printf("%zu methods\n", p.value()->methods().size());
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// Inside a fallible function, HFS_TRY and HFS_ASSIGN_OR_RETURN (end of file) propagate errors instead.
//
// Access to the value:
//   r.value(), *r, r->      checked: on an error they never throw (no exception crosses the API); they
//                           print "hfstatic: Result::value() called on an error: <code>: <message>" to
//                           stderr and abort, so a missed check fails loudly at the call that missed it.
//   r.value_or(fallback)    the value, or `fallback` when r holds an error (no abort).
//   if (r) ... r.error()    test first; error() on a success is also a checked abort.
//
// Messages name the file/offset/tensor/key/method and say expected vs got, e.g.
//   "format: model.hfs: tensor 'w_q_0': byte range [4096, 8192) exceeds file size 6000".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "hfstatic/export_macro.h"

namespace hfs {

// Codes are grouped by layer (high byte) so callers can branch on the group without listing codes.
enum class ErrorCode : uint16_t {
  kOk = 0,
  // 0x01xx: generic
  kInvalidArgument = 0x0101,
  kOutOfRange = 0x0102,
  kNotFound = 0x0103,
  kUnsupported = 0x0104,
  kInternal = 0x0105,
  kCancelled = 0x0106,
  kResourceExhausted = 0x0107,
  kPermissionDenied = 0x0108,  // e.g. a gated Hub repository without a token
  // 0x02xx: I/O
  kIo = 0x0201,
  kNetwork = 0x0202,           // a transfer failed (no route, refused, dropped), not an HTTP answer
  kChecksumMismatch = 0x0203,  // downloaded bytes whose size or sha256 differs from what was announced
  // 0x03xx: program file format and verification
  kBadMagic = 0x0301,
  kBadVersion = 0x0302,
  kTruncated = 0x0303,
  kBadManifest = 0x0304,
  kTensorOutOfRange = 0x0305,
  kTensorOverlap = 0x0306,
  kTensorSizeMismatch = 0x0307,
  kDuplicateName = 0x0308,
  kUndefinedValue = 0x0309,
  kValueRedefined = 0x030a,
  kCycle = 0x030b,
  kUnknownOp = 0x030c,
  kUnknownAttribute = 0x030d,
  kBadAttribute = 0x030e,
  kShapeMismatch = 0x030f,
  kDTypeMismatch = 0x0310,
  kOutputNotProduced = 0x0311,
  kBadAlias = 0x0312,
  kUseAfterInPlace = 0x0313,
  kMissingMethod = 0x0314,
  // 0x04xx: execution
  kExecution = 0x0401,
  kBadBinding = 0x0402,
  // 0x05xx: I/O contract and runner
  kUnknownContract = 0x0501,
  kMissingMetadata = 0x0502,
  kBadMetadata = 0x0503,
  kContractViolation = 0x0504,
  kCapacityExceeded = 0x0505,
  kNeedsReset = 0x0506,
  // 0x06xx: export (HF checkpoints)
  kUnsupportedModel = 0x0601,
  kMissingTensor = 0x0602,
  kBadCheckpoint = 0x0603,
  // 0x07xx: tokenizer
  kTokenizer = 0x0701,
};

// Stable lower-case name of a code, e.g. "tensor_out_of_range".
HFS_API std::string_view error_code_name(ErrorCode code);

class [[nodiscard]] HFS_API Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>"
  std::string to_string() const;
  // Prefixes context, e.g. err.with_context("model.hfs") → "model.hfs: <message>".
  Error with_context(std::string_view context) const;

 private:
  ErrorCode code_;
  std::string message_;
};

namespace detail {
// Prints "hfstatic: Result::<what>() called on ..." with the error (if any) to stderr, then aborts.
[[noreturn]] HFS_API void result_access_failed(const char* what, const Error* error);
}  // namespace detail

// A Status is a Result with no value.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return *checked(); }
  const T& value() const& { return *checked(); }
  T&& value() && { return std::move(*checked()); }
  T* operator->() { return checked(); }
  const T* operator->() const { return checked(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // The value, or `fallback` converted to T when this holds an error.
  template <typename U>
  T value_or(U&& fallback) const& { return ok() ? *std::get_if<0>(&v_) : static_cast<T>(std::forward<U>(fallback)); }
  template <typename U>
  T value_or(U&& fallback) && {
    return ok() ? std::move(*std::get_if<0>(&v_)) : static_cast<T>(std::forward<U>(fallback));
  }
  const Error& error() const {
    const Error* e = std::get_if<1>(&v_);
    if (e == nullptr) detail::result_access_failed("error", nullptr);
    return *e;
  }

 private:
  T* checked() {
    if (T* v = std::get_if<0>(&v_)) return v;
    detail::result_access_failed("value", std::get_if<1>(&v_));
  }
  const T* checked() const {
    if (const T* v = std::get_if<0>(&v_)) return v;
    detail::result_access_failed("value", std::get_if<1>(&v_));
  }

  std::variant<T, Error> v_;
};

struct HFS_API Ok {};
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Ok) {}  // NOLINT
  Result(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_{ErrorCode::kOk, {}};
  bool ok_ = true;
};
using Status = Result<void>;

inline Error make_error(ErrorCode code, std::string message) { return Error(code, std::move(message)); }

}  // namespace hfs

// Propagates a failed Status/Result from the enclosing function. One small macro, because C++ has no `?`.
#define HFS_TRY(expr)                                 \
  do {                                                \
    auto hfs_try_status_ = (expr);                    \
    if (!hfs_try_status_.ok()) return hfs_try_status_.error(); \
  } while (0)

// HFS_TRY with context: the error's message gains "<context>: " in front (evaluated only on failure).
//   HFS_TRY_CTX(check_attrs(op, attrs), "node 'l0.attn'");
#define HFS_TRY_CTX(expr, context)                                                   \
  do {                                                                               \
    auto hfs_try_status_ = (expr);                                                   \
    if (!hfs_try_status_.ok()) return hfs_try_status_.error().with_context(context); \
  } while (0)

// Declares `decl` from the value of a Result, or returns its error from the enclosing function
// (the `?` C++ lacks; a function cannot return from its caller, hence macros):
//
//   HFS_ASSIGN_OR_RETURN(auto program, Program::load(path));          // program: shared_ptr<const Program>
//   HFS_ASSIGN_OR_RETURN_CTX(auto doc, parse_json(text), "config.json");  // error: "config.json: <message>"
//
// The value is moved out of the Result into `decl` (any declaration: `auto x`, `const auto& x`, `T x`).
// Each expands to several statements in the current scope: use it as a statement inside braces, at most
// once per line. The context, a string_view-convertible expression, is evaluated only on failure.
// `decl` must not contain a top-level comma; `expr` may (HFS_ASSIGN_OR_RETURN_CTX: wrap it in parentheses).
#define HFS_ASSIGN_OR_RETURN(decl, ...)                                                            \
  auto HFS_CONCAT_(hfs_result_, __LINE__) = (__VA_ARGS__);                                         \
  if (!HFS_CONCAT_(hfs_result_, __LINE__).ok()) return HFS_CONCAT_(hfs_result_, __LINE__).error(); \
  decl = std::move(HFS_CONCAT_(hfs_result_, __LINE__)).value()
#define HFS_ASSIGN_OR_RETURN_CTX(decl, expr, context)                        \
  auto HFS_CONCAT_(hfs_result_, __LINE__) = (expr);                          \
  if (!HFS_CONCAT_(hfs_result_, __LINE__).ok())                              \
    return HFS_CONCAT_(hfs_result_, __LINE__).error().with_context(context); \
  decl = std::move(HFS_CONCAT_(hfs_result_, __LINE__)).value()

// Token pasting after expansion, so __LINE__ becomes a number: hfs_result_42.
#define HFS_CONCAT_(a, b) HFS_CONCAT_IMPL_(a, b)
#define HFS_CONCAT_IMPL_(a, b) a##b
