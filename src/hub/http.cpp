#include "hub/http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace hfs::hub {
namespace {

constexpr const char* kUserAgent = "hfstatic/0.1 (libcurl)";

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  HttpResponse response;
  CURL* curl = nullptr;
  FILE* out = nullptr;
  int64_t* offset = nullptr;
  int64_t written = 0;  // bytes of the file present (offset + this transfer's)
  bool decided = false;  // whether the body goes to `out` (200/206) or to response.body
  bool to_file = false;
  const OnData* on_data = nullptr;
  std::string io_error;
  int64_t limit = -1;       // the most bytes the file may reach (-1: none)
  bool over_limit = false;  // the body ran past it: the transfer was stopped there
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect): only the last one's headers count
    t->response.headers.clear();
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string value = line.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  t->response.headers[name] = value;
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (!t->decided) {
    t->decided = true;
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    t->to_file = t->out && (status == 200 || status == 206);
    if (t->to_file && status == 200 && *t->offset > 0) {  // the range was ignored: the whole file comes
      if (std::fflush(t->out) != 0 || ftruncate(fileno(t->out), 0) != 0 || std::fseek(t->out, 0, SEEK_SET) != 0) {
        t->io_error = "cannot restart the partial file";
        return 0;
      }
      *t->offset = 0;
      t->written = 0;
    }
  }
  if (!t->to_file) {
    if (t->response.body.size() < 4096) t->response.body.append(data, std::min<size_t>(bytes, 4096 - t->response.body.size()));
    return bytes;
  }
  if (t->limit >= 0 && t->written + static_cast<int64_t>(bytes) > t->limit) {  // stop at once, keep nothing more
    t->over_limit = true;
    return 0;
  }
  if (std::fwrite(data, 1, bytes, t->out) != bytes) {
    t->io_error = "writing the downloaded bytes failed (disk full?)";
    return 0;
  }
  if (*t->on_data) (*t->on_data)(t->written, data, bytes);
  t->written += static_cast<int64_t>(bytes);
  return bytes;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

Result<HttpResponse> perform(const std::string& url, const std::vector<std::string>& headers, bool head, Transfer& t) {
  global_init();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return make_error(ErrorCode::kInternal, "curl_easy_init failed");
  t.curl = curl.get();
  std::unique_ptr<curl_slist, SlistDeleter> list;
  for (const std::string& h : headers) list.reset(curl_slist_append(list.release(), h.c_str()));
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(c, CURLOPT_USERAGENT, kUserAgent);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  // A stalled transfer (under 1 byte/s for 30 s) fails rather than hanging; it resumes on the next try.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  if (head) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  } else {
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    if (*t.offset > 0) curl_easy_setopt(c, CURLOPT_RANGE, (std::to_string(*t.offset) + "-").c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.response.status);
  if (!t.io_error.empty()) return make_error(ErrorCode::kIo, url + ": " + t.io_error);
  if (t.over_limit)
    return make_error(ErrorCode::kChecksumMismatch,
                      "GET " + url + ": the body runs past " + std::to_string(t.limit) + " bytes; the transfer was stopped there");
  if (rc != CURLE_OK) {
    const std::string why = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
    return make_error(ErrorCode::kNetwork, std::string(head ? "HEAD " : "GET ") + url + ": " + why);
  }
  return std::move(t.response);
}

}  // namespace

Result<HttpResponse> http_head(const std::string& url, const std::vector<std::string>& headers) {
  Transfer t;
  int64_t no_offset = 0;
  t.offset = &no_offset;
  const OnData none;
  t.on_data = &none;
  return perform(url, headers, /*head=*/true, t);
}

Result<HttpResponse> http_get_to_file(const std::string& url, const std::vector<std::string>& headers, FILE* out,
                                      int64_t* offset, const OnData& on_data, int64_t limit) {
  Transfer t;
  t.limit = limit;
  t.out = out;
  t.offset = offset;
  t.written = *offset;
  t.on_data = &on_data;
  return perform(url, headers, /*head=*/false, t);
}

}  // namespace hfs::hub
