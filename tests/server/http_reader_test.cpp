// RequestReader (server/http_reader.h) against hand-written wire bytes, delivered in every split a TCP
// stream may give them: one request per call, pipelined requests kept, chunked bodies decoded, and every
// ambiguity or excess refused with the status RFC 9110/9112 name. The JSON depth scan (core/json_depth.h) too.
#include "server/http_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/json_depth.h"
#include "server/api_error.h"

namespace hfs::server {
namespace {

// Bytes of `wire` handed out at most `piece` at a time, then EOF.
struct Feed {
  std::string wire;
  size_t piece;
  size_t at = 0;
  long operator()(char* p, size_t n) {
    const size_t k = std::min({n, piece, wire.size() - at});
    std::memcpy(p, wire.data() + at, k);
    at += k;
    return static_cast<long>(k);
  }
};

struct Read {
  RequestReader::Outcome outcome;
  HttpRequest req;
  ReadError err;
};

std::vector<Read> read_all(const std::string& wire, size_t piece, HttpLimits limits = {}) {
  Feed feed{wire, piece};
  int continues = 0;
  RequestReader reader(limits, [&](char* p, size_t n) { return feed(p, n); }, [&] { return ++continues, true; });
  std::vector<Read> out;
  for (;;) {
    Read r;
    r.outcome = reader.next(r.req, r.err);
    if (r.outcome == RequestReader::Outcome::kClosed) return out;
    out.push_back(r);
    if (r.outcome != RequestReader::Outcome::kRequest) return out;
  }
}

class Splits : public ::testing::TestWithParam<size_t> {};
INSTANTIATE_TEST_SUITE_P(HttpReader, Splits, ::testing::Values(1, 2, 7, 100000));

TEST_P(Splits, PipelinedRequestsComeOneAtATime) {
  const std::string wire =
      "POST /tokenize?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-A:  b c \r\n\r\nhello"
      "POST /t HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n"
      "GET / HTTP/1.0\n\n";
  const auto got = read_all(wire, GetParam());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].req.method, "POST");
  EXPECT_EQ(got[0].req.path, "/tokenize");
  EXPECT_EQ(got[0].req.target, "/tokenize?x=1");
  EXPECT_EQ(got[0].req.body, "hello");
  EXPECT_EQ(got[0].req.header("x-a"), "b c");
  EXPECT_EQ(got[1].req.body, "abcde");
  EXPECT_EQ(got[2].req.version, "HTTP/1.0");
  EXPECT_EQ(got[2].req.body, "");
}

TEST_P(Splits, BodiesPastTheLimitAreRefusedBeforeTheyAreRead) {
  HttpLimits small;
  small.max_body_bytes = 8;
  auto got = read_all("POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n123456789", GetParam(), small);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].err.status, 413);
  got = read_all("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n4\r\n6789\r\n0\r\n\r\n", GetParam(), small);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].err.status, 413);
  got = read_all("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", GetParam(), small);
  EXPECT_EQ(got[0].err.status, 400);  // a size past any limit's arithmetic
}

TEST(HttpReader, AmbiguousOrMalformedRequestsAreRefused) {
  const std::pair<const char*, int> cases[] = {
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1 1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nA b\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400},
      {"GET /a\rb HTTP/1.1\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2\r\n\r\n", 505},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
  };
  for (const auto& [wire, status] : cases) {
    const auto got = read_all(wire, 100000);
    ASSERT_EQ(got.size(), 1u) << wire;
    EXPECT_EQ(got[0].outcome, RequestReader::Outcome::kError) << wire;
    EXPECT_EQ(got[0].err.status, status) << wire;
  }
}

TEST(HttpReader, HeadsPastTheLimitAre431) {
  HttpLimits small;
  small.max_head_bytes = 64;
  auto got = read_all("GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n", 3, small);
  EXPECT_EQ(got[0].err.status, 431);
  got = read_all("GET / HTTP/1.1\r\n" + std::string(200, 'a'), 3, small);  // no end in sight
  EXPECT_EQ(got[0].err.status, 431);
  small.max_headers = 2;
  small.max_head_bytes = 1000;
  got = read_all("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 1000, small);
  EXPECT_EQ(got[0].err.status, 431);
}

TEST(HttpReader, AConnectionEndingInsideARequestIsGone) {
  auto got = read_all("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].outcome, RequestReader::Outcome::kGone);
  got = read_all("GET / HTTP/1.1\r\nHost", 2);
  EXPECT_EQ(got[0].outcome, RequestReader::Outcome::kGone);
  EXPECT_TRUE(read_all("", 2).empty());
}

TEST(HttpReader, LogEscapeLeavesNoLineBreakOrQuote) {
  EXPECT_EQ(log_escape("a\nb\r\"c\\\x7f\xff"), "a\\x0ab\\x0d\\x22c\\x5c\\x7f\\xff");
  EXPECT_EQ(log_escape("/v1/models?x=1"), "/v1/models?x=1");
}

TEST(JsonDepth, CountsBracketsOutsideStrings) {
  EXPECT_FALSE(json_nesting_exceeds("{}", 1));
  EXPECT_EQ(json_nesting_exceeds("{}", 0), 0u);
  EXPECT_FALSE(json_nesting_exceeds(R"({"a": [1, {"b": []}]})", 4));
  EXPECT_EQ(json_nesting_exceeds(R"({"a": [1, {"b": []}]})", 3), 16u);  // the innermost '['
  EXPECT_FALSE(json_nesting_exceeds(R"({"a": "[[[[\"[[[", "b": "\\"})", 1));  // brackets in strings
  EXPECT_FALSE(json_nesting_exceeds("1", 0));
  EXPECT_EQ(json_nesting_exceeds(std::string(100000, '['), kMaxJsonDepth), kMaxJsonDepth);
  EXPECT_FALSE(json_nesting_exceeds(std::string(64, '[') + std::string(64, ']'), kMaxJsonDepth));
}

}  // namespace
}  // namespace hfs::server
