// hfstatic/tokenizer.h — HuggingFace `tokenizer.json` tokenizers (BPE family), encode and decode.
//
// Loads the `tokenizer.json` (+ optional `tokenizer_config.json`) that HF writes, from a model directory or
// from the copies the exporter stores inside a program file (constants "file:tokenizer.json" /
// "file:tokenizer_config.json"). Behaviour follows transformers.js (the parity reference, see
// docs/tokenizer.md); where transformers.js leaves a HF option out, the HF `tokenizers` semantics are used.
//
//   auto tok = hfs::Tokenizer::from_dir("models/Qwen3-0.6B");
//   if (!tok) { std::fprintf(stderr, "%s\n", tok.error().to_string().c_str()); return 1; }
//   hfs::Result<std::vector<int32_t>> ids = (*tok)->encode("Hello world");   // + special tokens, as HF does
//   hfs::Result<std::string> text = (*tok)->decode(*ids, /*skip_special=*/true);
//
//   hfs::StreamDecoder stream(**tok);                      // generation: one id at a time
//   if (!stream.prime(*ids)) return 1;                     // the prompt's text counts as already shown
//   for (int32_t id : generated) {                         // e.g. from Runner::generate's callback
//     hfs::Result<std::string> piece = stream.feed(id);    // only complete UTF-8, "" while a char is split
//     if (piece) std::fputs(piece->c_str(), stdout);
//   }
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// Supported: model BPE (merges as "a b" strings or [a, b] pairs, byte_fallback, ignore_merges, fuse_unk,
// unk_token, continuing_subword_prefix, end_of_word_suffix); normalizers NFC, NFKC, NFD, NFKD, Prepend,
// Replace, Lowercase, Strip, Sequence; pre-tokenizers ByteLevel, Split, Metaspace, Digits, Whitespace,
// WhitespaceSplit, Sequence; post-processors TemplateProcessing, ByteLevel, Sequence; decoders ByteLevel,
// Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence; added tokens (special/normal, lstrip, rstrip,
// normalized, single_word). Anything else fails to load with ErrorCode::kUnsupported naming the component.
// Regexes run on PCRE2 (UTF + UCP, JIT). A Tokenizer is immutable after loading and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"

namespace hfs {

class Program;

class HFS_API Tokenizer {
 public:
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Reads `<dir>/tokenizer.json` and, when present, `<dir>/tokenizer_config.json`.
  [[nodiscard]] static Result<std::shared_ptr<const Tokenizer>> from_dir(const std::string& dir);
  // From the two files' contents; `tokenizer_config_json` may be empty ("{}" is assumed).
  // `name` only prefixes error messages.
  [[nodiscard]] static Result<std::shared_ptr<const Tokenizer>> from_json(std::string_view tokenizer_json,
                                                                          std::string_view tokenizer_config_json,
                                                                          std::string name = "tokenizer.json");

  // From the copies an exported program carries (u8 constants keys::kFilePrefix + "tokenizer.json" and,
  // optionally, "tokenizer_config.json"). A program exported without them → kNotFound naming the constant.
  [[nodiscard]] static Result<std::shared_ptr<const Tokenizer>> from_program(const Program& program);

  // Text (valid UTF-8) → ids. `add_special` adds what the post-processor adds (BOS for Llama/Gemma),
  // as HF's `encode` does by default. Special-token strings inside the text always map to their ids.
  [[nodiscard]] Result<std::vector<int32_t>> encode(std::string_view text, bool add_special = true) const;
  // Ids → text. Invalid UTF-8 from byte tokens becomes U+FFFD (WHATWG decoding, as TextDecoder does).
  [[nodiscard]] Result<std::string> decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // tokenizer_config.json's bos_token; nullopt when it has none.
  std::optional<int32_t> bos_id() const;
  // The text of the BOS token and of the first EOS token ("" when none): a chat template's bos_token and
  // eos_token variables.
  std::string bos_token() const;
  std::string eos_token() const;
  // tokenizer_config.json's eos_token (a string or a list); empty when none.
  const std::vector<int32_t>& eos_ids() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  // The bytes token `id` adds to the output in the middle of a text, undecoded: byte-level BPE's "Ġ" is
  // a space byte, a <0xHH> byte-fallback token its byte (possibly part of a UTF-8 character), "▁" a space;
  // no clean-up of tokenization spaces, no start-of-text space stripping. An added token: its content.
  // nullopt for an id without a token (a hole, or out of range). Constrained generation matches these.
  std::optional<std::string> token_bytes(int32_t id) const;
  // Ids are in [0, vocab_size()) (model vocab plus added tokens; there may be holes).
  int32_t vocab_size() const;
  bool is_special(int32_t id) const;

  struct Impl;

 private:
  friend class StreamDecoder;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental detokenization for generation. Feeding ids one at a time and concatenating the pieces
// gives the same text as `decode(all_ids)` (except that a trailing incomplete UTF-8 sequence is held back
// until `flush`). Leading-space handling is right: a piece is cut from the decode of a window that
// includes earlier tokens, so decoders that strip the first token's space (Metaspace, Strip) only do it
// at the true start of the text.
//
// After `prime(prompt)`, the pieces of the generated ids concatenate to decode(prompt + generated) minus
// decode(prompt): "▁upon" after the prompt "Once" streams as " upon", not "upon". (Where clean-up of
// tokenization spaces rewrites the prompt's own last characters — a prompt ending in a space followed by
// "." — decode(prompt) is no prefix of the whole and the generated text is the stream's own.)
class HFS_API StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false);
  // Starts the stream after `context` (the prompt, or the conversation so far): its text is taken as
  // already shown. Only a short tail of it is kept (grown back while its decode is empty or starts inside
  // a UTF-8 character), so the cost does not grow with the prompt. Resets the stream first; an id the
  // tokenizer cannot decode is an error and leaves the stream reset.
  [[nodiscard]] Status prime(std::span<const int32_t> context);
  // The newly completed text ("" while the bytes so far end inside a UTF-8 character).
  [[nodiscard]] Result<std::string> feed(int32_t id);
  // Whatever is held back (an incomplete UTF-8 tail decodes as U+FFFD); resets the stream.
  [[nodiscard]] Result<std::string> flush();
  void reset();

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  // The window: ids since the start of the previous emitted piece. Its decode up to the last emission
  // is `prefix_`; the next piece is what a longer decode adds after it (HF's DecodeStream scheme).
  std::vector<int32_t> ids_;
  size_t prefix_index_ = 0;  // where in ids_ the last emitted piece's tokens begin
  std::string prefix_;
  // Clean-up of tokenization spaces (" ." → ".") can change text already decoded, so with it on the
  // decoded text passes through `pending_`, and a tail that could still start such a rule is held back.
  std::string pending_;
};

}  // namespace hfs
