#include "server/http_reader.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace hfs::server {
namespace {

// RFC 9110 token characters (methods and header names).
bool is_tchar(unsigned char c) {
  return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}
bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c != '\0' && is_tchar(static_cast<unsigned char>(c)); });
}
// A field value: visible bytes, spaces, tabs and obs-text; no other control byte.
bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}
// A request target in origin form: '/' then visible ASCII only (no spaces, controls or raw 8-bit bytes).
bool is_origin_target(std::string_view s) {
  return !s.empty() && s[0] == '/' &&
         std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
// Digits only, no sign, no overflow past 2^62.
bool parse_decimal(std::string_view s, size_t& out) {
  if (s.empty() || s.size() > 18) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<size_t>(c - '0');
  }
  return true;
}
bool parse_hex(std::string_view s, size_t& out) {
  if (s.empty() || s.size() > 15) return false;
  out = 0;
  for (char c : s) {
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else return false;
    out = out * 16 + static_cast<size_t>(v);
  }
  return true;
}

RequestReader::Outcome fail(ReadError& err, int status, std::string message) {
  err = ReadError{status, std::move(message)};
  return RequestReader::Outcome::kError;
}

}  // namespace

bool RequestReader::fill() {
  if (pos_ > 0 && pos_ == buf_.size()) buf_.clear(), pos_ = 0;
  if (pos_ > 65536) buf_.erase(0, pos_), pos_ = 0;
  char tmp[16384];
  const long n = recv_(tmp, sizeof tmp);
  if (n <= 0) return false;
  buf_.append(tmp, static_cast<size_t>(n));
  return true;
}

bool RequestReader::take(std::string& out, size_t n) {
  while (buf_.size() - pos_ < n) {
    const size_t have = buf_.size() - pos_;
    out.append(buf_, pos_, have);
    n -= have;
    buf_.clear(), pos_ = 0;
    if (!fill()) return false;
  }
  out.append(buf_, pos_, n);
  pos_ += n;
  return true;
}

RequestReader::Outcome RequestReader::read_line(std::string& line, size_t most, ReadError& err) {
  for (;;) {
    const size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos) {
      size_t end = nl;
      if (end > pos_ && buf_[end - 1] == '\r') --end;
      if (end - pos_ > most) return fail(err, 400, "a chunk line is longer than " + std::to_string(most) + " bytes");
      line.assign(buf_, pos_, end - pos_);
      pos_ = nl + 1;
      return Outcome::kRequest;
    }
    if (buf_.size() - pos_ > most + 1) return fail(err, 400, "a chunk line is longer than " + std::to_string(most) + " bytes");
    if (!fill()) return Outcome::kGone;
  }
}

RequestReader::Outcome RequestReader::next(HttpRequest& req, ReadError& err) {
  req = HttpRequest{};
  // Blank lines before a request are tolerated (RFC 9112 §2.2), a few of them.
  for (int blank = 0;; ++blank) {
    while (pos_ == buf_.size())
      if (!fill()) return Outcome::kClosed;
    if (blank > 8 || (buf_[pos_] != '\r' && buf_[pos_] != '\n')) break;
    ++pos_;
  }
  if (Outcome o = read_head(req, err); o != Outcome::kRequest) return o;
  return read_body(req, err);
}

