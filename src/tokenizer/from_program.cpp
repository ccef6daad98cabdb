// Tokenizer from the tokenizer files an exported program embeds, so one program file runs end to end.
#include "hfstatic/ext/metadata_keys.h"
#include "hfstatic/program.h"
#include "hfstatic/tokenizer.h"

namespace hfs {

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_program(const Program& program) {
  auto bytes_of = [&](std::string_view file, bool required) -> Result<std::string> {
    const std::string name = std::string(keys::kFilePrefix) + std::string(file);
    auto view = program.constant(name);
    if (!view) {
      if (!required) return std::string();
      return make_error(ErrorCode::kNotFound, program.path() + ": no constant '" + name +
                                                  "' (the program was exported without its tokenizer)");
    }
    if (view->dtype != DType::kU8)
      return make_error(ErrorCode::kDTypeMismatch, program.path() + ": constant '" + name + "' must be u8 bytes, got " +
                                                       view->type().to_string());
    return std::string(static_cast<const char*>(view->ptr), static_cast<size_t>(view->nbytes()));
  };
  HFS_ASSIGN_OR_RETURN(auto tj, bytes_of("tokenizer.json", true));
  HFS_ASSIGN_OR_RETURN(auto cfg, bytes_of("tokenizer_config.json", false));
  return from_json(tj, cfg, program.path() + ":file:tokenizer.json");
}

}  // namespace hfs
