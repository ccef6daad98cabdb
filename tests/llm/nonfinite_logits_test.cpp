// Logits the sampler cannot use (NaN from non-finite weights) are an error naming the step, the same on
// every backend, and leave the runner needing reset() — never a silent stream of token 0.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "hfstatic/llm_runner.h"
#include "support/hf_static_fixture.h"
#include "support/program_fixtures.h"

namespace hfs {
namespace {

// A copy of `path` with row `row` of the f32 matrix constant `tensor` set to NaN. The bytes are patched
// in place, past any export-time weight check: the program is structurally valid, only its numbers are bad.
std::string with_nan_row(const std::string& path, const std::string& tensor, int64_t row, const std::string& tag) {
  auto file = test::read_file_bytes(path);
  EXPECT_TRUE(file.ok());
  auto img = test::split_program(*file);
  EXPECT_TRUE(img.ok());
  const uint64_t data_offset = test::get_u64(*file, 32);
  for (const Value& t : img->manifest.as_object().at("tensors").as_array()) {
    const Value::Object& o = t.as_object();
    if (o.at("name").as_string() != tensor) continue;
    EXPECT_EQ(o.at("dtype").as_string(), "f32");
    const int64_t cols = o.at("shape").as_array().at(1).as_int();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const size_t at = data_offset + static_cast<size_t>(o.at("offset").as_int() + row * cols * 4);
    for (int64_t c = 0; c < cols; ++c) std::memcpy(file->data() + at + static_cast<size_t>(c) * 4, &nan, 4);
    const std::string out = test::temp_dir() + "/" + tag + ".hfs";
    EXPECT_TRUE(test::write_file_bytes(out, *file).ok());
    return out;
  }
  ADD_FAILURE() << "no constant " << tensor;
  return path;
}

GenerationConfig greedy(int n) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  return g;
}

const std::vector<int32_t> kPrompt = {1, 5, 9};

class NonFiniteLogits : public ::testing::TestWithParam<std::string> {};

// NaN in one LM-head row: the logits after the prompt hold NaN at that id.
TEST_P(NonFiniteLogits, NanAfterThePromptNamesTheStepAndId) {
  const std::string prog = with_nan_row(test::tiny_program({}), "lm_head.weight", 7, "nan_head_" + GetParam());
  auto r = test::runner_on(prog, GetParam());
  ASSERT_TRUE(r);
  std::vector<int32_t> streamed;
  auto out = r->generate(kPrompt, greedy(5), [&](int32_t t) {
    streamed.push_back(t);
    return true;
  });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kExecution);
  EXPECT_NE(out.error().message().find("the prompt's last step (position 2): logits contain NaN at id 7"),
            std::string::npos)
      << out.error().message();
  EXPECT_TRUE(streamed.empty());
  // Defined state: the prompt stays committed, and nothing runs until reset().
  EXPECT_EQ(r->position(), 3);
  auto again = r->generate({}, greedy(1));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ErrorCode::kNeedsReset);
  EXPECT_NE(again.error().message().find("logits contain NaN at id 7"), std::string::npos) << again.error().message();
  EXPECT_EQ(r->decode_step(3).error().code(), ErrorCode::kNeedsReset);
  r->reset();
  auto after_reset = r->generate(kPrompt, greedy(5));
  ASSERT_FALSE(after_reset.ok());
  EXPECT_EQ(after_reset.error().message(), out.error().message());
}

// NaN in the embedding row of the first generated token: that token streams, then the decode step that
// feeds it yields all-NaN logits.
TEST_P(NonFiniteLogits, NanFromADecodeStepNamesThatStep) {
  const std::string clean = test::tiny_program({});
  auto ok = test::runner_on(clean, GetParam());
  ASSERT_TRUE(ok);
  auto ref = ok->generate(kPrompt, greedy(3));
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  const int32_t first = ref->tokens.at(0);
  // The poisoned row must not be read before: not a prompt token, not the padding id.
  ASSERT_TRUE(first != 1 && first != 5 && first != 9 && first != 2) << first;

  const std::string prog = with_nan_row(clean, "embed_tokens.weight", first, "nan_embed_" + GetParam());
  auto r = test::runner_on(prog, GetParam());
  ASSERT_TRUE(r);
  std::vector<int32_t> streamed;
  auto out = r->generate(kPrompt, greedy(5), [&](int32_t t) {
    streamed.push_back(t);
    return true;
  });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kExecution);
  EXPECT_NE(out.error().message().find("decode step 1 (position 3): logits contain NaN at id 0"), std::string::npos)
      << out.error().message();
  EXPECT_EQ(streamed, std::vector<int32_t>{first});
  EXPECT_EQ(r->position(), 4);
}

INSTANTIATE_TEST_SUITE_P(Backends, NonFiniteLogits, ::testing::Values("cpu_ref", "cpu_fast"));

}  // namespace
}  // namespace hfs
