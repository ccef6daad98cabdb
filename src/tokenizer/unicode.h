// Unicode normalization forms and case mapping (ICU), with an ASCII fast path.
#pragma once

#include <string>
#include <string_view>

#include "hfstatic/error.h"

namespace hfs::tok {

enum class NormForm { kNFC, kNFD, kNFKC, kNFKD };

// `text` must be valid UTF-8.
Result<std::string> unicode_normalize(std::string_view text, NormForm form);
// Full Unicode lowercasing, locale independent (JS String.prototype.toLowerCase, incl. final sigma).
Result<std::string> unicode_lowercase(std::string_view text);
// Removes every combining mark (\p{M}).
std::string remove_marks(std::string_view text);

}  // namespace hfs::tok
