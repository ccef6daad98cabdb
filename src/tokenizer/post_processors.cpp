// Post-processors (tokenizer.json "post_processor"): TemplateProcessing, ByteLevel (no-op on ids), Sequence.
#include "tokenizer/components.h"

namespace hfs::tok {
namespace {

// `single` template: special-token ids before and after sequence A.
class Template final : public PostProcessor {
 public:
  Template(std::vector<int32_t> before, std::vector<int32_t> after) : before_(std::move(before)), after_(std::move(after)) {}
  Status process(std::vector<int32_t>& ids, bool add_special) const override {
    if (!add_special) return Ok{};
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
    return Ok{};
  }

 private:
  std::vector<int32_t> before_, after_;
};

class Identity final : public PostProcessor {
 public:
  Status process(std::vector<int32_t>&, bool) const override { return Ok{}; }
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> s) : steps_(std::move(s)) {}
  Status process(std::vector<int32_t>& ids, bool add_special) const override {
    for (const auto& s : steps_)
      if (s) HFS_TRY(s->process(ids, add_special));
    return Ok{};
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

Result<std::unique_ptr<PostProcessor>> make_template(const Json& node, const ResolveFn& resolve) {
  const std::string where = "post_processor TemplateProcessing";
  if (!node.contains("single") || !node["single"].is_array())
    return config_error(where + ".single", "an array of {SpecialToken}/{Sequence} items", node.value("single", Json()));
  std::vector<int32_t> before, after;
  bool seen_a = false;
  for (const auto& item : node["single"]) {
    if (item.contains("Sequence")) {
      const Json& s = item["Sequence"];
      if (!s.is_object() || s.value("id", std::string()) != "A")
        return config_error(where + ".single", "Sequence items with id \"A\"", item);
      if (seen_a) return config_error(where + ".single", "sequence A once", node["single"]);
      seen_a = true;
      continue;
    }
    if (!item.contains("SpecialToken") || !item["SpecialToken"].is_object() ||
        !item["SpecialToken"].contains("id") || !item["SpecialToken"]["id"].is_string())
      return config_error(where + ".single", "{\"SpecialToken\": {\"id\": string}} or {\"Sequence\": ...}", item);
    const std::string& name = item["SpecialToken"]["id"].get_ref<const std::string&>();
    std::vector<int32_t> ids;
    if (int32_t id = resolve(name); id >= 0) {
      ids.push_back(id);
    } else if (node.contains("special_tokens") && node["special_tokens"].contains(name) &&
               node["special_tokens"][name].contains("ids") && node["special_tokens"][name]["ids"].is_array()) {
      for (const auto& v : node["special_tokens"][name]["ids"]) {
        if (!v.is_number_integer()) return config_error(where + ".special_tokens." + name + ".ids", "integers", v);
        ids.push_back(v.get<int32_t>());
      }
    } else {
      return make_error(ErrorCode::kTokenizer, "tokenizer: " + where + ": special token '" + name +
                                                   "' is neither in the vocabulary nor in special_tokens");
    }
    auto& dst = seen_a ? after : before;
    dst.insert(dst.end(), ids.begin(), ids.end());
  }
  return std::unique_ptr<PostProcessor>(new Template(std::move(before), std::move(after)));
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> make_post_processor(const Json& node, const ResolveFn& resolve) {
  if (node.is_null()) return std::unique_ptr<PostProcessor>();
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
    return config_error("post_processor", "an object with a string \"type\"", node);
  const std::string& type = node["type"].get_ref<const std::string&>();
  if (type == "ByteLevel") return std::unique_ptr<PostProcessor>(new Identity());
  if (type == "TemplateProcessing") return make_template(node, resolve);
  if (type == "Sequence") {
    if (!node.contains("processors") || !node["processors"].is_array())
      return config_error("post_processor Sequence.processors", "an array", node.value("processors", Json()));
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (const auto& n : node["processors"]) {
      HFS_ASSIGN_OR_RETURN(auto s, make_post_processor(n, resolve));
      steps.push_back(std::move(s));
    }
    return std::unique_ptr<PostProcessor>(new Sequence(std::move(steps)));
  }
  return make_error(ErrorCode::kUnsupported, "tokenizer: post_processor type '" + type +
                                                 "' is not supported (supported: TemplateProcessing, ByteLevel, "
                                                 "Sequence)");
}

}  // namespace hfs::tok