RequestReader::Outcome RequestReader::read_head(HttpRequest& req, ReadError& err) {
  size_t end;  // index of the blank line's '\n'
  for (size_t from = pos_;;) {
    end = buf_.find('\n', from);
    bool found = false;
    while (end != std::string::npos) {
      // A line ending followed by an empty line (CRLF CRLF, or bare LFs).
      size_t after_nl = end + 1;
      if (after_nl < buf_.size() && buf_[after_nl] == '\r') ++after_nl;
      if (after_nl < buf_.size() && buf_[after_nl] == '\n') {
        end = after_nl;
        found = true;
        break;
      }
      end = buf_.find('\n', end + 1);
    }
    if (found && end + 1 - pos_ <= limits_.max_head_bytes) break;
    if (buf_.size() - pos_ > limits_.max_head_bytes)
      return fail(err, 431, "the request line and headers are larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
    const size_t before = buf_.size() - pos_;
    if (!fill()) return Outcome::kGone;
    from = pos_ + (before > 3 ? before - 3 : 0);
  }
  std::string_view head(buf_.data() + pos_, end + 1 - pos_);
  pos_ = end + 1;
  // Lines, each without its CR LF.
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return fail(err, 400, "a bare CR inside the request head");
    if (!line.empty()) lines.push_back(line);
  }
  // The request line: METHOD SP target SP HTTP/1.x, single spaces.
  const std::string_view rl = lines.empty() ? std::string_view() : lines[0];
  const size_t s1 = rl.find(' '), s2 = s1 == std::string_view::npos ? s1 : rl.find(' ', s1 + 1);
  if (s2 == std::string_view::npos || rl.find(' ', s2 + 1) != std::string_view::npos)
    return fail(err, 400, "the request line must be 'METHOD /path HTTP/1.1'");
  const std::string_view method = rl.substr(0, s1), target = rl.substr(s1 + 1, s2 - s1 - 1), version = rl.substr(s2 + 1);
  if (!is_token(method)) return fail(err, 400, "the request method is not a token");
  if (!is_origin_target(target)) return fail(err, 400, "the request target must be a path starting with '/' in printable ASCII");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.substr(0, 5) == "HTTP/") return fail(err, 505, "only HTTP/1.0 and HTTP/1.1 are served");
    return fail(err, 400, "the request line must end with the HTTP version");
  }
  req.method = method, req.target = target, req.version = version;
  req.path = target.substr(0, target.find('?'));
  if (lines.size() - 1 > limits_.max_headers)
    return fail(err, 431, "the request has more than " + std::to_string(limits_.max_headers) + " headers");
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line[0] == ' ' || line[0] == '\t') return fail(err, 400, "obsolete header line folding is not accepted");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return fail(err, 400, "a header line must be 'Name: value'");
    const std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return fail(err, 400, "a header value holds a control byte");
    req.headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
  return Outcome::kRequest;
}

RequestReader::Outcome RequestReader::read_body(HttpRequest& req, ReadError& err) {
  bool has_length = false, chunked = false;
  size_t length = 0;
  for (const auto& [name, value] : req.headers) {
    if (name == "content-length") {
      size_t v;
      if (!parse_decimal(value, v)) return fail(err, 400, "Content-Length must be a decimal number of bytes");
      if (has_length && v != length) return fail(err, 400, "the request has Content-Length headers that disagree");
      has_length = true, length = v;
    } else if (name == "transfer-encoding") {
      if (chunked || lower(value) != "chunked")
        return fail(err, 501, "the only transfer coding accepted is a single 'chunked', got '" + value + "'");
      chunked = true;
    }
  }
  if (chunked && req.version != "HTTP/1.1") return fail(err, 400, "Transfer-Encoding needs HTTP/1.1");
  if (chunked && has_length) return fail(err, 400, "a request must not have both Content-Length and Transfer-Encoding");
  if (has_length && length > limits_.max_body_bytes)
    return fail(err, 413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
  const std::string expect = lower(req.header("expect"));
  if (!expect.empty()) {
    if (expect != "100-continue") return fail(err, 417, "the only expectation accepted is '100-continue'");
    // Only when the body is not already here (a client that sent it anyway needs no go-ahead).
    if ((chunked || length > 0) && pos_ == buf_.size() && !send_continue_()) return Outcome::kGone;
  }
  if (chunked) return read_chunked(req, err);
  if (length > 0 && !take(req.body, length)) return Outcome::kGone;
  return Outcome::kRequest;
}

RequestReader::Outcome RequestReader::read_chunked(HttpRequest& req, ReadError& err) {
  std::string line;
  for (;;) {
    if (Outcome o = read_line(line, 1024, err); o != Outcome::kRequest) return o;
    const std::string_view size_text = trim(std::string_view(line).substr(0, line.find(';')));
    size_t size;
    if (!parse_hex(size_text, size)) return fail(err, 400, "a chunk size must be hexadecimal, got '" + log_escape(line) + "'");
    if (size > limits_.max_body_bytes - req.body.size())
      return fail(err, 413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
    if (size == 0) break;
    if (!take(req.body, size)) return Outcome::kGone;
    if (Outcome o = read_line(line, 0, err); o != Outcome::kRequest)
      return o == Outcome::kError ? fail(err, 400, "a chunk's data must end with CRLF") : o;
  }
  // Trailer fields, read and dropped, bounded like a head.
  size_t trailer = 0;
  for (;;) {
    if (Outcome o = read_line(line, limits_.max_head_bytes, err); o != Outcome::kRequest) return o;
    if (line.empty()) return Outcome::kRequest;
    trailer += line.size();
    if (trailer > limits_.max_head_bytes)
      return fail(err, 431, "the trailer fields are larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
  }
}

std::string HttpRequest::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name) return value;
  return {};
}

std::string log_escape(std::string_view text) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

std::string_view status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "";
  }
}

}  // namespace hfs::server
