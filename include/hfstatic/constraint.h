// hfstatic/constraint.h — structured output: grammars and regexes that constrain generation.
//
// A Grammar is compiled once from llama.cpp's GBNF syntax, a regular expression (the whole output must
// match) or the built-in json_object (any JSON object). A GrammarMatcher follows UTF-8 bytes through it
// (a code point may be split across feeds). A TokenConstraint pairs a grammar with a vocabulary: each step
// it computes which token ids keep the output a valid prefix — by walking a byte trie of the vocabulary
// built once (TokenVocabulary), pruning every subtree whose prefix the grammar already rejects — and masks
// the rest of the logits to −inf. Special tokens are never allowed; end tokens only where the grammar is
// complete. Generation uses it through GenerationConfig::constraint (llm_runner.h).
//
//   auto g = hfs::Grammar::from_gbnf("root ::= \"yes\" | \"no\"\n");
//   if (!g) { std::fprintf(stderr, "%s\n", g.error().to_string().c_str()); return 1; }
//   hfs::GrammarMatcher m(*g);
//   bool ok = m.feed("ye");                       // true: a valid prefix (m.complete() is false)
//   hfs::GenerationConfig gen;
//   gen.constraint = *g;                          // or hfs::Grammar::json_object(), Grammar::from_regex("\\d+"),
//                                                 // Grammar::from_json_schema(R"({"type": "integer"})")
//   auto out = runner->generate(prompt, gen);     // tokens spelling "yes" or "no", then EOS
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// GBNF: rules `name ::= alternatives` (start rule `root`), "literals" with \n \t \r \\ \" \xHH \uHHHH
// \UHHHHHHHH escapes, classes [a-z] [^…], `.` (any character), ( ) groups, | * + ? {m} {m,} {m,n},
// `#` comments. Errors are kInvalidArgument with line and column: "grammar line 3, column 12: expected
// '::=' after rule name \"value\"". Left-recursive rules (x ::= x "a") are rejected by name.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"

namespace hfs {


// Bounds on compiling a constraint, so that no schema, regex or grammar — from a request or the command
// line — can exhaust the stack, memory or time of the process compiling it. Each is checked before the
// work it bounds, and running into one is kInvalidArgument naming the limit, its value and how to raise
// it ("json schema: /properties/a/items: nesting deeper than 64 levels (ConstraintLimits::max_nesting)").
// The defaults hold every practical schema (docs/structured-output.md, "Limits").
struct HFS_API ConstraintLimits {
  // Levels of nesting in the source: JSON arrays/objects in a schema document and subschemas inside
  // subschemas (a $ref chain counts), groups inside groups in a regex or GBNF rule. Also bounds how deeply
  // the compiled grammar's rules start with other rules (× 16: each source level adds a few helper rules).
  int max_nesting = 64;
  // The compiled grammar's size: code-point classes and rule references once every repetition
  // ({m,n}, minLength, maxItems) is expanded. Memory and matching time are linear in it.
  int64_t max_elements = 1'000'000;
  // Wall-clock time for compiling (parsing, converting, checking), in milliseconds.
  int64_t max_compile_ms = 2000;
  // Parse stacks a matcher may hold after one character: an ambiguous pattern like (a|a)* or ((a+)+)+
  // multiplies them; a step that would exceed this refuses the character instead of slowing every step.
  int32_t max_states = 1024;
};

class HFS_API Grammar {
 public:
  struct Impl;
  ~Grammar();
  // GBNF text; `root` names the start rule.
  [[nodiscard]] static Result<std::shared_ptr<const Grammar>> from_gbnf(std::string_view text,
                                                                       std::string_view root = "root");
  [[nodiscard]] static Result<std::shared_ptr<const Grammar>> from_gbnf(std::string_view text, std::string_view root,
                                                                       const ConstraintLimits& limits);
  // A regular expression the whole output must match (see docs/structured-output.md for the subset:
  // classes, \d \w \s, groups, alternation, * + ? {m,n}; no backreferences or lookaround).
  [[nodiscard]] static Result<std::shared_ptr<const Grammar>> from_regex(std::string_view pattern,
                                                                        const ConstraintLimits& limits = {});
  // A JSON Schema (its JSON text): documents the grammar accepts parse and validate against it. The subset
  // and what is generated (listed properties in the schema's order, bounded numbers) are in
  // docs/structured-output.md; an unsupported keyword is kInvalidArgument naming it and where it is.
  [[nodiscard]] static Result<std::shared_ptr<const Grammar>> from_json_schema(std::string_view schema_json,
                                                                              const ConstraintLimits& limits = {});
  // The GBNF text from_json_schema compiles (to read, or to give llama.cpp the same grammar).
  [[nodiscard]] static Result<std::string> json_schema_gbnf(std::string_view schema_json,
                                                            const ConstraintLimits& limits = {});
  // Any JSON object (RFC 8259 values inside, whitespace limited so a model cannot pad forever).
  static std::shared_ptr<const Grammar> json_object();
  // The GBNF text json_object() is compiled from.
  static std::string_view json_object_gbnf();

