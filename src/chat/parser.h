// Chat-template parser: tokens → syntax tree (chat/ast.h), with Jinja2's operator precedence
// (or < and < not < comparisons/in < + - < ~ < * / // % < ** < unary < filters/tests/postfix).
//
// Statements outside the supported subset (include, import, extends, block, raw, filter, with, ...)
// are rejected with kUnsupported naming the statement and its line/column; malformed syntax with
// kInvalidArgument. Nesting is bounded (200) so hostile templates cannot exhaust the stack.
#pragma once

#include <memory>
#include <string_view>

#include "chat/ast.h"
#include "hfstatic/error.h"

namespace hfs::chat {

[[nodiscard]] Result<std::shared_ptr<const Program>> parse_program(std::string_view source);

}  // namespace hfs::chat
