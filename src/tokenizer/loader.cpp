// tokenizer.json / tokenizer_config.json → Tokenizer::Impl. The big parts (vocab, merges, added tokens)
// are read with simdjson; the small pipeline nodes are handed to the stage factories as nlohmann JSON.
#include <simdjson.h>

#include <algorithm>
#include <unordered_set>

#include "tokenizer/tokenizer_impl.h"

namespace hfs {
namespace {

namespace sj = simdjson;
using tok::Json;

Error bad(const std::string& name, const std::string& what) {
  return make_error(ErrorCode::kTokenizer, "tokenizer: " + name + ": " + what);
}

std::string kind_name(sj::dom::element_type t) {
  switch (t) {
    case sj::dom::element_type::ARRAY: return "an array";
    case sj::dom::element_type::OBJECT: return "an object";
    case sj::dom::element_type::INT64: case sj::dom::element_type::UINT64: return "an integer";
    case sj::dom::element_type::DOUBLE: return "a number";
    case sj::dom::element_type::STRING: return "a string";
    case sj::dom::element_type::BOOL: return "a boolean";
    default: return "null";
  }
}

Result<Json> to_json(sj::dom::element e, const std::string& name, const char* key) {
  std::string text = sj::minify(e);
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad(name, std::string(key) + ": cannot re-read the JSON node");
  return j;
}

Result<Json> get_node(sj::dom::object obj, const char* key, const std::string& name) {
  sj::dom::element e;
  if (obj[key].get(e) != sj::SUCCESS) return Json();
  return to_json(e, name, key);
}

Status load_model(tok::BpeModel& m, std::vector<int32_t>& id_to_sym, sj::dom::object model, const std::string& name) {
  std::string_view type = "BPE";
  sj::dom::element te;
  if (model["type"].get(te) == sj::SUCCESS && te.get_string().get(type) != sj::SUCCESS)
    return bad(name, "model.type: expected a string, got " + kind_name(te.type()));
  if (type != "BPE")
    return make_error(ErrorCode::kUnsupported, "tokenizer: " + name + ": model type '" + std::string(type) +
                                                   "' is not supported (only BPE)");
  auto get_bool = [&](const char* key, bool& out) -> Status {
    sj::dom::element e;
    if (model[key].get(e) != sj::SUCCESS || e.is_null()) return Ok{};
    if (e.get_bool().get(out) != sj::SUCCESS)
      return bad(name, std::string("model.") + key + ": expected a boolean, got " + kind_name(e.type()));
    return Ok{};
  };
  auto get_str = [&](const char* key, std::string& out, bool* present) -> Status {
    sj::dom::element e;
    if (model[key].get(e) != sj::SUCCESS || e.is_null()) return Ok{};
    std::string_view s;
    if (e.get_string().get(s) != sj::SUCCESS)
      return bad(name, std::string("model.") + key + ": expected a string, got " + kind_name(e.type()));
    out = std::string(s);
    if (present) *present = true;
    return Ok{};
  };
  HFS_TRY(get_bool("byte_fallback", m.opt.byte_fallback));
  HFS_TRY(get_bool("ignore_merges", m.opt.ignore_merges));
  HFS_TRY(get_bool("fuse_unk", m.opt.fuse_unk));
  HFS_TRY(get_str("unk_token", m.opt.unk_token, &m.opt.has_unk));
  HFS_TRY(get_str("continuing_subword_prefix", m.opt.continuing_subword_prefix, nullptr));
  HFS_TRY(get_str("end_of_word_suffix", m.opt.end_of_word_suffix, nullptr));
  sj::dom::element dropout;
  if (model["dropout"].get(dropout) == sj::SUCCESS && !dropout.is_null()) {
    double d = 0;
    if (dropout.get_double().get(d) == sj::SUCCESS && d != 0.0)
      return make_error(ErrorCode::kUnsupported, "tokenizer: " + name + ": model.dropout " + std::to_string(d) +
                                                     " is not supported (inference tokenizers use null)");
  }

  sj::dom::object vocab;
  sj::dom::element ve;
  if (model["vocab"].get(ve) != sj::SUCCESS) return bad(name, "model.vocab: missing");
  if (ve.get_object().get(vocab) != sj::SUCCESS)
    return bad(name, "model.vocab: expected an object {token: id}, got " + kind_name(ve.type()));
  sj::dom::array merges;
  sj::dom::element me;
  if (model["merges"].get(me) != sj::SUCCESS) return bad(name, "model.merges: missing");
  if (me.get_array().get(merges) != sj::SUCCESS)
    return bad(name, "model.merges: expected an array, got " + kind_name(me.type()));

  size_t nvocab = vocab.size(), nmerges = merges.size();
  m.syms.reserve(nvocab + nmerges / 4 + 1024);
  m.vocab_id.reserve(nvocab + 1024);
  for (auto [key, val] : vocab) {
    int64_t id = 0;
    if (val.get_int64().get(id) != sj::SUCCESS || id < 0 || id > INT32_MAX)
      return bad(name, "model.vocab['" + std::string(key) + "']: expected a non-negative integer id, got " +
                           (val.is_int64() ? std::to_string(int64_t(val)) : kind_name(val.type())));
    int32_t sym = m.syms.intern(key);
    if (static_cast<size_t>(sym) >= m.vocab_id.size()) m.vocab_id.resize(static_cast<size_t>(sym) + 1, -1);
    m.vocab_id[static_cast<size_t>(sym)] = static_cast<int32_t>(id);
    if (static_cast<size_t>(id) >= id_to_sym.size()) id_to_sym.resize(static_cast<size_t>(id) + 1, -1);
    id_to_sym[static_cast<size_t>(id)] = sym;
  }

  m.merges.reserve(nmerges);
  std::string joined;
  uint64_t rank = 0;
  for (sj::dom::element e : merges) {
    std::string_view a, b;
    std::string_view s;
    if (e.get_string().get(s) == sj::SUCCESS) {
      size_t sp = s.find(' ');
      if (sp == std::string_view::npos)
        return bad(name, "model.merges[" + std::to_string(rank) + "]: expected \"left right\", got '" + std::string(s) + "'");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
      b = b.substr(0, b.find(' '));  // like JS split(" ", 2): a third part is ignored
    } else {
      sj::dom::array pair;
      if (e.get_array().get(pair) != sj::SUCCESS || pair.size() != 2 || pair.at(0).get_string().get(a) != sj::SUCCESS ||
          pair.at(1).get_string().get(b) != sj::SUCCESS)
        return bad(name, "model.merges[" + std::to_string(rank) + "]: expected \"left right\" or [left, right], got " +
                             sj::minify(e));
    }
    int32_t sa = m.syms.intern(a), sb = m.syms.intern(b);
    joined.assign(a);
    joined.append(b);
    int32_t sm = m.syms.intern(joined);
    m.merges.put((static_cast<uint64_t>(sa) << 32) | static_cast<uint32_t>(sb), (rank << 32) | static_cast<uint32_t>(sm));
    ++rank;
  }
  m.vocab_id.resize(m.syms.size(), -1);
  return Ok{};
}

}  // namespace

Result<std::unique_ptr<Tokenizer::Impl>> load_tokenizer_impl(std::string_view tokenizer_json, std::string_view config_json,
                                                             const std::string& name) {
  auto im = std::make_unique<Tokenizer::Impl>();
  im->name = name;
  sj::dom::parser parser;
  sj::padded_string padded(tokenizer_json);
  sj::dom::element root;
  if (auto err = parser.parse(padded).get(root); err)
    return bad(name, std::string("not valid JSON: ") + sj::error_message(err));
  sj::dom::object top;
  if (root.get_object().get(top) != sj::SUCCESS) return bad(name, "expected a JSON object at the top, got " + kind_name(root.type()));
  sj::dom::object model;
  sj::dom::element model_e;
  if (top["model"].get(model_e) != sj::SUCCESS) return bad(name, "missing 'model'");
  if (model_e.get_object().get(model) != sj::SUCCESS) return bad(name, "model: expected an object, got " + kind_name(model_e.type()));
  HFS_TRY(load_model(im->model, im->id_to_sym, model, name));
  tok::BpeModel& m = im->model;

  // Added tokens: they override the vocabulary entry of their content.
  sj::dom::element added_e;
  if (top["added_tokens"].get(added_e) == sj::SUCCESS && !added_e.is_null()) {
    sj::dom::array arr;
    if (added_e.get_array().get(arr) != sj::SUCCESS)
      return bad(name, "added_tokens: expected an array, got " + kind_name(added_e.type()));
    size_t k = 0;
    for (sj::dom::element e : arr) {
      tok::AddedToken t;
      std::string_view content;
      int64_t id = -1;
      if (e["content"].get_string().get(content) != sj::SUCCESS || e["id"].get_int64().get(id) != sj::SUCCESS || id < 0 ||
          id > INT32_MAX)
        return bad(name, "added_tokens[" + std::to_string(k) + "]: expected {\"id\": int >= 0, \"content\": string, ...}, got " +
                             sj::minify(e));
      t.content = std::string(content);
      t.id = static_cast<int32_t>(id);
      auto flag = [&](const char* key, bool& out, bool dflt) {
        out = dflt;
        bool v;
        if (e[key].get_bool().get(v) == sj::SUCCESS) out = v;
      };
      flag("special", t.special, false);
      flag("single_word", t.single_word, false);
      flag("lstrip", t.lstrip, false);
      flag("rstrip", t.rstrip, false);
      flag("normalized", t.normalized, !t.special);
      im->added.push_back(std::move(t));
      ++k;
    }
  }

  // Pipeline stages.
  auto norm_node = get_node(top, "normalizer", name);
  if (!norm_node) return norm_node.error();
  auto norm = tok::make_normalizer(*norm_node);
  if (!norm) return norm.error().with_context(name);
  im->normalizer = std::move(*norm);
  auto pre_node = get_node(top, "pre_tokenizer", name);
  if (!pre_node) return pre_node.error();
  auto pre = tok::make_pre_tokenizer(*pre_node);
  if (!pre) return pre.error().with_context(name);
  im->pre_tokenizer = std::move(*pre);

  std::vector<std::string> raw_words, norm_words;
  std::vector<int32_t> raw_idx, norm_idx;
  for (size_t i = 0; i < im->added.size(); ++i) {
    const tok::AddedToken& t = im->added[i];
    int32_t sym = m.syms.intern(t.content);
    if (static_cast<size_t>(sym) >= m.vocab_id.size()) m.vocab_id.resize(static_cast<size_t>(sym) + 1, -1);
    m.vocab_id[static_cast<size_t>(sym)] = t.id;
    if (static_cast<size_t>(t.id) >= im->id_to_sym.size()) im->id_to_sym.resize(static_cast<size_t>(t.id) + 1, -1);
    im->id_to_sym[static_cast<size_t>(t.id)] = sym;
    im->added_lookup[t.content] = static_cast<int32_t>(i);
    if (t.normalized && im->normalizer) {
      auto n = im->normalizer->normalize(t.content);
      if (!n) return n.error().with_context(name);
      im->added_lookup[*n] = static_cast<int32_t>(i);
      norm_words.push_back(*n);
      norm_idx.push_back(static_cast<int32_t>(i));
    } else {
      raw_words.push_back(t.content);
      raw_idx.push_back(static_cast<int32_t>(i));
    }
    im->added_contents_sorted.push_back(t.content);
  }
  std::sort(im->added_contents_sorted.begin(), im->added_contents_sorted.end());
  im->split_raw.build(raw_words, raw_idx, &im->added);
  im->split_norm.build(norm_words, norm_idx, &im->added);

  // The id encode emits per symbol: an added token's (normalized) content wins over the vocabulary.
  m.final_id = m.vocab_id;
  for (const auto& [text, idx] : im->added_lookup) {
    int32_t sym = m.syms.find(text);
    if (sym >= 0) m.final_id[static_cast<size_t>(sym)] = im->added[static_cast<size_t>(idx)].id;
  }
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    std::string t = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    int32_t sym = m.syms.find(t);
    m.byte_ids[b] = sym >= 0 && m.vocab_id[static_cast<size_t>(sym)] >= 0 ? m.final_id[static_cast<size_t>(sym)] : -1;
  }
  if (m.opt.has_unk) {
    int32_t sym = m.syms.find(m.opt.unk_token);
    m.unk_id = sym >= 0 && m.vocab_id[static_cast<size_t>(sym)] >= 0 ? m.final_id[static_cast<size_t>(sym)] : -1;
  }

