#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

namespace hfs::server {
namespace {

using SteadyClock = std::chrono::steady_clock;

SteadyClock::time_point after(double seconds) {
  return SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
}
int ms_until(SteadyClock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - SteadyClock::now()).count();
  return ms <= 0 ? 0 : static_cast<int>(std::min<long long>(ms, 1000));
}

std::string peer_address(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  else if (a.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
  return buf;
}

bool keep_alive(const HttpRequest& req) {
  std::string c = req.header("connection");
  for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (req.version == "HTTP/1.0") return c.find("keep-alive") != std::string::npos;
  return c.find("close") == std::string::npos;
}

// After a final answer on a connection that may still hold unread bytes (a refused body, pipelined
// requests): stop sending, read and drop what comes for a moment, then close, so the kernel does not
// answer the unread bytes with a reset that would destroy the answer before the client read it.
void linger_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto until = after(1.0);
  char sink[4096];
  for (size_t dropped = 0; dropped < (1u << 20);) {
    const int ms = ms_until(until);
    if (ms <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) continue;
    const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
    if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN))) break;
    if (n > 0) dropped += static_cast<size_t>(n);
  }
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, Handler handler, Logger logger, ErrorBody error_body)
    : options_(options), handler_(std::move(handler)), logger_(std::move(logger)), error_body_(std::move(error_body)) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

HttpServer::~HttpServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

Result<int> HttpServer::bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return make_error(ErrorCode::kInvalidArgument, "cannot resolve " + host + ": " + gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, options_.backlog) == 0) {
      listen_fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return make_error(ErrorCode::kInvalidArgument, "cannot listen on " + host + ":" + service + ": " + why);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  return static_cast<int>(ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                                            : reinterpret_cast<sockaddr_in&>(bound).sin_port));
}

void HttpServer::run() {
  // Refused connections, answered and half-closed, read to their end for a moment before they are
  // closed (see linger_close); bounded, the oldest closed first.
  struct Refused {
    int fd;
    SteadyClock::time_point until;
  };
  std::vector<Refused> refused;
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    fds.assign({{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}});
    for (const Refused& r : refused) fds.push_back({r.fd, POLLIN, 0});
    const int ready = ::poll(fds.data(), fds.size(), refused.empty() ? 1000 : 100);
    if (ready < 0) continue;
    if (fds[1].revents) break;
    const auto now = SteadyClock::now();
    for (size_t i = refused.size(); i-- > 0;) {
      char sink[4096];
      bool done = now >= refused[i].until;
      if (fds[i + 2].revents) {
        const ssize_t n = ::recv(refused[i].fd, sink, sizeof sink, MSG_DONTWAIT);
        done = done || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
      }
      if (done) {
        ::close(refused[i].fd);
        refused.erase(refused.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (!fds[0].revents) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // Out of descriptors: wait a little rather than spin; the backlog holds the rest.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bool full;
    {
      std::lock_guard<std::mutex> l(mu_);
      full = active_ >= options_.max_connections;
      if (!full) ++active_, open_.insert(fd);
    }
    if (!full) {
      try {
        std::thread([this, fd, remote = peer_address(peer)] {
          serve_connection(fd, remote);
          std::lock_guard<std::mutex> l(mu_);
          open_.erase(fd);
          ::close(fd);  // under the lock: stop() never shuts down a descriptor number reused meanwhile
          --active_;
          cv_.notify_all();
        }).detach();
        continue;
      } catch (const std::system_error&) {  // no thread to be had: refuse like a full server
        std::lock_guard<std::mutex> l(mu_);
        open_.erase(fd);
        --active_;
      }
    }
    reject(fd);
    if (refused.size() >= 1024) {
      ::close(refused.front().fd);
      refused.erase(refused.begin());
    }
    refused.push_back({fd, now + std::chrono::seconds(1)});
  }
  for (const Refused& r : refused) ::close(r.fd);
}

void HttpServer::reject(int fd) {
  static std::atomic<int64_t> last_logged{-1};
  const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now().time_since_epoch()).count();
  if (last_logged.exchange(now_s) != now_s)
    std::fprintf(stderr, "hfstatic serve: refusing connections: %d are open (--max-connections)\n", options_.max_connections);
  HttpResponse res;
  error_body_(503, "the server has " + std::to_string(options_.max_connections) +
                       " connections open (--max-connections); retry later",
              res);
  std::string out = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: " + res.content_type +
                    "\r\nContent-Length: " + std::to_string(res.body.size()) +
                    "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + res.body;
  // Non-blocking and best effort: the answer fits an empty socket buffer; the accept loop never waits.
  (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
}

int HttpServer::stop(double grace_s) {
  stopping_ = true;
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  std::unique_lock<std::mutex> l(mu_);
  for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
  cv_.wait_until(l, after(grace_s), [&] { return active_ == 0; });
  return active_;
}

bool HttpServer::send_all(int fd, std::string_view data) const {
  const auto until = after(options_.write_timeout_s);
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (SteadyClock::now() >= until || stopping_.load()) return false;
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, ms_until(until));
  }
  return true;
}

