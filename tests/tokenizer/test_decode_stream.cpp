// DecodeStream: streamed text never holds a partial character and, concatenated, is the full decode.
#include <catch2/catch.hpp>

#include <random>

#include "engine/core/types.hpp"
#include "tests/tokenizer/tokenizer_fixtures.hpp"

using namespace strata;
using namespace strata::test;
using Ids = std::vector<TokenId>;

namespace {

std::vector<std::string> stream_all(const Tokenizer& tok, const Ids& ids, bool skip_special = false) {
  DecodeStream s(tok, skip_special);
  std::vector<std::string> out;
  for (TokenId id : ids) out.push_back(s.step(id));
  out.push_back(s.flush());
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}

json sentencepiece() {
  return llama2_style({"\u2581", "h", "i", "\u2581h", "\u2581hi"}, {"\u2581 h", "\u2581h i"});
}

const std::string kReplacement = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("a character spelled by byte-fallback tokens is emitted only once complete") {
  auto tok = load_json(sentencepiece());
  // "▁hi" then € as three byte tokens, then "▁hi".
  const Ids ids{263, 3 + 0xE2, 3 + 0x82, 3 + 0xAC, 263};
  const auto parts = stream_all(*tok, ids);
  CHECK(parts == std::vector<std::string>{"hi", "", "", "\u20ac", " hi", ""});
  CHECK(join(parts) == tok->decode(ids));
}

TEST_CASE("a character split across byte-level tokens is emitted only once complete") {
  auto tok = load_json(gpt2_style({}, {}));
  // "é" is bytes C3 A9: two byte-level tokens (ids are the byte values).
  const Ids ids{'a', 0xC3, 0xA9, 'b'};
  const auto parts = stream_all(*tok, ids);
  CHECK(parts == std::vector<std::string>{"a", "", "\u00e9", "b", ""});
  for (const auto& p : parts) CHECK_FALSE(utf8::first_invalid(p).has_value());
}

TEST_CASE("the Metaspace leading space is dropped only at the start of the stream") {
  auto tok = load_json(sentencepiece());
  const Ids ids{263, 263, 263};
  CHECK(stream_all(*tok, ids) == std::vector<std::string>{"hi", " hi", " hi", ""});
}

TEST_CASE("stray bytes that never complete become U+FFFD at flush") {
  auto tok = load_json(sentencepiece());
  const Ids ids{263, 3 + 0xE2, 3 + 0x82};
  const auto parts = stream_all(*tok, ids);
  CHECK(parts.back() == kReplacement);  // E2 82 is one truncated character
  CHECK(join(parts) == "hi" + kReplacement);
  CHECK(join(parts) == tok->decode(ids));
}

TEST_CASE("text before a pending partial character is not held back with it") {
  auto tok = load_json(gpt2_style({}, {}));
  // A stray 0xFF then the lead byte of "é": the first U+FFFD is final, the second may still complete.
  const Ids ids{'a', 0xFF, 0xC3, 0xA9};
  CHECK(stream_all(*tok, ids) == std::vector<std::string>{"a", "", kReplacement, "\u00e9", ""});
}

TEST_CASE("skip_special_tokens streams the same text as decode with it") {
  auto tok = load_json(sentencepiece());
  const Ids ids{1, 263, 2, 263};
  CHECK(join(stream_all(*tok, ids, true)) == tok->decode(ids, true));
  CHECK(join(stream_all(*tok, ids, false)) == tok->decode(ids, false));
}

TEST_CASE("for random id sequences the streamed pieces concatenate to decode(all)") {
  auto bl = load_json(gpt2_style({"\u0120h", "hi"}, {"\u0120 h", "h i"}));
  auto sp = load_json(sentencepiece());
  std::mt19937 rng(1234);
  for (const Tokenizer* tok : {bl.get(), sp.get()}) {
    std::uniform_int_distribution<TokenId> pick(0, tok->vocab_size() - 1);
    for (int trial = 0; trial < 300; ++trial) {
      Ids ids(size_t(1 + trial % 17));
      for (auto& id : ids) id = pick(rng);
      const auto parts = stream_all(*tok, ids);
      INFO("trial " << trial);
      CHECK(join(parts) == tok->decode(ids));
      for (const auto& p : parts) CHECK_FALSE(utf8::first_invalid(p).has_value());
    }
  }
}
