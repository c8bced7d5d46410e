// generation_config.json / config.json eos ids and tokenizer_config.json specials and chat templates.
#include <catch2/catch.hpp>

#include "engine/model/generation_meta.hpp"

using namespace strata;
using Catch::Matchers::Contains;

TEST_CASE("eos ids are the union of generation_config's and config's, as integers or lists") {
  GenerationDefaults g = parse_generation_defaults(R"({"eos_token_id": 2, "bos_token_id": 1})",
                                                   R"({"eos_token_id": [7, 2, 9], "temperature": 0.6, "top_p": 0.9, "top_k": 20})");
  CHECK(g.eos_token_ids == std::vector<TokenId>{7, 2, 9});
  CHECK(g.bos_token_id == 1);
  CHECK(g.temperature == Approx(0.6f));
  CHECK(g.top_p == Approx(0.9f));
  CHECK(g.top_k == 20);
}

TEST_CASE("without generation_config.json the config's eos id is used and sampling defaults stay unset") {
  GenerationDefaults g = parse_generation_defaults(R"({"eos_token_id": [5, 6], "bos_token_id": null})", "");
  CHECK(g.eos_token_ids == std::vector<TokenId>{5, 6});
  CHECK(g.bos_token_id == -1);
  CHECK(g.temperature < 0);
  CHECK(g.top_k == -1);
}

TEST_CASE("an eos id that is not a token id is named") {
  CHECK_THROWS_WITH(parse_generation_defaults("{}", R"({"eos_token_id": "2"})"),
                    Contains("generation_config.json: eos_token_id"));
  CHECK_THROWS_WITH(parse_generation_defaults(R"({"eos_token_id": [1, -4]})", ""), Contains("config.json: eos_token_id"));
  CHECK_THROWS_WITH(parse_generation_defaults("{}", "[]"), Contains("generation_config.json: not a JSON object"));
}

TEST_CASE("tokenizer_config specials may be strings or {content} objects") {
  TokenizerMeta m = parse_tokenizer_meta(R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
      "add_bos_token": true, "chat_template": "{{ messages }}"})");
  CHECK(m.bos_token == "<s>");
  CHECK(m.eos_token == "</s>");
  CHECK(m.add_bos_token);
  CHECK(m.chat_template == "{{ messages }}");
  TokenizerMeta n = parse_tokenizer_meta(R"({"bos_token": null})");
  CHECK(n.bos_token.empty());
  CHECK_FALSE(n.add_bos_token);
  CHECK_THROWS_WITH(parse_tokenizer_meta(R"({"eos_token": 5})"), Contains("eos_token"));
}

TEST_CASE("a list of named chat templates yields the one named default") {
  TokenizerMeta m = parse_tokenizer_meta(R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                                                {"name": "default", "template": "D"}]})");
  CHECK(m.chat_template == "D");
  CHECK(parse_tokenizer_meta(R"({"chat_template": [{"name": "rag", "template": "R"}]})").chat_template.empty());
  CHECK_THROWS_WITH(parse_tokenizer_meta(R"({"chat_template": [{"name": 1}]})"), Contains("chat_template"));
  CHECK(parse_tokenizer_meta("").chat_template.empty());
}
