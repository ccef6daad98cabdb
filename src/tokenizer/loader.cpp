// tokenizer.json / tokenizer_config.json → Tokenizer::Impl. The big parts (vocab, merges) are read by a
// zero-copy scanner straight into the compact symbol table; the small nodes go through nlohmann JSON.
#include <algorithm>
#include <unordered_set>

#include "tokenizer/json_scan.h"
#include "tokenizer/tokenizer_impl.h"

namespace hfs {
namespace {

using tok::Json;
using tok::JsonCursor;

Error bad(const std::string& name, const std::string& what) {
  return make_error(ErrorCode::kTokenizer, "tokenizer: " + name + ": " + what);
}

Result<Json> parse_small(std::string_view raw, const std::string& name, const std::string& key) {
  Json j = Json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad(name, key + ": not valid JSON");
  return j;
}

// Token ids index dense tables (id → symbol, 4 bytes per id up to the largest), so an id is bounded by
// what the file could describe: at most its size in bytes (every entry takes several), and never less
// than 2^20 (4 MiB of table). Only INT32_MAX before: a fuzzed 27 KB tokenizer.json with one vocab id near
// 4·10^8 allocated 1.7 GB before failing on a later key.
int64_t max_token_id(size_t doc_size) { return std::max<int64_t>(int64_t{1} << 20, static_cast<int64_t>(doc_size)); }

// model.vocab: {"token": id, ...}, in batches like the merges (see load_merges).
Status load_vocab(JsonCursor& c, tok::BpeModel& m, std::vector<int32_t>& id_to_sym, int64_t max_id) {
  struct Pending {
    std::string key;
    uint32_t h = 0;
    int64_t id = 0;
  };
  constexpr size_t kBatch = 256;
  std::vector<Pending> batch(kBatch);
  std::string scratch;
  HFS_TRY(c.expect('{', "model.vocab"));
  bool done = c.eat('}');
  while (!done) {
    size_t n = 0;
    for (; n < kBatch && !done; ++n) {
      HFS_ASSIGN_OR_RETURN(auto key, c.string(scratch, "model.vocab key"));
      HFS_TRY(c.expect(':', "model.vocab"));
      HFS_ASSIGN_OR_RETURN_CTX(auto id, c.integer("model.vocab value"), "model.vocab['" + std::string(key) + "']");
      if (id < 0 || id >= max_id)
        return c.error("model.vocab['" + std::string(key) + "']",
                       "an id in [0, " + std::to_string(max_id) + ") (at most the file's size in bytes, or 2^20)");
      Pending& p = batch[n];
      p.key.assign(key);
      p.h = tok::SymbolTable::hash(p.key);
      p.id = id;
      m.syms.prefetch_slot(p.h);
      if (!c.eat(',')) {
        HFS_TRY(c.expect('}', "model.vocab"));
        done = true;
      }
    }
    for (size_t k = 0; k < n; ++k) {
      const Pending& p = batch[k];
      int32_t sym = m.syms.intern_hashed(p.key, p.h);
      if (static_cast<size_t>(sym) >= m.vocab_id.size()) m.vocab_id.resize(static_cast<size_t>(sym) + 1, -1);
      m.vocab_id[static_cast<size_t>(sym)] = static_cast<int32_t>(p.id);
      if (static_cast<size_t>(p.id) >= id_to_sym.size()) id_to_sym.resize(static_cast<size_t>(p.id) + 1, -1);
      id_to_sym[static_cast<size_t>(p.id)] = sym;
    }
  }
  return Ok{};
}

// model.merges: ["left right", ...] or [["left", "right"], ...]; later duplicates win (as in JS and HF).
// Merges go in batches so the hash-table probes of a batch overlap (memory latency dominates loading).
Status load_merges(JsonCursor& c, tok::BpeModel& m) {
  struct Pending {
    std::string a, b, joined;
    uint32_t ha = 0, hb = 0, hj = 0;
    uint64_t key = 0, val = 0;
  };
  constexpr size_t kBatch = 256;
  std::vector<Pending> batch(kBatch);
  std::string sa, sb;
  HFS_TRY(c.expect('[', "model.merges"));
  bool done = c.eat(']');
  uint64_t rank = 0;
  while (!done) {
    size_t n = 0;
    for (; n < kBatch && !done; ++n) {
      // Error messages name the entry; the label is only built when one is needed.
      auto where = [&] { return "model.merges[" + std::to_string(rank + n) + "]"; };
      constexpr std::string_view kWhere = "model.merges entry";
      std::string_view a, b;
      if (c.peek() == '"') {
        HFS_ASSIGN_OR_RETURN_CTX(auto s, c.string(sa, kWhere), where());
        size_t sp = s.find(' ');
        if (sp == std::string_view::npos)
          return bad("tokenizer.json", where() + ": expected \"left right\", got '" + std::string(s) + "'");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
        b = b.substr(0, b.find(' '));  // like JS split(" ", 2): a third part is ignored
      } else {
        if (!c.eat('[')) return c.error(where(), "\"left right\" or [left, right]");
        HFS_ASSIGN_OR_RETURN_CTX(auto x, c.string(sa, kWhere), where());
        if (!c.eat(',')) return c.error(where(), "',' in a [left, right] pair");
        HFS_ASSIGN_OR_RETURN_CTX(auto y, c.string(sb, kWhere), where());
        if (!c.eat(']')) return c.error(where(), "']' closing a [left, right] pair");
        a = x;
        b = y;
      }
      Pending& p = batch[n];
      p.a.assign(a);
      p.b.assign(b);
      p.joined.assign(a);
      p.joined.append(b);
      p.ha = tok::SymbolTable::hash(p.a);
      p.hb = tok::SymbolTable::hash(p.b);
      p.hj = tok::SymbolTable::hash(p.joined);
      m.syms.prefetch_slot(p.ha);
      m.syms.prefetch_slot(p.hb);
      m.syms.prefetch_slot(p.hj);
      if (!c.eat(',')) {
        HFS_TRY(c.expect(']', "model.merges"));
        done = true;
      }
    }
    for (size_t k = 0; k < n; ++k) {
      m.syms.prefetch_bytes(batch[k].ha);
      m.syms.prefetch_bytes(batch[k].hb);
      m.syms.prefetch_bytes(batch[k].hj);
    }
    for (size_t k = 0; k < n; ++k) {
      Pending& p = batch[k];
      int32_t ia = m.syms.intern_hashed(p.a, p.ha), ib = m.syms.intern_hashed(p.b, p.hb);
      int32_t ij = m.syms.intern_hashed(p.joined, p.hj);
      p.key = (static_cast<uint64_t>(ia) << 32) | static_cast<uint32_t>(ib);
      p.val = ((rank + k) << 32) | static_cast<uint32_t>(ij);
      m.merges.prefetch(p.key);
    }
    for (size_t k = 0; k < n; ++k) m.merges.put(batch[k].key, batch[k].val);
    rank += n;
  }
  return Ok{};
}

Status load_model(JsonCursor& c, tok::BpeModel& m, std::vector<int32_t>& id_to_sym, const std::string& name,
                  size_t doc_size) {
  Json fields = Json::object();
  bool has_vocab = false, has_merges = false;
  std::string scratch;
  m.syms.reserve(doc_size / 96 + 1024, doc_size / 10 + 4096);
  m.vocab_id.reserve(doc_size / 96 + 1024);
  m.merges.reserve(doc_size / 48 + 1024);
  HFS_TRY(c.expect('{', "model"));
  if (!c.eat('}')) {
    while (true) {
      HFS_ASSIGN_OR_RETURN(auto k, c.string(scratch, "model key"));
      std::string key(k);
      HFS_TRY(c.expect(':', "model"));
      if (key == "vocab" && c.peek() == '{') {
        HFS_TRY(load_vocab(c, m, id_to_sym, max_token_id(doc_size)));
        has_vocab = true;
      } else if (key == "merges" && c.peek() == '[') {
        HFS_TRY(load_merges(c, m));
        has_merges = true;
      } else {
        HFS_ASSIGN_OR_RETURN(auto raw, c.skip_value("model." + key));
        HFS_ASSIGN_OR_RETURN(auto j, parse_small(raw, name, "model." + key));
        fields[key] = std::move(j);
      }
      if (c.eat(',')) continue;
      HFS_TRY(c.expect('}', "model"));
      break;
    }
  }
  std::string type = fields.contains("type") && fields["type"].is_string() ? fields["type"].get<std::string>() : "BPE";
  if (fields.contains("type") && !fields["type"].is_string()) return tok::config_error("model.type", "a string", fields["type"]);
  if (type != "BPE")
    return make_error(ErrorCode::kUnsupported, "tokenizer: " + name + ": model type '" + type + "' is not supported (only BPE)");
  if (!has_vocab) return bad(name, "model.vocab: expected an object {token: id}" + std::string(fields.contains("vocab") ? ", got " + fields["vocab"].dump().substr(0, 40) : " (missing)"));
  if (!has_merges) return bad(name, "model.merges: expected an array" + std::string(fields.contains("merges") ? ", got " + fields["merges"].dump().substr(0, 40) : " (missing)"));
  auto flag = [&](const char* key, bool& out) -> Status {
    HFS_ASSIGN_OR_RETURN(auto r, tok::get_bool(fields, key, "model", out));
    out = r;
    return Ok{};
  };
  HFS_TRY(flag("byte_fallback", m.opt.byte_fallback));
  HFS_TRY(flag("ignore_merges", m.opt.ignore_merges));
  HFS_TRY(flag("fuse_unk", m.opt.fuse_unk));
  for (auto [key, dst] : {std::pair<const char*, std::string*>{"unk_token", &m.opt.unk_token},
                          {"continuing_subword_prefix", &m.opt.continuing_subword_prefix},
                          {"end_of_word_suffix", &m.opt.end_of_word_suffix}}) {
    HFS_ASSIGN_OR_RETURN(auto r, tok::get_string(fields, key, "model", ""));
    *dst = r;
  }
  m.opt.has_unk = fields.contains("unk_token") && fields["unk_token"].is_string();
  if (fields.contains("dropout") && fields["dropout"].is_number() && fields["dropout"].get<double>() != 0.0)
    return make_error(ErrorCode::kUnsupported, "tokenizer: " + name + ": model.dropout " + fields["dropout"].dump() +
                                                   " is not supported (inference tokenizers use null)");
  m.vocab_id.resize(m.syms.size(), -1);
  return Ok{};
}

}  // namespace

Result<std::unique_ptr<Tokenizer::Impl>> load_tokenizer_impl(std::string_view tokenizer_json, std::string_view config_json,
                                                             const std::string& name) {
  auto im = std::make_unique<Tokenizer::Impl>();
  im->name = name;
  JsonCursor c(tokenizer_json, name);
  std::unordered_map<std::string, std::string_view> raw;  // the small top-level nodes
  bool has_model = false;
  {
    std::string scratch;
    if (c.peek() != '{') return c.error("top level", "a JSON object");
    HFS_TRY(c.expect('{', "top level"));
    if (!c.eat('}')) {
      while (true) {
        HFS_ASSIGN_OR_RETURN(auto k, c.string(scratch, "top-level key"));
        std::string key(k);
        HFS_TRY(c.expect(':', "top level"));
        if (key == "model") {
          if (c.peek() != '{') return c.error("model", "an object");
          HFS_TRY(load_model(c, im->model, im->id_to_sym, name, tokenizer_json.size()));
          has_model = true;
        } else {
          HFS_ASSIGN_OR_RETURN(auto v, c.skip_value(key));
          raw[key] = v;
        }
        if (c.eat(',')) continue;
        HFS_TRY(c.expect('}', "top level"));
        break;
      }
    }
    c.ws();
    if (c.pos() != tokenizer_json.size()) return c.error("top level", "end of file after the object");
  }
  if (!has_model) return bad(name, "missing 'model'");
  tok::BpeModel& m = im->model;
  auto node = [&](const char* key) -> Result<Json> {
    auto it = raw.find(key);
    if (it == raw.end()) return Json();
    return parse_small(it->second, name, key);
  };

  // Added tokens: they override the vocabulary entry of their content.
  const int64_t max_id = max_token_id(tokenizer_json.size());
  HFS_ASSIGN_OR_RETURN(auto added_node, node("added_tokens"));
  if (!added_node.is_null()) {
    if (!added_node.is_array()) return tok::config_error("added_tokens", "an array", added_node);
    size_t k = 0;
    for (const Json& e : added_node) {
      std::string where = "added_tokens[" + std::to_string(k++) + "]";
      if (!e.is_object() || !e.contains("content") || !e["content"].is_string() || !e.contains("id") ||
          !e["id"].is_number_integer() || e["id"].get<int64_t>() < 0 || e["id"].get<int64_t>() >= max_id)
        return tok::config_error(where, "{\"id\": int in [0, " + std::to_string(max_id) + "), \"content\": string, ...}", e);
      tok::AddedToken t;
      t.content = e["content"].get<std::string>();
      t.id = e["id"].get<int32_t>();
      auto flag = [&](const char* key, bool& out, bool dflt) {
        out = dflt;
        if (e.contains(key) && e[key].is_boolean()) out = e[key].get<bool>();
      };
      flag("special", t.special, false);
      flag("single_word", t.single_word, false);
      flag("lstrip", t.lstrip, false);
      flag("rstrip", t.rstrip, false);
      flag("normalized", t.normalized, !t.special);
      im->added.push_back(std::move(t));
    }
  }

  // Pipeline stages.
  HFS_ASSIGN_OR_RETURN(auto norm_node, node("normalizer"));
  HFS_ASSIGN_OR_RETURN_CTX(auto norm, tok::make_normalizer(norm_node), name);
  im->normalizer = std::move(norm);
  HFS_ASSIGN_OR_RETURN(auto pre_node, node("pre_tokenizer"));
  HFS_ASSIGN_OR_RETURN_CTX(auto pre, tok::make_pre_tokenizer(pre_node), name);
  im->pre_tokenizer = std::move(pre);

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
      HFS_ASSIGN_OR_RETURN_CTX(auto n, im->normalizer->normalize(t.content), name);
      im->added_lookup[n] = static_cast<int32_t>(i);
      norm_words.push_back(n);
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
  HFS_ASSIGN_OR_RETURN(auto post_node, node("post_processor"));
  HFS_ASSIGN_OR_RETURN_CTX(auto post, tok::make_post_processor(post_node, resolve), name);
  im->post_processor = std::move(post);
  HFS_ASSIGN_OR_RETURN(auto dec_node, node("decoder"));
  tok::DecoderContext ctx{&im->added_contents_sorted};
  HFS_ASSIGN_OR_RETURN_CTX(auto dec, tok::make_decoder(dec_node, ctx), name);
  im->decoder = std::move(dec);

  // tokenizer_config.json
  std::unordered_set<std::string> special;
  for (const auto& t : im->added)
    if (t.special) special.insert(t.content);
  if (!config_json.empty()) {
    // Small file; nlohmann copes with the integers beyond 64 bits some configs carry (model_max_length).
    std::string cname = "tokenizer_config.json";
    // Only a few keys matter; the rest (Gemma's 1 MB added_tokens_decoder) is skipped unparsed.
    Json cfg = Json::object();
    JsonCursor cc(config_json, cname);
    std::string scratch;
    HFS_TRY(cc.expect('{', "top level"));
    if (!cc.eat('}')) {
      while (true) {
        HFS_ASSIGN_OR_RETURN(auto k, cc.string(scratch, "key"));
        std::string key(k);
        HFS_TRY(cc.expect(':', "top level"));
        HFS_ASSIGN_OR_RETURN(auto v, cc.skip_value(key));
        if (key == "clean_up_tokenization_spaces" || key == "remove_space" || key == "do_lowercase_and_remove_accent" ||
            key == "additional_special_tokens" || key == "bos_token" || key == "eos_token") {
          HFS_ASSIGN_OR_RETURN(auto j, parse_small(v, cname, key));
          cfg[key] = std::move(j);
        }
        if (cc.eat(',')) continue;
        HFS_TRY(cc.expect('}', "top level"));
        break;
      }
    }
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
