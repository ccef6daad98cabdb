#include "server/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hfs::server {
namespace {

// Feeds `pieces` one at a time; returns everything emitted (flushed at the end unless stopped).
std::string run(const std::vector<std::string>& stops, const std::vector<std::string>& pieces, bool* stopped = nullptr) {
  StopMatcher m(stops);
  std::string out;
  for (const std::string& p : pieces) out += m.feed(p);
  out += m.flush();
  if (stopped) *stopped = m.stopped();
  return out;
}

TEST(StopMatcher, StopSplitAcrossPiecesIsNeverEmitted) {
  bool stopped = false;
  EXPECT_EQ(run({"The end"}, {"happy. Th", "e e", "nd. More"}, &stopped), "happy. ");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, HoldsBackOnlyAPossibleStart) {
  StopMatcher m({"\n\n"});
  EXPECT_EQ(m.feed("one\n"), "one");  // "\n" may start the stop string
  EXPECT_EQ(m.feed("two"), "\ntwo");  // it did not
  EXPECT_EQ(m.feed("\n"), "");
  EXPECT_EQ(m.feed("\nafter"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.feed("more"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  EXPECT_EQ(run({"cd", "b"}, {"abcd"}), "a");
  EXPECT_EQ(run({"xyz", "yq"}, {"axy", "q"}), "ax");
}

TEST(StopMatcher, NoStopsOrUnfinishedStopPassesEverything) {
  EXPECT_EQ(run({}, {"a", "b"}), "ab");
  EXPECT_EQ(run({""}, {"a", "b"}), "ab");  // an empty stop string is ignored, as OpenAI does
  bool stopped = true;
  EXPECT_EQ(run({"end!"}, {"the en", "d"}, &stopped), "the end");  // held back "end", flushed at the end
  EXPECT_FALSE(stopped);
}

TEST(StopMatcher, MultibyteTextIsNotSplit) {
  // "é" is two bytes; the stop string starts with it, so it is held back whole and then released whole.
  StopMatcher m({"é!"});
  EXPECT_EQ(m.feed("caf\xc3\xa9"), "caf");
  EXPECT_EQ(m.feed("s"), "\xc3\xa9s");
}

}  // namespace
}  // namespace hfs::server
