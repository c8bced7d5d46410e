// The Tokenizer face: loading, the encode pipeline with added tokens and post-processing, decoding.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/core/types.hpp"
#include "engine/tokenizer/bpe_model.hpp"
#include "tests/tokenizer/tokenizer_fixtures.hpp"

using namespace strata;
using namespace strata::test;
using Ids = std::vector<TokenId>;

namespace {

// A byte-level tokenizer with a few merges ("Ġh", "hi", "Ġhi") and added tokens at 300+.
json chat_tokenizer(json added) {
  return gpt2_style({"\u0120h", "hi", "\u0120hi"}, {"\u0120 h", "h i", "\u0120h i"}, added);
}

// Byte-level ids are the byte values: 'h' is 104, and the space byte (shown as Ġ) is 32.
const TokenId kH = 'h', kSpace = ' ';

}  // namespace

TEST_CASE("a byte-level tokenizer encodes through pre-tokenizer and merges, and decodes back") {
  auto tok = load_json(chat_tokenizer(json::array()));
  const Ids ids = tok->encode("hi hi");
  CHECK(ids == Ids{257, 258});  // "hi", "Ġhi"
  CHECK(tok->decode(ids) == "hi hi");
  CHECK(tok->encode("h") == Ids{kH});
  CHECK(tok->id_to_token(256) == "\u0120h");
  CHECK(tok->token_to_id("\u0120hi") == std::optional<TokenId>(258));
  CHECK_FALSE(tok->token_to_id("nope").has_value());
  CHECK(tok->id_to_token(100000).empty());
}

TEST_CASE("added tokens written in the text are recognized, longest match first") {
  auto tok = load_json(chat_tokenizer(json::array({added_token(300, "<|a|>", true), added_token(301, "<|a|>x", true),
                                                   added_token(302, "word", false)})));
  CHECK(tok->encode("hi<|a|>hi") == Ids{257, 300, 257});
  CHECK(tok->encode("<|a|>x") == Ids{301});
  CHECK(tok->encode("<|a|") == Ids{'<', '|', 'a', '|'});  // an incomplete token is plain text
  CHECK(tok->encode("hiword") == Ids{257, 302});           // non-special added tokens too
  CHECK(tok->vocab_size() == 303);
  CHECK(tok->is_special(300));
  CHECK_FALSE(tok->is_special(302));
  CHECK_FALSE(tok->is_special(257));
}

TEST_CASE("lstrip and rstrip swallow the whitespace beside an added token") {
  auto tok = load_json(chat_tokenizer(json::array({added_token(300, "<L>", true, {{"lstrip", true}}),
                                                   added_token(301, "<R>", true, {{"rstrip", true}})})));
  CHECK(tok->encode("hi  <L>hi") == Ids{257, 300, 257});
  CHECK(tok->encode("hi<R>  hi") == Ids{257, 301, 257});
  CHECK(tok->encode("hi <R>") == Ids{257, kSpace, 301});  // rstrip takes only the space after it
}

TEST_CASE("single_word added tokens match only between word boundaries") {
  auto tok = load_json(chat_tokenizer(json::array({added_token(300, "hi", false, {{"single_word", true}})})));
  CHECK(tok->encode("hi") == Ids{300});
  CHECK(tok->encode("chi") == Ids{'c', 257});  // inside a word: BPE as usual
}

TEST_CASE("normalized added tokens are matched after normalization, raw ones before") {
  json doc = chat_tokenizer(json::array({added_token(300, "\u00e9", false, {{"normalized", true}}),
                                         added_token(301, "e\u0301x", true, {{"normalized", false}})}));
  doc["normalizer"] = {{"type", "NFC"}};
  auto tok = load_json(doc);
  CHECK(tok->encode("e\u0301") == Ids{300});    // NFC turns e + U+0301 into é, which then matches
  CHECK(tok->encode("e\u0301x") == Ids{301});   // the raw token wins on the raw text
}

TEST_CASE("add_special_tokens applies the TemplateProcessing post-processor") {
  auto tok = load_json(llama2_style({"\u2581", "h", "i", "\u2581h", "\u2581hi"}, {"\u2581 h", "\u2581h i"}));
  CHECK(tok->encode("hi", true) == Ids{1, 263});
  CHECK(tok->encode("hi", false) == Ids{263});
  CHECK(tok->decode({1, 263}) == "<s> hi");
  CHECK(tok->decode({1, 263}, true) == "hi");
}

