// constrain/budget.h — the ConstraintLimits of one compile, with its clock: what every builder (GBNF
// parser, regex compiler, JSON Schema converter) and compile() check before the work each limit bounds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "hfstatic/constraint.h"
#include "hfstatic/error.h"

namespace hfs::cst {

class Budget {
 public:
  explicit Budget(const ConstraintLimits& limits = {})
      : limits_(limits), deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.max_compile_ms)) {}

  const ConstraintLimits& limits() const { return limits_; }

  // The checks are cheap; the errors take `what`, naming the source and place ("json schema: /properties/a",
  // "regex: offset 12"), built only when a limit is hit.
  bool over_time() const { return std::chrono::steady_clock::now() > deadline_; }
  Error time_error(const std::string& what) const {
    return Error(ErrorCode::kInvalidArgument, what + ": compiling took longer than " + std::to_string(limits_.max_compile_ms) +
                                                  " ms (ConstraintLimits::max_compile_ms; simplify the constraint)");
  }
  [[nodiscard]] Status time(const std::string& what) const {
    if (!over_time()) return Ok{};
    return time_error(what);
  }
  bool too_deep(int64_t depth) const { return depth > limits_.max_nesting; }
  Error depth_error(const std::string& what) const {
    return Error(ErrorCode::kInvalidArgument, what + ": nesting deeper than " + std::to_string(limits_.max_nesting) +
                                                  " levels (ConstraintLimits::max_nesting)");
  }
  [[nodiscard]] Status elements(int64_t n, const std::string& what) const {
    if (n <= limits_.max_elements) return Ok{};
    return make_error(ErrorCode::kInvalidArgument, what + ": the grammar expands to more than " +
                                                       std::to_string(limits_.max_elements) +
                                                       " elements (ConstraintLimits::max_elements; lower the repetition counts)");
  }

 private:
  ConstraintLimits limits_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace hfs::cst
