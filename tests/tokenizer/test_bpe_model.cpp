#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"
#include "engine/tokenizer/bpe_model.hpp"

using namespace strata;
using nlohmann::json;
using Ids = std::vector<TokenId>;

namespace {

const json kVocab{{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"aa", 6}, {"<unk>", 7}};

Ids encode(const BpeModel& m, const std::string& word) {
  Ids out;
  m.encode_word(word, out);
  return out;
}

json model(json merges, json extra = json::object()) {
  json m{{"type", "BPE"}, {"vocab", kVocab}, {"merges", merges}};
  for (auto it = extra.begin(); it != extra.end(); ++it) m[it.key()] = it.value();
  return m;
}

}  // namespace

TEST_CASE("BPE applies merges lowest rank first") {
  // "b c" outranks "a b": abc -> a + bc, and no merge joins a with bc.
  CHECK(encode(BpeModel::from_json(model({"b c", "a b", "ab c"})), "abc") == Ids{0, 4});
  // "a b" first: ab + c, then "ab c" -> abc.
  CHECK(encode(BpeModel::from_json(model({"a b", "b c", "ab c"})), "abc") == Ids{5});
}

TEST_CASE("BPE breaks rank ties leftmost first") {
  CHECK(encode(BpeModel::from_json(model({"a a"})), "aaa") == Ids{6, 0});
  CHECK(encode(BpeModel::from_json(model({"a a"})), "aaaa") == Ids{6, 6});
}

TEST_CASE("BPE on long words (the heap path) gives the same merges as on short ones") {
  const BpeModel m = BpeModel::from_json(model({"a a", "a b", "ab c"}));
  std::string word;
  Ids expected;
  for (int i = 0; i < 100; ++i) {
    word += "aaabc";
    expected.insert(expected.end(), {6, 5});  // "aa" then "abc" in every period
  }
  CHECK(encode(m, word) == expected);
}

TEST_CASE("merges as \"a b\" strings and as [a, b] pairs are the same model") {
  const BpeModel strings = BpeModel::from_json(model({"a b", "ab c"}));
  const BpeModel pairs = BpeModel::from_json(model(json::array({{"a", "b"}, {"ab", "c"}})));
  for (const std::string w : {"abc", "cab", "abcabc", "bca"}) CHECK(encode(strings, w) == encode(pairs, w));
}

TEST_CASE("ignore_merges takes a word that is in the vocab as it is") {
  // With "b c" first, merging would give a + bc; the vocab already holds "abc".
  CHECK(encode(BpeModel::from_json(model({"b c", "a b"}, {{"ignore_merges", true}})), "abc") == Ids{5});
  CHECK(encode(BpeModel::from_json(model({"b c", "a b"}, {{"ignore_merges", false}})), "abc") == Ids{0, 4});
}

TEST_CASE("unknown characters become unk, fused into one when fuse_unk") {
  CHECK(encode(BpeModel::from_json(model({"a b"}, {{"unk_token", "<unk>"}})), "axyb") == Ids{0, 7, 7, 1});
  CHECK(encode(BpeModel::from_json(model({"a b"}, {{"unk_token", "<unk>"}, {"fuse_unk", true}})), "axyb") ==
        Ids{0, 7, 1});
  // Without an unk token the character is dropped, as in the reference.
  CHECK(encode(BpeModel::from_json(model({"a b"})), "axb") == Ids{0, 1});
}

TEST_CASE("byte_fallback spells unknown characters as their UTF-8 byte tokens") {
  json vocab = kVocab;
  vocab["<0xC3>"] = 8;
  vocab["<0xA9>"] = 9;
  json m{{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"byte_fallback", true}, {"unk_token", "<unk>"}};
  const BpeModel bpe = BpeModel::from_json(m);
  CHECK(encode(bpe, "a\u00e9") == Ids{0, 8, 9});
  // A character whose bytes are not all in the vocab falls back to unk.
  CHECK(encode(bpe, "\u20ac") == Ids{7});
}

TEST_CASE("malformed models are load errors naming the problem") {
  CHECK_THROWS_WITH(BpeModel::from_json(model({"a z"})), Catch::Contains("missing from the vocab"));
  CHECK_THROWS_WITH(BpeModel::from_json(model({"abc"})), Catch::Contains("is not \"left right\""));
  CHECK_THROWS_WITH(BpeModel::from_json(model({"c a"})), Catch::Contains("gives a token missing from the vocab"));
  CHECK_THROWS_AS(BpeModel::from_json(json{{"type", "BPE"}, {"vocab", {{"a", "zero"}}}, {"merges", json::array()}}),
                  Error);
}