  const Impl& impl() const { return *impl_; }

 private:
  explicit Grammar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Bytes through a grammar. Copyable (a copy continues independently).
class HFS_API GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(const GrammarMatcher&);
  GrammarMatcher& operator=(const GrammarMatcher&);
  // Feeds bytes. True when the output so far is still a prefix of something the grammar accepts; false
  // leaves the matcher as it was before the call.
  [[nodiscard]] bool feed(std::string_view bytes);
  // The output so far is accepted as a whole (and does not end inside a UTF-8 character).
  bool complete() const;
  // Some non-empty continuation is still possible.
  bool can_continue() const;
  void reset();

  struct State;

 private:
  friend class TokenConstraint;
  std::shared_ptr<const Grammar> grammar_;
  std::unique_ptr<State> st_;
};

// Each token id's bytes, arranged as a byte trie, built once per vocabulary and shared by every
// TokenConstraint over it.
class HFS_API TokenVocabulary {
 public:
  struct Impl;
  ~TokenVocabulary();
  // `bytes[id]`: what the token adds to the output. Ids in `excluded` (special tokens, holes) are never
  // allowed; nor are empty strings. `end_ids` end generation and are allowed only where complete.
  [[nodiscard]] static Result<std::shared_ptr<const TokenVocabulary>> create(std::vector<std::string> bytes,
                                                                            std::span<const int32_t> excluded,
                                                                            std::span<const int32_t> end_ids);
  // From a tokenizer: hfs::token_vocabulary (llm_runner.h; the grammar layer knows bytes, not tokenizers).
  int32_t size() const;
  std::string_view bytes(int32_t id) const;
  bool is_end(int32_t id) const;
  const Impl& impl() const { return *impl_; }

 private:
  explicit TokenVocabulary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A grammar over a vocabulary during one generation: mask, sample, accept, repeat. All scratch is sized
// at construction and by the first steps; later steps do not allocate.
// out[i] = logits[i] where allowed[i], else −inf; past the shorter of the two inputs, −inf.
HFS_API void apply_mask(std::span<const uint8_t> allowed, std::span<const float> logits, std::span<float> out);

class HFS_API TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab);
  ~TokenConstraint();
  // allowed[id] = 1 for each id that keeps the output a valid prefix (an end id: where complete), else 0.
  // `allowed` has size() entries. Returns how many are allowed.
  size_t compute_mask(std::span<uint8_t> allowed);
  // Copies `logits` to `out` with the disallowed ids at −inf (both of the vocabulary's size, or larger:
  // ids past it are disallowed). Returns how many are allowed.
  size_t mask_logits(std::span<const float> logits, std::span<float> out);
  // Advances by a sampled id. An id the mask did not allow → kInvalidArgument naming it; state unchanged.
  [[nodiscard]] Status accept(int32_t id);
  bool complete() const;
  void reset();
  // Remembers the matcher's position (one mark), and returns to it: speculative decoding tries drafted
  // tokens ahead (accept) to check them and to mask each verification row, then rewinds.
  void mark();
  void rewind();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfs
