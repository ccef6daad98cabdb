// logit_bias keys are token ids written exactly: the spellings strtoll stretches to an id are refused by
// name, so a request never biases a token it did not name.
#include <gtest/gtest.h>

#include <string>

#include "server/request.h"

namespace hfs::server {
namespace {

TEST(LogitBiasKeys, OnlyExactDigitsAreTokenIds) {
  for (const std::string key : {" 300", "+300", "0300", "3e2", "300 ", "-1", "1.0", ""}) {
    CompletionRequest r;
    const std::string body = R"({"prompt":"x","logit_bias":{")" + key + R"(":5}})";
    auto e = parse_completion_request(body, false, r);
    ASSERT_TRUE(e.has_value()) << "'" << key << "' was taken";
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, "logit_bias");
    EXPECT_NE(e->message.find("'" + key + "'"), std::string::npos) << e->message;
  }
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","logit_bias":{"300":5,"0":-1}})", false, r).has_value());
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.sampling.logit_bias[0].first, 300);
  EXPECT_EQ(r.sampling.logit_bias[1].first, 0);
}

}  // namespace
}  // namespace hfs::server
