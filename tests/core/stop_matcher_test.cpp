#include <catch2/catch.hpp>

#include <random>

#include "engine/core/stop_matcher.hpp"

using strata::StopMatcher;

namespace {

// Feeds pieces, returns everything released (pushes, then flush unless a stop matched).
std::string feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p);
  if (!m.matched()) out += m.flush();
  return out;
}

}  // namespace

TEST_CASE("a stop string split over several pieces is matched and never emitted", "[stop]") {
  StopMatcher m({"</end>"});
  std::string out;
  out += m.push("result: 4");
  out += m.push("2</");
  out += m.push("en");
  CHECK_FALSE(m.matched());
  out += m.push("d> trailing");
  CHECK(m.matched());
  CHECK(m.matched_stop() == "</end>");
  CHECK(out == "result: 42");
  CHECK(m.push("more") == "");
  CHECK(m.flush() == "");
}

TEST_CASE("text is held back only while it could still begin a stop string", "[stop]") {
  StopMatcher m({"STOP"});
  CHECK(m.push("abc S") == "abc ");  // "S" may begin STOP
  CHECK(m.held_bytes() == 1);
  CHECK(m.push("T") == "");          // "ST"
  CHECK(m.push("x") == "STx");       // "STx" can no longer become STOP: released at once
  CHECK(m.held_bytes() == 0);
  CHECK(m.push("no prefix here") == "no prefix here");
}

TEST_CASE("held-back text is released when generation ends without a match", "[stop]") {
  StopMatcher m({"STOP"});
  CHECK(m.push("the end ST") == "the end ");
  CHECK(m.flush() == "ST");
  CHECK_FALSE(m.matched());
}

TEST_CASE("the earliest stop string in the text wins", "[stop]") {
  StopMatcher m({"world", "lo w", "o"});
  CHECK(m.push("hello world") == "hel");
  CHECK(m.matched_stop() == "lo w");
  StopMatcher tie({"ab", "abc"});
  CHECK(tie.push("xxabcd") == "xx");
  CHECK(tie.matched_stop() == "abc");  // same start: the longer one is what the reader sees
}

TEST_CASE("a stop string that starts inside the held tail of an earlier prefix is still found", "[stop]") {
  // "aab" with stop "ab": after "a" the tail "a" is held; after "a" again the first "a" is released.
  StopMatcher m({"ab"});
  CHECK(m.push("a") == "");
  CHECK(m.push("a") == "a");
  CHECK(m.push("b") == "");
  CHECK(m.matched());
}

TEST_CASE("multi-byte UTF-8 stop strings hold back whole characters", "[stop]") {
  StopMatcher m({"\xC3\xA9t\xC3\xA9"});  // "été"
  CHECK(m.push("un \xC3\xA9") == "un ");
  CHECK(m.push("t") == "");
  CHECK(m.push("\xC3\xA9 chaud") == "");
  CHECK(m.matched());
}

TEST_CASE("empty stop strings are ignored and no stop strings pass text straight through", "[stop]") {
  StopMatcher none({});
  CHECK(none.push("S") == "S");
  StopMatcher empty({""});
  CHECK(empty.push("anything") == "anything");
  CHECK_FALSE(empty.matched());
}

TEST_CASE("released text equals the full text cut before its first stop, however it is split", "[stop]") {
  std::mt19937 rng(7);
  const std::string alphabet = "abS T";
  // No stop here can start before another yet complete after it, so "first completed" and "first in the
  // text" agree and the reference below is exact.
  const std::vector<std::string> stops = {"ST", "a b", "bbb"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    int len = static_cast<int>(rng() % 24);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    // Reference: the earliest occurrence of any stop in the whole text.
    size_t cut = std::string::npos;
    for (const auto& s : stops) cut = std::min(cut, text.find(s));
    std::string expected = cut == std::string::npos ? text : text.substr(0, cut);

    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      size_t n = 1 + rng() % 4;
      pieces.push_back(text.substr(at, n));
      at += n;
    }
    StopMatcher m(stops);
    INFO("text: '" << text << "'");
    CHECK(feed(m, pieces) == expected);
    CHECK(m.matched() == (cut != std::string::npos));
  }
}
