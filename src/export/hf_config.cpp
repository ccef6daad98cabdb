// config.json / generation_config.json / tokenizer file reading for the exporter.
#include "export/hf_config.h"

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/regular_file.h"

namespace hfs {
namespace {

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<std::string> read_file(const std::string& path) {
  auto text = io::read_regular_file(path);  // never blocks on a FIFO put in place of a checkpoint file
  if (!text) return make_error(ErrorCode::kBadCheckpoint, text.error().message());
  return text;
}

Result<Value> read_json(const std::string& path) {
  HFS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto v = Value::parse_json(text);
  if (!v) return make_error(ErrorCode::kBadCheckpoint, path + ": not valid JSON: " + v.error().message());
  if (!v->is_object()) return make_error(ErrorCode::kBadCheckpoint, path + ": expected a JSON object");
  return std::move(*v);
}

// Token id fields: absent/null → untouched; int → one id; list of ints → ids (eos only).
Status read_ids(const Value& obj, std::string_view key, const std::string& where, std::vector<int64_t>* out) {
  const Value* v = obj.get(key);
  if (!v || v->is_null()) return Ok{};
  std::vector<int64_t> ids;
  if (v->is_int()) {
    ids.push_back(v->as_int());
  } else if (v->is_array()) {
    for (const Value& e : v->as_array()) {
      if (!e.is_int())
        return make_error(ErrorCode::kBadCheckpoint, where + ": key '" + std::string(key) + "': expected integers, got " + e.to_json());
      ids.push_back(e.as_int());
    }
  } else {
    return make_error(ErrorCode::kBadCheckpoint,
                      where + ": key '" + std::string(key) + "': expected an integer or a list of integers, got " + v->to_json());
  }
  *out = std::move(ids);
  return Ok{};
}

Status read_token_ids(const Value& obj, const std::string& where, HfConfig* cfg) {
  std::vector<int64_t> v;
  HFS_TRY(read_ids(obj, "bos_token_id", where, &v));
  if (!v.empty()) cfg->bos_token_id = v[0], cfg->bos_where = where;
  v.clear();
  HFS_TRY(read_ids(obj, "eos_token_id", where, &v));
  if (!v.empty()) cfg->eos_token_ids = v, cfg->eos_where = where;
  v.clear();
  HFS_TRY(read_ids(obj, "pad_token_id", where, &v));
  if (!v.empty()) cfg->pad_token_id = v[0], cfg->pad_where = where;
  return Ok{};
}

}  // namespace

const Value* HfConfig::get(std::string_view key) const {
  const Value* v = text.get(key);
  return v && !v->is_null() ? v : nullptr;
}

Error HfConfig::bad_value(std::string_view key, const std::string& msg) const {
  return make_error(ErrorCode::kBadCheckpoint, where + ": key '" + std::string(key) + "': " + msg);
}

Error HfConfig::unsupported(std::string_view key, const std::string& msg) const {
  return make_error(ErrorCode::kUnsupportedModel, where + ": key '" + std::string(key) + "': " + msg);
}

Result<int64_t> HfConfig::require_int(std::string_view key) const {
  const Value* v = get(key);
  if (!v) return bad_value(key, "required but missing");
  if (!v->is_int()) return bad_value(key, "expected an integer, got " + v->to_json());
  return v->as_int();
}

Result<int64_t> HfConfig::int_or(std::string_view key, int64_t def) const {
  if (!get(key)) return def;
  return require_int(key);
}

Result<double> HfConfig::number_or(std::string_view key, double def) const {
  const Value* v = get(key);
  if (!v) return def;
  if (!v->is_number()) return bad_value(key, "expected a number, got " + v->to_json());
  return v->as_float();
}

Result<bool> HfConfig::bool_or(std::string_view key, bool def) const {
  const Value* v = get(key);
  if (!v) return def;
  if (!v->is_bool()) return bad_value(key, "expected true or false, got " + v->to_json());
  return v->as_bool();
}

Result<std::string> HfConfig::string_or(std::string_view key, std::string def) const {
  const Value* v = get(key);
  if (!v) return def;
  if (!v->is_string()) return bad_value(key, "expected a string, got " + v->to_json());
  return v->as_string();
}

namespace {

std::string number_text(double v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

std::string range_text(int64_t lo, int64_t hi, std::string_view why) {
  return "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" +
         (why.empty() ? "" : " (" + std::string(why) + ")");
}

}  // namespace

Result<int64_t> HfConfig::int_in(std::string_view key, int64_t lo, int64_t hi, std::string_view why) const {
  HFS_ASSIGN_OR_RETURN(int64_t v, require_int(key));
  if (v < lo || v > hi) return bad_value(key, range_text(lo, hi, why) + ", got " + std::to_string(v));
  return v;
}

Result<int64_t> HfConfig::int_in_or(std::string_view key, int64_t def, int64_t lo, int64_t hi, std::string_view why) const {
  if (get(key)) return int_in(key, lo, hi, why);
  // A default derived from other keys is checked too: the message says the value was not given.
  if (def < lo || def > hi)
    return bad_value(key, range_text(lo, hi, why) + ", got " + std::to_string(def) + " (the default, as the key is absent)");
  return def;
}

Result<double> HfConfig::positive_or(std::string_view key, double def, double hi) const {
  HFS_ASSIGN_OR_RETURN(double v, number_or(key, def));
  // Written so NaN fails too: JSON has neither NaN nor inf, but defaults and values set in code pass here.
  if (!(v > 0) || !(v <= hi))
    return bad_value(key, "expected a finite number > 0" + (hi < 1e308 ? " and ≤ " + number_text(hi) : std::string()) +
                              ", got " + number_text(v));
  return v;
}

Result<double> HfConfig::non_negative_or(std::string_view key, double def) const {
  HFS_ASSIGN_OR_RETURN(double v, number_or(key, def));
  if (!(v >= 0) || !std::isfinite(v)) return bad_value(key, "expected a finite number ≥ 0, got " + number_text(v));
  return v;
}

Result<HfConfig> read_hf_config(const std::string& dir) {
  HfConfig cfg;
  cfg.dir = dir;
  const std::string path = dir + "/config.json";
  if (!file_exists(path)) return make_error(ErrorCode::kBadCheckpoint, path + ": not found (not a HuggingFace checkpoint directory?)");
  HFS_ASSIGN_OR_RETURN(Value root, read_json(path));
  cfg.root = std::move(root);
  const Value* mt = cfg.root.get("model_type");
  if (!mt || !mt->is_string())
    return make_error(ErrorCode::kBadCheckpoint, path + ": key 'model_type': required string, got " +
                                                     (mt ? mt->to_json() : std::string("nothing")));
  cfg.model_type = mt->as_string();
  const Value* tc = cfg.root.get("text_config");
  if (tc && tc->is_object()) {
    cfg.text = *tc;
    cfg.where = path + " text_config";
  } else {
    cfg.text = cfg.root;
    cfg.where = path;
  }
  // Token ids: root, then text_config, then generation_config.json (later ones win when they set a value).
  HFS_TRY(read_token_ids(cfg.root, path, &cfg));
  if (tc && tc->is_object()) HFS_TRY(read_token_ids(*tc, cfg.where, &cfg));
  const std::string gen_path = dir + "/generation_config.json";
  if (file_exists(gen_path)) {
    HFS_ASSIGN_OR_RETURN(Value gen, read_json(gen_path));
    HFS_TRY(read_token_ids(gen, gen_path, &cfg));
  }
  return cfg;
}

Result<std::vector<EmbeddedFile>> read_tokenizer_files(const std::string& dir) {
  std::vector<EmbeddedFile> out;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    const std::string path = dir + "/" + name;
    if (!file_exists(path)) continue;
    HFS_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
    out.push_back({name, std::make_shared<const std::string>(std::move(bytes))});
  }
  return out;
}

}  // namespace hfs
