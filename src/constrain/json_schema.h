// constrain/json_schema.h — a JSON Schema as a grammar in llama.cpp's GBNF syntax (root rule `root`), so that
// constrained decoding (the grammar matcher and token masks of this layer) produces documents that parse
// and validate against the schema.
//
// Sound before complete: every document the grammar accepts validates against the schema, but not every
// valid document is accepted where accepting it would cost correctness or bound nothing:
//   - objects hold the listed `properties` only, in the schema's order (required ones always, optional ones
//     may be left out); extra keys are generated only for objects without `properties` (a map whose values
//     follow `additionalProperties`, any JSON value when it is absent or true);
//   - numbers have at most 16 integer and 16 fraction digits and a 3-digit exponent, so a number always ends;
//     under minimum/maximum/exclusive bounds (json_number_range.h) no exponent, and every such number inside
//     the bounds, both exactly and read as a double (as validators read it);
//   - whitespace between tokens is nothing, one space, or a newline and up to 20 spaces or tabs;
//   - `oneOf` is generated as `anyOf`: its branches must not overlap (a document matching two branches
//     would be invalid), which the schema's author guarantees, as with tagged unions.
// Supported: type (one or a list), properties, required, additionalProperties, enum, const, items,
// prefixItems, minItems, maxItems, anyOf, oneOf, local $ref (#/$defs/..., #/definitions/..., #), string
// minLength/maxLength, format date, time, date-time, uuid, email, hostname, ipv4, ipv6, uri, integer and
// number bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum), integer multipleOf, allOf,
// uniqueItems over an enum, and pattern (json_pattern.h; not beside
// minLength, maxLength, format, const or enum); const and enum take no sibling but a "type" every listed
// value has (they list the documents; a sibling would filter them); annotations (title, description, default,
// examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are ignored. Any other keyword is an
// error naming it and where it is (e.g. `json schema: /properties/age: unsupported keyword "not"`),
// never silently ignored.
//
//   auto g = hfs::json_schema_to_gbnf(R"({"type": "object", "properties": {"name": {"type": "string"}},
//                                         "required": ["name"]})");
//   if (!g) return g.error();   // *g: "root ::= ..." GBNF text
#pragma once

#include <string>
#include <string_view>

#include "constrain/budget.h"
#include "hfstatic/constraint.h"
#include "hfstatic/error.h"

namespace hfs {

// The schema (JSON text) as GBNF. kInvalidArgument for malformed JSON, a schema that accepts nothing
// (false), an unresolvable $ref, a bad bound (minItems > maxItems) or an unsupported keyword.
// `limits` bound the document's and the schema's nesting, the repetitions written and the time taken
// (errors name the limit and the schema path).
[[nodiscard]] Result<std::string> json_schema_to_gbnf(std::string_view schema_json, const ConstraintLimits& limits = {});
// The same within a budget whose clock has already started (converting, then compiling).
[[nodiscard]] Result<std::string> json_schema_to_gbnf(std::string_view schema_json, const cst::Budget& budget);

}  // namespace hfs
