// server/stop_matcher.h — OpenAI `stop` strings over streamed text: a stop string may arrive split across
// several tokens' pieces, and neither it nor anything after it is ever emitted.
//
//   StopMatcher m({"\n\n", "The end"});
//   std::string out = m.feed("Once upon a ti");   // "Once upon a ti"
//   out = m.feed("me.\n");                        // "me." — "\n" is held back: it may start "\n\n"
//   out = m.feed("\nMore");                       // "" and m.stopped(): the stop string completed
//   out = m.flush();                              // at the end of generation: whatever is held back
//
// Text is held back only while it is a prefix of some stop string, so the delay is at most the longest
// stop string's length minus one byte. Pieces are complete UTF-8 (StreamDecoder's), and a held-back tail
// equals a stop string's prefix, so what is emitted never splits a character.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hfs::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // The text that can be shown now. After a stop string completes, stopped() is true and feed returns "".
  std::string feed(std::string_view piece);
  // The held-back text (generation ended without completing a stop string); "" once stopped.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace hfs::server
