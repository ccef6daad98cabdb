// core/exact_int.h — an integer written exactly as JSON or a person writes one: the text of a map key, a
// list item or an option, with nothing that strtoll/stoll would quietly accept.
//
// strtoll takes " 300", "+300" and "0300" as 300 (and stoll stops at "3e2"), so a key the caller meant as
// something else, or a typo, silently becomes a valid id. Accepted here: an optional '-' (only where
// negatives are in range) and decimal digits, without leading zeros ("0" itself is fine), in [lo, hi].
//
//   auto id = hfs::parse_exact_int("300", 0, INT32_MAX);   // 300
//   hfs::parse_exact_int(" 300", 0, INT32_MAX);            // nullopt (so are "+300", "0300", "3e2", "")
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hfs {

std::optional<int64_t> parse_exact_int(std::string_view s, int64_t lo, int64_t hi);

}  // namespace hfs
