// Tokenizer: encode (added tokens → normalizer → pre-tokenizer → BPE → post-processor) and decode.
#include "hfstatic/tokenizer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/regular_file.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "core/utf8.h"

namespace hfs {
namespace {

using tok::AddedSplitter;

}  // namespace

// transformers.js clean_up_tokenization (HF's clean_up_tokenization_spaces).
std::string clean_up_tokenization(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (auto [from, to] : kRules)
    if (s.find(from) != std::string::npos) s = replace_all(s, from, to);
  return s;
}

namespace {

// Splits at added tokens and applies their lstrip/rstrip to the neighbouring text.
void split_added(const Tokenizer::Impl& im, const AddedSplitter& splitter, std::string_view text,
                 std::vector<AddedSplitter::Piece>& pieces) {
  pieces.clear();
  if (splitter.empty()) {
    pieces.push_back({text, -1});
  } else {
    splitter.split(text, pieces);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    int32_t t = pieces[i].token >= 0 ? pieces[i].token : im.added_index(pieces[i].text);
    if (t < 0) continue;
    const tok::AddedToken& a = im.added[static_cast<size_t>(t)];
    if (a.lstrip && i > 0) pieces[i - 1].text = js_trim_end(pieces[i - 1].text);
    if (a.rstrip && i + 1 < pieces.size()) pieces[i + 1].text = js_trim_start(pieces[i + 1].text);
  }
}

}  // namespace

Status Tokenizer::Impl::encode_plain(std::string_view text, size_t section_index, std::vector<int32_t>& ids) const {
  size_t start = ids.size();
  if (pre_tokenizer) {
    std::vector<std::string> pieces{std::string(text)};
    HFS_TRY(pre_tokenizer->pre_tokenize(pieces, section_index));
    for (const auto& p : pieces) HFS_TRY(model.encode_word(p, ids));
  } else {
    HFS_TRY(model.encode_word(text, ids));  // the section is one word: no copy of a (possibly huge) text
  }
  if (model.opt.fuse_unk && model.unk_id >= 0) {
    size_t w = start;
    for (size_t r = start; r < ids.size(); ++r) {
      if (ids[r] == model.unk_id && w > start && ids[w - 1] == model.unk_id) continue;
      ids[w++] = ids[r];
    }
    ids.resize(w);
  }
  return Ok{};
}

Status Tokenizer::Impl::encode_text(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<AddedSplitter::Piece> sections, subs;
  split_added(*this, split_raw, text, sections);
  for (size_t si = 0; si < sections.size(); ++si) {
    std::string_view sec = sections[si].text;
    if (sec.empty()) continue;
    if (int32_t t = added_index(sec); t >= 0) {
      ids.push_back(added[static_cast<size_t>(t)].id);
      continue;
    }
    std::string processed(sec);
    if (remove_space) {
      std::string joined;
      std::string_view v = js_trim(processed);
      bool in_space = false;
      for (size_t i = 0; i < v.size();) {
        size_t b = i;
        bool sp = is_js_space(next_cp(v, i));
        if (sp) {
          in_space = true;
          continue;
        }
        if (in_space) joined += ' ';
        in_space = false;
        joined.append(v.substr(b, i - b));
      }
      processed = std::move(joined);
    }
    if (lowercase_and_remove_accent) {
      HFS_ASSIGN_OR_RETURN(std::string low, tok::unicode_lowercase(processed));
      processed = tok::remove_marks(low);
    }
    if (normalizer) {
      HFS_ASSIGN_OR_RETURN(std::string n, normalizer->normalize(std::move(processed)));
      processed = std::move(n);
    }
    if (processed.empty()) continue;
    split_added(*this, split_norm, processed, subs);
    for (const auto& sub : subs) {
      if (sub.text.empty()) continue;
      if (int32_t t = added_index(sub.text); t >= 0) {
        ids.push_back(added[static_cast<size_t>(t)].id);
        continue;
      }
      HFS_TRY(encode_plain(sub.text, si, ids));
    }
  }
  return Ok{};
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_json(std::string_view tokenizer_json,
                                                              std::string_view tokenizer_config_json, std::string name) {
  HFS_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, load_tokenizer_impl(tokenizer_json, tokenizer_config_json, name));
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

namespace {

Result<std::string> read_file(const std::string& path) {
  HFS_ASSIGN_OR_RETURN_CTX(std::string text, io::read_regular_file(path), "tokenizer");
  return text;
}

// A read-only mapping of a whole file: tokenizer.json is parsed in place (a copy of 33 MB costs more
// than the parse on machines where fresh pages are expensive).
class MappedFile {
 public:
  ~MappedFile() {
    if (data_) munmap(data_, size_);
    if (fd_ >= 0) close(fd_);
  }
  Status open(const std::string& path) {
    // A FIFO or directory is refused, never waited on.
    HFS_ASSIGN_OR_RETURN_CTX(io::RegularFile file, io::open_regular_file(path), "tokenizer");
    size_ = static_cast<size_t>(file.size());
    fd_ = file.release();
    if (size_ == 0) return Ok{};
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, 0);
    if (p == MAP_FAILED) return make_error(ErrorCode::kIo, "tokenizer: cannot map '" + path + "': " + std::strerror(errno));
    data_ = p;
    return Ok{};
  }
  std::string_view view() const { return {static_cast<const char*>(data_), data_ ? size_ : 0}; }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_dir(const std::string& dir) {
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  MappedFile tj;
  if (Status st = tj.open(base + "tokenizer.json"); !st) {
    if (st.error().code() != ErrorCode::kNotFound) return st.error();
    return make_error(ErrorCode::kNotFound, "tokenizer: directory '" + dir + "' has no readable tokenizer.json");
  }
  std::string cfg;
  struct stat cfg_st {};
  if (::stat((base + "tokenizer_config.json").c_str(), &cfg_st) == 0) {  // optional; if present it must be readable
    HFS_ASSIGN_OR_RETURN(std::string c, read_file(base + "tokenizer_config.json"));
    cfg = std::move(c);
  }
  return from_json(tj.view(), cfg, base + "tokenizer.json");
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool add_special) const {
  if (size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
    return make_error(ErrorCode::kInvalidArgument,
                      "tokenizer: encode: text is not valid UTF-8 (first bad byte at offset " + std::to_string(bad) + ")");
  std::vector<int32_t> ids;
  HFS_TRY(impl_->encode_text(text, ids));
  if (impl_->post_processor) HFS_TRY(impl_->post_processor->process(ids, add_special));
  return ids;
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return decode_ids(*impl_, ids, skip_special, impl_->clean_up_tokenization_spaces);
}

Result<std::string> decode_ids(const Tokenizer::Impl& im, std::span<const int32_t> ids, bool skip_special, bool clean_up) {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    int32_t sym = id >= 0 && static_cast<size_t>(id) < im.id_to_sym.size() ? im.id_to_sym[static_cast<size_t>(id)] : -1;
    if (sym < 0) {
      if (!im.model.opt.has_unk)
        return make_error(ErrorCode::kOutOfRange, "tokenizer: decode: id " + std::to_string(id) +
                                                      " is not in the vocabulary (ids are in [0, " +
                                                      std::to_string(im.id_to_sym.size()) + "))");
      if (skip_special && im.model.unk_id >= 0 && im.id_is_special[static_cast<size_t>(im.model.unk_id)]) continue;
      tokens.push_back(im.model.opt.unk_token);  // transformers.js decodes unknown ids as unk_token
      continue;
    }
    if (skip_special && im.id_is_special[static_cast<size_t>(id)]) continue;
    tokens.push_back(im.model.syms.str(sym));
  }
  std::string text;
  if (im.decoder) {
    HFS_TRY(im.decoder->decode_chain(tokens));
    for (const auto& t : tokens) text += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) text += ' ';
      text += tokens[i];
    }
  }
  if (im.decoder && !im.model.opt.end_of_word_suffix.empty()) {
    text = replace_all(text, im.model.opt.end_of_word_suffix, " ");
    if (skip_special) text = std::string(js_trim(text));
  }
  if (clean_up) text = clean_up_tokenization(std::move(text));
  return text;
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
const std::vector<int32_t>& Tokenizer::eos_ids() const { return impl_->eos; }
std::string Tokenizer::bos_token() const { return impl_->bos ? id_to_token(*impl_->bos).value_or("") : ""; }
std::string Tokenizer::eos_token() const { return impl_->eos.empty() ? "" : id_to_token(impl_->eos[0]).value_or(""); }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  int32_t sym = impl_->model.syms.find(token);
  if (sym < 0 || impl_->model.vocab_id[static_cast<size_t>(sym)] < 0) return std::nullopt;
  return impl_->model.vocab_id[static_cast<size_t>(sym)];
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_to_sym.size() || impl_->id_to_sym[static_cast<size_t>(id)] < 0)
    return std::nullopt;
  return impl_->model.syms.str(impl_->id_to_sym[static_cast<size_t>(id)]);
}

std::optional<std::string> Tokenizer::token_bytes(int32_t id) const {
  std::optional<std::string> t = id_to_token(id);
  if (!t) return std::nullopt;
  if (impl_->added_index(*t) >= 0) return t;  // added tokens are output as written
  if (impl_->decoder) impl_->decoder->piece(*t);
  return t;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_to_sym.size()); }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->id_is_special.size() && impl_->id_is_special[static_cast<size_t>(id)];
}

}  // namespace hfs
