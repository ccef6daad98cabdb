#include "tokenizer/unicode.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

#include "core/utf8.h"

namespace hfs::tok {
namespace {

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

Result<std::u16string> to_utf16(std::string_view s) {
  UErrorCode st = U_ZERO_ERROR;
  int32_t n = 0;
  u_strFromUTF8(nullptr, 0, &n, s.data(), static_cast<int32_t>(s.size()), &st);
  if (st != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(st))
    return make_error(ErrorCode::kTokenizer, std::string("tokenizer: UTF-8 → UTF-16 failed: ") + u_errorName(st));
  std::u16string out(static_cast<size_t>(n), u'\0');
  st = U_ZERO_ERROR;
  u_strFromUTF8(reinterpret_cast<UChar*>(out.data()), n, nullptr, s.data(), static_cast<int32_t>(s.size()), &st);
  if (U_FAILURE(st))
    return make_error(ErrorCode::kTokenizer, std::string("tokenizer: UTF-8 → UTF-16 failed: ") + u_errorName(st));
  return out;
}

Result<std::string> to_utf8(const UChar* s, int32_t len) {
  UErrorCode st = U_ZERO_ERROR;
  int32_t n = 0;
  u_strToUTF8(nullptr, 0, &n, s, len, &st);
  if (st != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(st))
    return make_error(ErrorCode::kTokenizer, std::string("tokenizer: UTF-16 → UTF-8 failed: ") + u_errorName(st));
  std::string out(static_cast<size_t>(n), '\0');
  st = U_ZERO_ERROR;
  u_strToUTF8(out.data(), n, nullptr, s, len, &st);
  if (U_FAILURE(st))
    return make_error(ErrorCode::kTokenizer, std::string("tokenizer: UTF-16 → UTF-8 failed: ") + u_errorName(st));
  return out;
}

}  // namespace

Result<std::string> unicode_normalize(std::string_view text, NormForm form) {
  if (is_ascii(text)) return std::string(text);  // ASCII is invariant under all four forms
  UErrorCode st = U_ZERO_ERROR;
  const UNormalizer2* norm = form == NormForm::kNFC    ? unorm2_getNFCInstance(&st)
                             : form == NormForm::kNFD  ? unorm2_getNFDInstance(&st)
                             : form == NormForm::kNFKC ? unorm2_getNFKCInstance(&st)
                                                       : unorm2_getNFKDInstance(&st);
  if (U_FAILURE(st))
    return make_error(ErrorCode::kTokenizer, std::string("tokenizer: ICU normalizer unavailable: ") + u_errorName(st));
  HFS_ASSIGN_OR_RETURN(auto u16, to_utf16(text));
  const UChar* src = reinterpret_cast<const UChar*>(u16.data());
  int32_t len = static_cast<int32_t>(u16.size());
  if (unorm2_isNormalized(norm, src, len, &st) && U_SUCCESS(st)) return std::string(text);
  st = U_ZERO_ERROR;
  std::vector<UChar> out(static_cast<size_t>(len) * 3 + 16);
  int32_t n = unorm2_normalize(norm, src, len, out.data(), static_cast<int32_t>(out.size()), &st);
  if (st == U_BUFFER_OVERFLOW_ERROR) {
    out.resize(static_cast<size_t>(n));
    st = U_ZERO_ERROR;
    n = unorm2_normalize(norm, src, len, out.data(), n, &st);
  }
  if (U_FAILURE(st))
    return make_error(ErrorCode::kTokenizer, std::string("tokenizer: ICU normalization failed: ") + u_errorName(st));
  return to_utf8(out.data(), n);
}

Result<std::string> unicode_lowercase(std::string_view text) {
  if (is_ascii(text)) {
    std::string out(text);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  HFS_ASSIGN_OR_RETURN(auto u16, to_utf16(text));
  UErrorCode st = U_ZERO_ERROR;
  int32_t len = static_cast<int32_t>(u16.size());
  std::vector<UChar> out(static_cast<size_t>(len) * 2 + 16);
  int32_t n = u_strToLower(out.data(), static_cast<int32_t>(out.size()), reinterpret_cast<const UChar*>(u16.data()),
                           len, "", &st);
  if (st == U_BUFFER_OVERFLOW_ERROR) {
    out.resize(static_cast<size_t>(n));
    st = U_ZERO_ERROR;
    n = u_strToLower(out.data(), n, reinterpret_cast<const UChar*>(u16.data()), len, "", &st);
  }
  if (U_FAILURE(st))
    return make_error(ErrorCode::kTokenizer, std::string("tokenizer: ICU lowercasing failed: ") + u_errorName(st));
  return to_utf8(out.data(), n);
}

std::string remove_marks(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t start = i;
    uint32_t cp = next_cp(text, i);
    if (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_M_MASK) continue;
    out.append(text.substr(start, i - start));
  }
  return out;
}

}  // namespace hfs::tok
