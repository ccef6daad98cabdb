#include "sampling_options.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <system_error>
#include <type_traits>

#include "option_checks.h"

namespace hfs::cli {
namespace {

// A field's accepted values in the library's words: the answer for a value no field accepts (NaN, -1).
template <typename T>
std::string expected_for(T SamplingConfig::*field) {
  SamplingConfig probe;
  probe.*field = std::is_floating_point_v<T> ? std::numeric_limits<T>::quiet_NaN() : T(-1);
  auto bad = find_invalid_field(probe);
  return bad ? std::string(bad->expected) : std::string("a valid value");
}

// Whether `v` in `field` passes the library's check (other fields at their defaults, which pass).
template <typename T>
bool accepted(T SamplingConfig::*field, T v) {
  SamplingConfig probe;
  probe.*field = v;
  return !find_invalid_field(probe).has_value();
}

CLI::Option* add_float(CLI::App& sub, const std::string& flag, SamplingConfig& c, float SamplingConfig::*field,
                       const std::string& what) {
  const std::string expected = expected_for(field);
  return sub.add_option(flag, c.*field, what + ": " + expected)
      ->capture_default_str()
      ->type_name("NUMBER")
      ->transform(float_where([field](float v) { return accepted(field, v); }, expected));
}

// "ID+BIAS" or "ID-BIAS" (llama-cli's form): a token id and a finite bias; "-inf" bans the token.
CLI::Validator logit_bias_entry() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const std::string expected = "expected ID+BIAS or ID-BIAS (a token id, then a finite bias or -inf), got '" + s + "'";
        const size_t sign = s.find_first_of("+-");
        if (sign == 0 || sign == std::string::npos) return expected;
        int32_t id = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + sign, id);
        if (ec != std::errc() || p != s.data() + sign || id < 0) return expected;
        const std::string bias = s.substr(sign + 1);
        if (s[sign] == '-' && bias == "inf") return {};
        float v = 0;
        auto [q, ec2] = std::from_chars(bias.data(), bias.data() + bias.size(), v);
        if (bias.empty() || ec2 != std::errc() || q != bias.data() + bias.size() || !std::isfinite(v) ||
            bias.find_first_of("+-") == 0)
          return expected;
        return {};
      },
      "");
}

// A banned token's bias: far below any logit, finite (the library accepts finite biases only).
constexpr float kBan = -1e30f;

}  // namespace

SamplingConfig default_sampling() {
  return SamplingConfig{.temperature = kDefaultTemperature, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
}

uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string logit_bias_outside(const SamplingConfig& c, int64_t vocab_size) {
  for (const auto& [id, bias] : c.logit_bias)
    if (id >= vocab_size)
      return "--logit-bias: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(vocab_size) + ")";
  return {};
}

void add_sampling_options(CLI::App& sub, SamplingConfig& c) {
  add_float(sub, "--temp", c, &SamplingConfig::temperature, "Temperature");
  const std::string top_k = expected_for(&SamplingConfig::top_k) + ", at most 2147483647";
  sub.add_option("--top-k", c.top_k, "Top-k: " + top_k)
      ->capture_default_str()
      ->type_name("INT")
      ->transform(CLI::Validator(
          [top_k](std::string& s) -> std::string {
            int32_t v = 0;
            const char* end = s.data() + s.size();
            auto [p, ec] = std::from_chars(s.data(), end, v);
            if (s.empty() || ec != std::errc() || p != end || !accepted(&SamplingConfig::top_k, v))
              return "expected " + top_k + ", got '" + s + "'";
            s = std::to_string(v);
            return {};
          },
          ""));
  add_float(sub, "--top-p", c, &SamplingConfig::top_p, "Top-p");
  add_float(sub, "--min-p", c, &SamplingConfig::min_p, "Min-p");
  add_float(sub, "--repeat-penalty", c, &SamplingConfig::repetition_penalty, "Repetition penalty");
  add_float(sub, "--presence-penalty", c, &SamplingConfig::presence_penalty,
            "Presence penalty (OpenAI's: subtracted once from the logit of every token already in the text)");
  add_float(sub, "--frequency-penalty", c, &SamplingConfig::frequency_penalty,
            "Frequency penalty (OpenAI's: subtracted from a token's logit per occurrence in the text)");
  sub.add_option_function<std::vector<std::string>>(
         "--logit-bias",
         [&c](const std::vector<std::string>& entries) {
           for (const std::string& e : entries) {
             const size_t sign = e.find_first_of("+-");
             const int32_t id = std::stoi(e.substr(0, sign));
             const std::string bias = e.substr(sign + 1);
             const float v = e[sign] == '-' && bias == "inf" ? kBan : std::stof(e.substr(sign));
             c.logit_bias.emplace_back(id, v);
           }
         },
         "Add BIAS to token ID's logit before sampling, as ID+BIAS or ID-BIAS (e.g. 15043+1, 2-inf: -inf bans "
         "the token); repeatable")
      ->type_name("ID(+|-)BIAS")
      ->allow_extra_args(false)
      ->check(logit_bias_entry());
  c.seed = random_seed();
  sub.add_option("-s,--seed", c.seed,
                 "Sampling seed, an integer in [0, 2^64 - 1] (same seed, same tokens; default: drawn at random and "
                 "printed with the stats, so a run can be repeated)")
      ->type_name("INT")
      ->transform(any_uint64());
}

void add_draft_options(CLI::App& sub, DraftConfig& d) {
  sub.add_option_function<std::string>(
         "--draft",
         [&d](const std::string& v) {
           d.kind = v == "ngram" ? DraftKind::kNgram : v == "none" ? DraftKind::kNone : DraftKind::kProgram;
           d.program_path = d.kind == DraftKind::kProgram ? v : std::string();
         },
         "Speculative decoding: none; ngram (drafts from the text so far, no extra model); or PATH.hfs, a draft "
         "program (a smaller export with the same tokenizer, decoding greedily on its own caches; checked at "
         "load). Drafts are verified several per step: needs a program with step methods (export --step-sizes, "
         "or --sequences > 1). The output is the same as without")
      ->default_str("none")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            if (s == "none" || s == "ngram") return {};
            std::error_code ec;
            if (std::filesystem::is_regular_file(s, ec)) return {};
            return "expected none, ngram or the path of a draft program (.hfs), got '" + s + "': no such file";
          },
          ""));
  sub.add_option("--draft-max", d.max_tokens,
                 "The most drafts verified per step, an integer in [1, 1024] (also capped by the program's largest "
                 "step method - 1); the count adapts to how many are accepted")
      ->capture_default_str()
      ->transform(integer_in(1, 1024, "an integer in [1, 1024]"));
}

}  // namespace hfs::cli
