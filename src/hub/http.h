// The two HTTP requests the hub needs, on libcurl: a HEAD that does not follow redirects (the Hub's
// metadata lives on the first answer) and a GET that follows them into a file, resuming with Range.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hfstatic/error.h"

namespace hfs::hub {

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response, names lower-case
  std::string body;                            // an error answer's first 4 KiB (never a file's bytes)
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// HEAD `url` with `headers` ("Name: value"), not following redirects. kNetwork naming the URL and curl's
// reason when no HTTP answer came; any HTTP status is a successful result for the caller to judge.
Result<HttpResponse> http_head(const std::string& url, const std::vector<std::string>& headers);

// GET `url` following redirects, writing the body to `out` from byte `offset` (sending "Range: bytes=
// offset-" when offset > 0). A 206 answer appends; a 200 answer (the server ignored the range) starts the
// file over, which *offset reports by becoming 0. on_data(position in the file, bytes, count) sees every
// piece written, so a caller can hash while the bytes arrive. Only a 200/206 body reaches `out`. kNetwork
// when the transfer fails, including one cut off half-way (the bytes that came stay in `out` for the next
// attempt to resume from). `limit` ≥ 0 bounds the file: a body that would make it longer is stopped at
// the first piece past it (nothing of that piece written), kChecksumMismatch naming the URL and the limit.
using OnData = std::function<void(int64_t at, const char* data, size_t size)>;
Result<HttpResponse> http_get_to_file(const std::string& url, const std::vector<std::string>& headers, FILE* out,
                                      int64_t* offset, const OnData& on_data, int64_t limit = -1);

}  // namespace hfs::hub
