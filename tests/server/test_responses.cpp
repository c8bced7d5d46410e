#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "fake_engine.hpp"
#include "server/openai/errors.hpp"
#include "server/openai/responses.hpp"
#include "server/openai/sse.hpp"

using nlohmann::json;
using namespace strata;

TEST_CASE("an SSE event is one data line followed by a blank line", "[sse]") {
  std::string e = sse_data({{"a", "line1\nline2"}});
  CHECK(e.rfind("data: ", 0) == 0);
  CHECK(e.size() > 2);
  CHECK(e.substr(e.size() - 2) == "\n\n");
  CHECK(e.find('\n') == e.size() - 2);  // the payload's newline is escaped, never raw
  CHECK(sse_done() == "data: [DONE]\n\n");
}

TEST_CASE("invalid UTF-8 from a model is replaced, never thrown", "[sse]") {
  std::string s = dump_json({{"content", std::string("ok \xff\xfe")}});
  CHECK(s.find("ok ") != std::string::npos);
  CHECK(s.find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
}

TEST_CASE("errors have the OpenAI shape with null for missing param and code", "[errors]") {
  ApiError e = invalid_param("temperature", "'temperature' must be between 0 and 2, got 5");
  json j = error_body(e);
  CHECK(j["error"]["message"] == e.message);
  CHECK(j["error"]["type"] == "invalid_request_error");
  CHECK(j["error"]["param"] == "temperature");
  CHECK(j["error"]["code"] == "invalid_value");
  ApiError q = queue_full_error();
  CHECK(q.status == 429);
  CHECK(error_body(internal_error("x"))["error"]["param"].is_null());
}

TEST_CASE("chat logprob entries carry token text, bytes and the requested alternatives", "[responses]") {
  testing::ByteCodec codec;
  TokenEvent t;
  t.token = 'h';
  t.logprob = -0.25f;
  t.top = {{'h', -0.25f}, {'j', -1.5f}, {'k', -3.0f}};
  json e = chat_logprob_entry(codec, t, 2);
  CHECK(e["token"] == "h");
  CHECK(e["logprob"].get<double>() == Approx(-0.25));
  CHECK(e["bytes"] == json::array({104}));
  REQUIRE(e["top_logprobs"].size() == 2);
  CHECK(e["top_logprobs"][1]["token"] == "j");
}

TEST_CASE("legacy completion logprobs are parallel arrays with byte offsets", "[responses]") {
  testing::ByteCodec codec;
  CompletionLogprobs lp;
  TokenEvent a;
  a.token = 'a';
  TokenEvent b;
  b.token = 'b';
  b.logprob = -1.0f;
  b.top = {{'b', -1.0f}, {'c', -2.0f}};
  lp.add(codec, a, 1, false);  // first prompt token under echo: no logprob
  lp.add(codec, b, 1, true);
  json j = lp.to_json();
  CHECK(j["tokens"] == json::array({"a", "b"}));
  CHECK(j["token_logprobs"][0].is_null());
  CHECK(j["token_logprobs"][1].get<double>() == Approx(-1.0));
  CHECK(j["top_logprobs"][0].is_null());
  CHECK(j["top_logprobs"][1] == json({{"b", -1.0}}));
  CHECK(j["text_offset"] == json::array({0, 1}));
}

TEST_CASE("a tool-call-only message has null content and the calls", "[responses]") {
  ChatChoice c;
  c.message.tool_calls.push_back({"call_1", "function", "get", "{\"a\":1}"});
  c.finish_reason = "tool_calls";
  c.logprobs = nullptr;
  json j = chat_completion_json({"id1", 5, "m"}, {c}, usage_json(3, 4));
  CHECK(j["object"] == "chat.completion");
  CHECK(j["choices"][0]["message"]["content"].is_null());
  CHECK(j["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{\"a\":1}");
  CHECK(j["usage"]["total_tokens"] == 7);
}

TEST_CASE("usage carries the prompt tokens the prefix cache supplied, as OpenAI's prompt_tokens_details", "[responses]") {
  json u = usage_json(2048, 16, 2032);
  CHECK(u["prompt_tokens"] == 2048);
  CHECK(u["completion_tokens"] == 16);
  CHECK(u["total_tokens"] == 2064);
  CHECK(u["prompt_tokens_details"]["cached_tokens"] == 2032);
  CHECK(usage_json(3, 4)["prompt_tokens_details"]["cached_tokens"] == 0);  // a cold prompt
}
