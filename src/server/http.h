// server/http.h — one HTTP/1.1 request and its response as the server's handlers see them
// (server/http_server.h reads and writes them on the wire). Header names are kept lower-cased.
//
//   void handle(const HttpRequest& req, HttpResponse& res) {
//     if (req.path == "/health") return res.set_content("{\"status\":\"ok\"}", "application/json");
//     res.stream = [](StreamSink& sink) { sink.write("data: x\n\n"); sink.done = true; return true; };
//   }
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hfs::server {

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string target;   // as sent: path and query, never percent-decoded
  std::string path;     // target up to '?'
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;     // Content-Length or chunked bodies, decoded
  std::string remote_addr;
  // True once the client has closed its side of the connection (a handler waiting long polls it, to stop
  // work nobody will read); null outside a live connection.
  std::function<bool()> client_gone;

  // The first value of the header `lower_name`, "" when absent.
  std::string header(std::string_view lower_name) const;
};

// What a streamed response writes through: each write is sent at once as one chunk.
struct StreamSink {
  std::function<bool(std::string_view)> write;  // false: the client is gone
  bool done = false;                            // set by the provider after its last write
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set: the body is streamed (chunked): called again while it returns true and has not set sink.done;
  // on_end(success) runs once afterwards (success: the whole stream reached the socket).
  std::function<bool(StreamSink&)> stream;
  std::function<void(bool success)> on_end;

  void set_content(std::string text, std::string type) {
    body = std::move(text);
    content_type = std::move(type);
  }
  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
};

// The reason phrase of a status code ("Not Found"), "" for codes this server never sends.
std::string_view status_reason(int status);

// `text` safe for a one-line log: printable ASCII as is; control bytes, '"', '\\' and bytes >= 0x7f as
// \xNN, so a request field can never start a forged line.
std::string log_escape(std::string_view text);

}  // namespace hfs::server
