// server/http_server.h — the server's own small HTTP/1.1 layer: a listening socket, one thread per
// connection up to a cap, requests read strictly by server/http_reader.h and answered in order.
// Every resource a client can hold is bounded: a connection past max_connections is answered 503 at once
// and closed; a request must arrive whole (head and body) within read_timeout_s of the connection becoming
// ready for it (else 408 and close; an idle keep-alive connection is closed silently); a write blocked past
// write_timeout_s ends the connection; stop() wakes every connection and returns within its grace.
// Range headers are ignored (RFC 9110 allows it): every answer is the whole, bounded, representation.
//
//   HttpServer http(options, handle, log, error_body);
//   Result<int> port = http.bind("127.0.0.1", 0);
//   std::thread t([&] { http.run(); });
//   ...; http.stop(2.0); t.join();
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "hfstatic/error.h"
#include "server/http.h"
#include "server/http_reader.h"

namespace hfs::server {

struct HttpServerOptions {
  HttpLimits limits;
  double read_timeout_s = 10;   // a whole request (head and body), and a keep-alive connection's idle wait
  double write_timeout_s = 30;  // one blocked write (a client that stopped reading)
  int max_connections = 256;    // open connections; one more is answered 503 and closed
  int backlog = 4096;           // listen(2) backlog (the kernel caps it at net.core.somaxconn)
};

class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
  // Called once per answered request, after its response was written (or failed), on the same thread.
  using Logger = std::function<void(const HttpRequest&, const HttpResponse&)>;
  // Fills the answer to a request refused before it reached the handler (bad framing, limits, timeouts).
  using ErrorBody = std::function<void(int status, const std::string& message, HttpResponse&)>;

  HttpServer(HttpServerOptions options, Handler handler, Logger logger, ErrorBody error_body);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Listens on host:port (0: any free port); returns the port.
  [[nodiscard]] Result<int> bind(const std::string& host, int port);
  // Accepts connections until stop(); call on a thread of its own.
  void run();
  // Stops accepting, shuts every open connection's socket down (their threads see EOF or a failed write)
  // and waits up to grace_s for their threads to end. Returns how many are still running (0: all ended).
  int stop(double grace_s);

 private:
  void serve_connection(int fd, const std::string& remote);
  void reject(int fd);
  bool send_all(int fd, std::string_view data) const;
  bool write_response(int fd, const HttpRequest& req, HttpResponse& res, bool keep_alive) const;

  HttpServerOptions options_;
  Handler handler_;
  Logger logger_;
  ErrorBody error_body_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // guards open_, active_
  std::condition_variable cv_;
  std::set<int> open_;
  int active_ = 0;
};

}  // namespace hfs::server
