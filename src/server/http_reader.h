// server/http_reader.h — a strict HTTP/1.1 request reader: one request per call from a connection's bytes,
// bytes past it kept for the next call (pipelining), every size bounded before it is buffered.
// Refused (an HTTP status and a message; the connection is then closed): a head over max_head_bytes (431),
// a body over max_body_bytes by Content-Length or chunked (413, before any of it is read), both
// Content-Length and Transfer-Encoding, Content-Lengths that disagree, a transfer coding other than
// chunked (501), obsolete line folding, bytes that no request line or header may hold (400). The body is
// read whole before the request is handed on, so a body that arrives late is never taken for a request.
//
//   RequestReader reader(limits, [&](char* p, size_t n) { return recv_with_deadline(fd, p, n); },
//                        [&] { return send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n"); });
//   HttpRequest req; ReadError err;
//   while (reader.next(req, err) == RequestReader::Outcome::kRequest) { ... }
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "server/http.h"

namespace hfs::server {

struct HttpLimits {
  size_t max_head_bytes = 32 * 1024;  // request line and headers together
  size_t max_headers = 100;
  size_t max_body_bytes = 1 << 20;    // after chunked decoding
};

struct ReadError {
  int status = 400;
  std::string message;
};

class RequestReader {
 public:
  // recv: up to n bytes into p; > 0 bytes read, 0 the peer closed, < 0 timed out or failed.
  using Recv = std::function<long(char* p, size_t n)>;
  // send_continue: writes "100 Continue" (for "Expect: 100-continue"); false when it failed.
  RequestReader(HttpLimits limits, Recv recv, std::function<bool()> send_continue)
      : limits_(limits), recv_(std::move(recv)), send_continue_(std::move(send_continue)) {}

  enum class Outcome {
    kRequest,  // req holds a whole request
    kClosed,   // the peer closed (or timed out) before a request's first byte: nothing to answer
    kGone,     // the peer closed or timed out inside a request: nothing can be answered
    kError,    // err says what to answer before closing
  };
  Outcome next(HttpRequest& req, ReadError& err);

 private:
  bool fill();  // more bytes into buf_; false at EOF, timeout or error
  Outcome read_head(HttpRequest& req, ReadError& err);
  Outcome read_body(HttpRequest& req, ReadError& err);
  Outcome read_chunked(HttpRequest& req, ReadError& err);
  // One line (CRLF or LF ended, at most `most` bytes) from the buffer, filling as needed.
  Outcome read_line(std::string& line, size_t most, ReadError& err);
  bool take(std::string& out, size_t n);  // n bytes, filling as needed

  HttpLimits limits_;
  Recv recv_;
  std::function<bool()> send_continue_;
  std::string buf_;
  size_t pos_ = 0;  // bytes of buf_ already consumed
};

}  // namespace hfs::server