TEST_CASE("SentencePiece-style BPE spells unknown characters with byte tokens and decodes them back") {
  auto tok = load_json(llama2_style({"\u2581", "h", "i", "\u2581h", "\u2581hi"}, {"\u2581 h", "\u2581h i"}));
  // "▁€": ▁ is a piece, € is not, so it is spelled as its bytes E2 82 AC (ids 3 + byte).
  const Ids ids = tok->encode("\u20ac");
  CHECK(ids == Ids{259, 3 + 0xE2, 3 + 0x82, 3 + 0xAC});
  CHECK(tok->decode(ids) == "\u20ac");  // the prefix ▁ became a space, which Strip removes
  CHECK(tok->decode({3 + 0xE2, 3 + 0x82}) == "\xEF\xBF\xBD");  // a truncated character: one U+FFFD
}

TEST_CASE("invalid UTF-8 input is an error, not a crash") {
  auto tok = load_json(chat_tokenizer(json::array()));
  CHECK_THROWS_AS(tok->encode("ok\xFFno"), Error);
  CHECK_THROWS_WITH(tok->encode("ok\xC3"), Catch::Contains("not valid UTF-8"));
}

TEST_CASE("decoding never returns invalid UTF-8") {
  auto tok = load_json(chat_tokenizer(json::array()));
  // Byte-level id 0xC3 alone is a lead byte without its continuation.
  CHECK(tok->decode({'h', 0xC3}) == "h\xEF\xBF\xBD");
  CHECK(tok->decode({}) == "");
}

TEST_CASE("loading: a directory holding tokenizer.json, and clear errors for bad files") {
  namespace fs = std::filesystem;
  const fs::path file = write_temp_json(chat_tokenizer(json::array()));
  const fs::path dir = file.parent_path() / "as_dir";
  fs::create_directories(dir);
  fs::copy_file(file, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
  CHECK(Tokenizer::load(dir.string())->encode("hi") == Ids{257});
  CHECK_THROWS_WITH(Tokenizer::load((dir / "missing.json").string()), Catch::Contains("cannot open"));

  const fs::path bad = dir / "bad.json";
  std::ofstream(bad) << "{\"model\": {\"vocab\": ";
  CHECK_THROWS_WITH(Tokenizer::load(bad.string()), Catch::Contains("invalid JSON"));

  json unknown = chat_tokenizer(json::array());
  unknown["pre_tokenizer"] = {{"type", "UnigramSplitter"}};
  CHECK_THROWS_WITH(load_json(unknown), Catch::Contains("UnigramSplitter"));
  json model = chat_tokenizer(json::array());
  model["model"]["type"] = "WordPiece";
  CHECK_THROWS_WITH(load_json(model), Catch::Contains("WordPiece"));
  json dup = chat_tokenizer(json::array());
  dup["model"]["merges"] = json::array({"h zz"});
  CHECK_THROWS_WITH(load_json(dup), Catch::Contains("missing from the vocab"));
}

TEST_CASE("the fast loading path reads vocab and merges exactly as the JSON DOM does") {
  // Pair-form merges and a token with JSON escapes exercise the scanner that Tokenizer::load uses.
  json doc = gpt2_style({"\u0120h", "hi", "\u0120hi", "q\"\\\u00e9"}, {}, json::array());
  doc["model"]["merges"] = json::array({{"\u0120", "h"}, {"h", "i"}, {"\u0120h", "i"}});
  auto tok = load_json(doc);
  const BpeModel dom = BpeModel::from_json(doc["model"]);
  for (const std::string word : {"hi", "\u0120hi", "ih", "\u0120h"}) {
    Ids expected;
    dom.encode_word(word, expected);
    Ids ours = tok->encode(word == "\u0120hi" ? " hi" : word == "\u0120h" ? " h" : word);
    CHECK(ours == expected);
  }
  CHECK(tok->token_to_id("q\"\\\u00e9") == std::optional<TokenId>(259));
}

TEST_CASE("one tokenizer encodes from several threads at once with the same results") {
  auto tok = load_json(chat_tokenizer(json::array({added_token(300, "<|a|>", true)})));
  std::string text;
  for (int i = 0; i < 200; ++i) text += "hi h<|a|>hi \u00e9 ";
  const Ids expected = tok->encode(text);
  std::vector<Ids> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r) results[t] = tok->encode(text);
    });
  for (auto& th : threads) th.join();
  for (const auto& r : results) CHECK(r == expected);
}