bool HttpServer::write_response(int fd, const HttpRequest& req, HttpResponse& res, bool keep) const {
  // A stream to an HTTP/1.0 client cannot be chunked: its end is the connection's end.
  const bool chunked = res.stream && req.version != "HTTP/1.0";
  if (res.stream && !chunked) keep = false;
  std::string head = "HTTP/1.1 " + std::to_string(res.status) + " " + std::string(status_reason(res.status)) + "\r\n";
  if (!res.content_type.empty()) head += "Content-Type: " + res.content_type + "\r\n";
  for (const auto& [name, value] : res.headers) head += name + ": " + value + "\r\n";
  if (chunked) head += "Transfer-Encoding: chunked\r\n";
  else if (!res.stream) head += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  head += keep ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  const bool head_only = req.method == "HEAD";
  if (!res.stream) {
    if (!head_only) head += res.body;
    return send_all(fd, head) && keep;
  }
  bool ok = send_all(fd, head);
  StreamSink sink;
  sink.write = [&](std::string_view data) {
    if (!ok || data.empty()) return ok;
    if (!chunked) return ok = send_all(fd, data);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk = size;
    chunk.append(data).append("\r\n");
    return ok = send_all(fd, chunk);
  };
  while (ok && !sink.done && res.stream(sink)) {
  }
  if (ok && sink.done && chunked) ok = send_all(fd, "0\r\n\r\n");
  const bool success = ok && sink.done;
  if (res.on_end) res.on_end(success);
  return success && keep;
}

void HttpServer::serve_connection(int fd, const std::string& remote) {
  auto deadline = after(options_.read_timeout_s);
  bool timed_out = false;
  auto recv = [&](char* p, size_t n) -> long {
    for (;;) {
      const int ms = ms_until(deadline);
      if (ms <= 0) {
        timed_out = true;
        return -1;
      }
      pollfd pfd{fd, POLLIN, 0};
      const int r = ::poll(&pfd, 1, ms);
      if (r < 0 && errno != EINTR) return -1;
      if (r <= 0) continue;
      const ssize_t got = ::recv(fd, p, n, 0);
      if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      return got;
    }
  };
  RequestReader reader(options_.limits, recv, [&] { return send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n"); });
  for (;;) {
    deadline = after(options_.read_timeout_s);
    HttpRequest req;
    ReadError err;
    const RequestReader::Outcome o = reader.next(req, err);
    if (o == RequestReader::Outcome::kClosed) return;
    req.remote_addr = remote;
    if (o == RequestReader::Outcome::kGone && !timed_out) return;
    if (o != RequestReader::Outcome::kRequest) {
      if (o == RequestReader::Outcome::kGone)
        err = ReadError{408, "the request did not arrive whole within " + std::to_string(static_cast<int>(options_.read_timeout_s)) +
                                 " s (--read-timeout)"};
      HttpResponse res;
      error_body_(err.status, err.message, res);
      res.status = err.status;
      write_response(fd, req, res, false);
      logger_(req, res);
      linger_close(fd);
      return;
    }
    req.client_gone = [fd] {
      // Peer hung up or reset; its next pipelined request waiting in the buffer (POLLIN) is not a hangup.
      pollfd p{fd, POLLRDHUP, 0};
      return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    };
    HttpResponse res;
    handler_(req, res);
    const bool keep = keep_alive(req) && !stopping_.load();
    const bool again = write_response(fd, req, res, keep);
    logger_(req, res);
    if (!again) {
      if (keep) return;  // the write failed: nothing more to say
      linger_close(fd);
      return;
    }
  }
}

}  // namespace hfs::server
