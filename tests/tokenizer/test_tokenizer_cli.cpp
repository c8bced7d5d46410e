// The tokenize/detokenize commands behind `strata tokenize` and `strata detokenize`.
#include <catch2/catch.hpp>

#include <sstream>

#include "engine/tokenizer/tokenizer_cli.hpp"
#include "tests/tokenizer/tokenizer_fixtures.hpp"

using namespace strata;
using namespace strata::test;

namespace {
const std::string& tokenizer_path() {
  static const std::string path = write_temp_json(gpt2_style({"\u0120h", "hi", "\u0120hi"}, {"\u0120 h", "h i", "\u0120h i"},
                                                              json::array({added_token(300, "<|end|>", true)})));
  return path;
}
}  // namespace

TEST_CASE("tokenize prints the ids of stdin as one JSON array") {
  std::istringstream in("hi hi<|end|>");
  std::ostringstream out, err;
  CHECK(run_tokenize_command(tokenizer_path(), false, in, out, err) == 0);
  CHECK(out.str() == "[257,258,300]\n");
  CHECK(err.str().empty());
}

TEST_CASE("tokenize rejects invalid UTF-8 with exit code 1 and a message") {
  std::istringstream in("hi \xFF");
  std::ostringstream out, err;
  CHECK(run_tokenize_command(tokenizer_path(), false, in, out, err) == 1);
  CHECK(out.str().empty());
  CHECK_THAT(err.str(), Catch::Contains("not valid UTF-8"));
}

TEST_CASE("detokenize prints the text of a JSON id array, optionally without special tokens") {
  std::istringstream in("[257, 258, 300]");
  std::ostringstream out, err;
  CHECK(run_detokenize_command(tokenizer_path(), false, in, out, err) == 0);
  CHECK(out.str() == "hi hi<|end|>");
  std::istringstream in2("[257, 300]");
  std::ostringstream out2;
  CHECK(run_detokenize_command(tokenizer_path(), true, in2, out2, err) == 0);
  CHECK(out2.str() == "hi");
}

TEST_CASE("detokenize rejects input that is not an array of ids in range") {
  for (const std::string bad : {"{\"ids\": [1]}", "[1, \"two\"]", "[1, 99999]", "[-1]", "not json"}) {
    std::istringstream in(bad);
    std::ostringstream out, err;
    INFO(bad);
    CHECK(run_detokenize_command(tokenizer_path(), false, in, out, err) == 1);
    CHECK_FALSE(err.str().empty());
  }
}

TEST_CASE("a missing tokenizer is exit code 1 naming the path") {
  std::istringstream in("x");
  std::ostringstream out, err;
  CHECK(run_tokenize_command("/nonexistent/tok.json", false, in, out, err) == 1);
  CHECK_THAT(err.str(), Catch::Contains("/nonexistent/tok.json"));
}

TEST_CASE("the line-oriented forms answer one line per input line") {
  std::istringstream in("\"hi\"\n\"hi hi\"\n");
  std::ostringstream out, err;
  CHECK(run_tokenize_lines_command(tokenizer_path(), false, in, out, err) == 0);
  CHECK(out.str() == "[257]\n[257,258]\n");
  std::istringstream in2("[257]\n[257,258]\n");
  std::ostringstream out2;
  CHECK(run_detokenize_lines_command(tokenizer_path(), false, in2, out2, err) == 0);
  CHECK(out2.str() == "\"hi\"\n\"hi hi\"\n");
}

TEST_CASE("the stream form prints the DecodeStream pieces of each id array, flush last") {
  // 0xC3 0xA9 is "é" split over two byte-level tokens: nothing until the second arrives.
  std::istringstream in("[257, 195, 169]\n");
  std::ostringstream out, err;
  CHECK(run_detokenize_stream_command(tokenizer_path(), false, in, out, err) == 0);
  CHECK(out.str() == "[\"hi\",\"\",\"\u00e9\",\"\"]\n");
}