  const Tokenizer::Impl* self = im.get();
  tok::ResolveFn resolve = [self](std::string_view s) { return self->resolve(s); };
  auto post_node = get_node(top, "post_processor", name);
  if (!post_node) return post_node.error();
  auto post = tok::make_post_processor(*post_node, resolve);
  if (!post) return post.error().with_context(name);
  im->post_processor = std::move(*post);
  auto dec_node = get_node(top, "decoder", name);
  if (!dec_node) return dec_node.error();
  tok::DecoderContext ctx{&im->added_contents_sorted};
  auto dec = tok::make_decoder(*dec_node, ctx);
  if (!dec) return dec.error().with_context(name);
  im->decoder = std::move(*dec);

  // tokenizer_config.json
  std::unordered_set<std::string> special;
  for (const auto& t : im->added)
    if (t.special) special.insert(t.content);
  if (!config_json.empty()) {
    // nlohmann here: configs carry integers beyond 64 bits (model_max_length = 1e30) that simdjson rejects.
    std::string cname = "tokenizer_config.json";
    Json cfg = Json::parse(config_json, nullptr, /*allow_exceptions=*/false);
    if (cfg.is_discarded()) return bad(cname, "not valid JSON");
    if (!cfg.is_object()) return bad(cname, "expected a JSON object, got " + cfg.dump().substr(0, 60));
    auto flag = [&](const char* key, bool& out) {
      if (auto it = cfg.find(key); it != cfg.end() && it->is_boolean()) out = it->get<bool>();
    };
    flag("clean_up_tokenization_spaces", im->clean_up_tokenization_spaces);
    flag("remove_space", im->remove_space);
    flag("do_lowercase_and_remove_accent", im->lowercase_and_remove_accent);
    if (auto it = cfg.find("additional_special_tokens"); it != cfg.end() && it->is_array())
      for (const auto& e : *it)
        if (e.is_string()) special.insert(e.get<std::string>());
    auto token_text = [](const Json& e) -> std::optional<std::string> {
      if (e.is_string()) return e.get<std::string>();
      if (e.is_object() && e.contains("content") && e["content"].is_string()) return e["content"].get<std::string>();
      return std::nullopt;
    };
    if (auto it = cfg.find("bos_token"); it != cfg.end() && !it->is_null()) {
      auto t = token_text(*it);
      if (!t) return bad(cname, "bos_token: expected a string or {\"content\": ...}, got " + it->dump());
      int32_t id = im->resolve(*t);
      if (id < 0) return bad(cname, "bos_token '" + *t + "' is not in the vocabulary");
      im->bos = id;
    }
    if (auto it = cfg.find("eos_token"); it != cfg.end() && !it->is_null()) {
      std::vector<Json> items = it->is_array() ? it->get<std::vector<Json>>() : std::vector<Json>{*it};
      for (const auto& x : items) {
        auto t = token_text(x);
        if (!t) return bad(cname, "eos_token: expected a string, {\"content\": ...} or a list, got " + x.dump());
        int32_t id = im->resolve(*t);
        if (id < 0) return bad(cname, "eos_token '" + *t + "' is not in the vocabulary");
        if (std::find(im->eos.begin(), im->eos.end(), id) == im->eos.end()) im->eos.push_back(id);
      }
    }
  }
  im->id_is_special.assign(im->id_to_sym.size(), 0);
  for (size_t id = 0; id < im->id_to_sym.size(); ++id) {
    int32_t sym = im->id_to_sym[id];
    if (sym >= 0 && special.count(m.syms.str(sym))) im->id_is_special[id] = 1;
  }
  return im;
}

}  // namespace hfs
