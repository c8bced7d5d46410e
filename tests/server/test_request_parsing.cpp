#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/openai/chat_request.hpp"
#include "server/openai/completion_request.hpp"
#include "server/openai/errors.hpp"

using nlohmann::json;
using namespace strata;

namespace {

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = 1000;
  l.max_context = 512;
  l.max_n = 8;
  l.max_stop_strings = 4;
  return l;
}

json chat_body(json extra = json::object()) {
  json b = {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  b.update(extra);
  return b;
}

// The ApiError a body provokes; fails the test if it parses.
ApiError chat_error(const json& body) {
  try {
    parse_chat_request(body, limits());
  } catch (const ApiException& e) {
    return e.error;
  }
  FAIL("expected an ApiException for " << body.dump());
  return {};
}

ApiError completion_error(const json& body) {
  try {
    parse_completion_request(body, limits());
  } catch (const ApiException& e) {
    return e.error;
  }
  FAIL("expected an ApiException for " << body.dump());
  return {};
}

}  // namespace

TEST_CASE("a chat request carries every sampling and stopping parameter into typed fields", "[parse]") {
  json b = chat_body({{"max_completion_tokens", 33}, {"max_tokens", 99}, {"temperature", 0.7}, {"top_p", 0.9},
                      {"top_k", 40}, {"min_p", 0.05}, {"n", 3}, {"seed", 42}, {"stop", {"END", "###"}},
                      {"presence_penalty", 0.5}, {"frequency_penalty", -0.5}, {"repetition_penalty", 1.1},
                      {"logit_bias", {{"17", 5}, {"3", -100}}}, {"logprobs", true}, {"top_logprobs", 5},
                      {"stream", true}, {"stream_options", {{"include_usage", true}}}, {"user", "u1"},
                      {"min_tokens", 2}, {"ignore_eos", true}, {"stop_token_ids", {7, 8}},
                      {"skip_special_tokens", false}, {"chat_template_kwargs", {{"enable_thinking", false}}},
                      {"add_generation_prompt", false}, {"response_format", {{"type", "text"}}},
                      {"some_unknown_field", {1, 2, 3}}});
  ChatRequest r = parse_chat_request(b, limits());
  CHECK(r.gen.model == "m");
  CHECK(*r.gen.max_tokens == 33);  // max_completion_tokens wins over the deprecated spelling
  CHECK(r.gen.sampling.temperature == Approx(0.7));
  CHECK(r.gen.sampling.top_p == Approx(0.9));
  CHECK(r.gen.sampling.top_k == 40);
  CHECK(r.gen.sampling.min_p == Approx(0.05));
  CHECK(r.gen.n == 3);
  CHECK(*r.gen.seed == 42u);
  CHECK(r.gen.stop == std::vector<std::string>{"END", "###"});
  CHECK(r.gen.sampling.presence_penalty == Approx(0.5));
  CHECK(r.gen.sampling.frequency_penalty == Approx(-0.5));
  CHECK(r.gen.sampling.repetition_penalty == Approx(1.1));
  REQUIRE(r.gen.sampling.logit_bias.size() == 2);
  CHECK(r.logprobs);
  CHECK(r.top_logprobs == 5);
  CHECK(r.gen.stream);
  CHECK(r.gen.include_usage);
  CHECK(r.gen.user == "u1");
  CHECK(r.gen.min_tokens == 2);
  CHECK(r.gen.ignore_eos);
  CHECK(r.gen.stop_token_ids == std::vector<TokenId>{7, 8});
  CHECK_FALSE(r.gen.skip_special_tokens);
  CHECK(r.chat_template_kwargs["enable_thinking"] == false);
  CHECK_FALSE(r.add_generation_prompt);
}

TEST_CASE("out-of-range sampling values are refused, naming the field and the limit", "[parse]") {
  struct Case {
    json extra;
    std::string param, needle;
  } cases[] = {
      {{{"temperature", 2.5}}, "temperature", "between 0 and 2"},
      {{{"temperature", "hot"}}, "temperature", "must be a number"},
      {{{"top_p", 0}}, "top_p", "greater than 0"},
      {{{"top_p", 1.5}}, "top_p", "between 0 and 1"},
      {{{"n", 0}}, "n", "between 1 and 8"},
      {{{"n", 1000000}}, "n", "between 1 and 8"},
      {{{"n", 1.5}}, "n", "must be an integer"},
      {{{"max_tokens", 0}}, "max_tokens", "between 1 and 512"},
      {{{"max_tokens", 100000000}}, "max_tokens", "between 1 and 512"},
      {{{"max_completion_tokens", -1}}, "max_completion_tokens", "between 1 and 512"},
      {{{"presence_penalty", 3}}, "presence_penalty", "between -2 and 2"},
      {{{"frequency_penalty", -2.5}}, "frequency_penalty", "between -2 and 2"},
      {{{"repetition_penalty", 0}}, "repetition_penalty", "greater than 0"},
      {{{"min_p", -0.1}}, "min_p", "between 0 and 1"},
      {{{"top_k", -5}}, "top_k", "between -1 and 1000"},
      {{{"seed", "abc"}}, "seed", "must be an integer"},
      {{{"top_logprobs", 21}, {"logprobs", true}}, "top_logprobs", "between 0 and 20"},
      {{{"top_logprobs", 2}}, "top_logprobs", "requires 'logprobs'"},
      {{{"logprobs", 1}}, "logprobs", "must be a boolean"},
      {{{"stream", "yes"}}, "stream", "must be a boolean"},
      {{{"stream_options", {{"include_usage", 1}}}}, "stream_options.include_usage", "must be a boolean"},
      {{{"min_tokens", 10}, {"max_tokens", 5}}, "min_tokens", "must not exceed max_tokens"},
      {{{"model", 7}}, "model", "must be a string"},
  };
  for (const Case& c : cases) {
    INFO(c.extra.dump());
    ApiError e = chat_error(chat_body(c.extra));
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK(e.message.find(c.needle) != std::string::npos);
    CHECK(e.message.find(c.param) != std::string::npos);
  }
}

TEST_CASE("stop lists are bounded in count and size and must hold non-empty strings", "[parse]") {
  CHECK(chat_error(chat_body({{"stop", {"a", "b", "c", "d", "e"}}})).message.find("the limit is 4") != std::string::npos);
  CHECK(chat_error(chat_body({{"stop", {"a", 3}}})).param == "stop[1]");
  CHECK(chat_error(chat_body({{"stop", ""}})).param == "stop");
  CHECK(chat_error(chat_body({{"stop", std::string(2000, 'x')}})).message.find("1024 bytes") != std::string::npos);
  CHECK(chat_error(chat_body({{"stop", {{"a", 1}}}})).param == "stop");
  CHECK(parse_chat_request(chat_body({{"stop", "x"}}), limits()).gen.stop == std::vector<std::string>{"x"});
}

TEST_CASE("logit_bias keys must be token ids in the vocabulary and values within +-100", "[parse]") {
  CHECK(chat_error(chat_body({{"logit_bias", {{"abc", 1}}}})).param == "logit_bias.abc");
  CHECK(chat_error(chat_body({{"logit_bias", {{"1000", 1}}}})).message.find("between 0 and 999") != std::string::npos);
  CHECK(chat_error(chat_body({{"logit_bias", {{"-1", 1}}}})).param == "logit_bias.-1");
  CHECK(chat_error(chat_body({{"logit_bias", {{"5", 101}}}})).message.find("between -100 and 100") != std::string::npos);
  CHECK(chat_error(chat_body({{"logit_bias", {{"5", "x"}}}})).message.find("must be a number") != std::string::npos);
  CHECK(chat_error(chat_body({{"logit_bias", {1, 2}}})).param == "logit_bias");
}

TEST_CASE("messages are checked for shape, naming the message and field", "[parse]") {
  CHECK(chat_error(json{{"model", "m"}}).param == "messages");
  CHECK(chat_error(json{{"messages", json::array()}}).message.find("at least one") != std::string::npos);
  CHECK(chat_error(json{{"messages", "hi"}}).message.find("must be an array") != std::string::npos);
  CHECK(chat_error(json{{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}).param == "messages[0].role");
  CHECK(chat_error(json{{"messages", {{{"content", "x"}}}}}).param == "messages[0].role");
  CHECK(chat_error(json{{"messages", {{{"role", "user"}}}}}).param == "messages[0].content");
  CHECK(chat_error(json{{"messages", {{{"role", "user"}, {"content", 5}}}}}).param == "messages[0].content");
  ApiError img = chat_error(json{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}});
  CHECK(img.param == "messages[0].content[0].type");
  CHECK(img.message.find("not supported") != std::string::npos);
  CHECK(chat_error(json{{"messages", {1}}}).param == "messages[0]");
  // An assistant turn may be tool calls only (content null).
  json ok = {{"messages",
              {{{"role", "user"}, {"content", "weather?"}},
               {{"role", "assistant"}, {"content", nullptr},
                {"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "get"}, {"arguments", "{}"}}}}}}},
               {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny"}},
               {{"role", "developer"}, {"content", "be brief"}}}}};
  ChatRequest r = parse_chat_request(ok, limits());
  CHECK(r.messages[3]["role"] == "system");  // developer maps to system for the template
}

TEST_CASE("tools and tool_choice are validated against each other", "[parse]") {
  json tool = {{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}};
  CHECK(parse_chat_request(chat_body({{"tools", {tool}}}), limits()).tools_active());
  CHECK_FALSE(parse_chat_request(chat_body({{"tools", {tool}}, {"tool_choice", "none"}}), limits()).tools_active());
  CHECK(chat_error(chat_body({{"tools", {{{"type", "retrieval"}}}}})).param == "tools[0].type");
  CHECK(chat_error(chat_body({{"tools", {{{"type", "function"}}}}})).param == "tools[0].function");
  CHECK(chat_error(chat_body({{"tools", {{{"type", "function"}, {"function", {{"name", "bad name!"}}}}}}})).param ==
        "tools[0].function.name");
  CHECK(chat_error(chat_body({{"tools", "x"}})).param == "tools");
  CHECK(chat_error(chat_body({{"tools", {tool}}, {"tool_choice", "sometimes"}})).param == "tool_choice");
  CHECK(chat_error(chat_body({{"tool_choice", "required"}})).message.find("requires a non-empty 'tools'") != std::string::npos);
  json named = {{"type", "function"}, {"function", {{"name", "other"}}}};
  CHECK(chat_error(chat_body({{"tools", {tool}}, {"tool_choice", named}})).param == "tool_choice.function.name");
  named["function"]["name"] = "get_weather";
  CHECK(parse_chat_request(chat_body({{"tools", {tool}}, {"tool_choice", named}}), limits()).tool_choice == ToolChoice::Named);
}

TEST_CASE("response_format text passes and structured formats answer not supported yet", "[parse]") {
  CHECK_NOTHROW(parse_chat_request(chat_body({{"response_format", {{"type", "text"}}}}), limits()));
  ApiError e = chat_error(chat_body({{"response_format", {{"type", "json_object"}}}}));
  CHECK(e.param == "response_format.type");
  CHECK(e.message.find("not supported yet") != std::string::npos);
  CHECK(chat_error(chat_body({{"response_format", {{"type", "json_schema"}}}})).message.find("not supported yet") !=
        std::string::npos);
  CHECK(chat_error(chat_body({{"response_format", "json"}})).param == "response_format");
}

TEST_CASE("completion prompts come in four forms", "[parse]") {
  auto prompts = [](json p) { return parse_completion_request({{"prompt", p}}, limits()).prompts; };
  auto a = prompts("hello");
  REQUIRE(a.size() == 1);
  CHECK_FALSE(a[0].is_tokens);
  CHECK(a[0].text == "hello");
  auto b = prompts({"x", "y"});
  REQUIRE(b.size() == 2);
  CHECK(b[1].text == "y");
  auto c = prompts({1, 2, 3});
  REQUIRE(c.size() == 1);
  CHECK(c[0].tokens == std::vector<TokenId>{1, 2, 3});
  auto d = prompts({{1, 2}, {3}});
  REQUIRE(d.size() == 2);
  CHECK(d[1].tokens == std::vector<TokenId>{3});
  CHECK(*parse_completion_request({{"prompt", "x"}}, limits()).gen.max_tokens == 16);  // OpenAI's default
}

TEST_CASE("bad completion prompts and options name the element at fault", "[parse]") {
  CHECK(completion_error(json::object()).param == "prompt");
  CHECK(completion_error({{"prompt", 5}}).param == "prompt");
  CHECK(completion_error({{"prompt", json::array()}}).param == "prompt");
  CHECK(completion_error({{"prompt", {1, 5000}}}).param == "prompt[1]");
  CHECK(completion_error({{"prompt", {1, -2}}}).param == "prompt[1]");
  CHECK(completion_error({{"prompt", {{1, 2}, {3, "x"}}}}).param == "prompt[1][1]");
  CHECK(completion_error({{"prompt", {"a", 3}}}).param == "prompt[1]");
  CHECK(completion_error({{"prompt", "x"}, {"logprobs", 21}}).message.find("between 0 and 20") != std::string::npos);
  CHECK(completion_error({{"prompt", "x"}, {"echo", "yes"}}).param == "echo");
  CHECK(completion_error({{"prompt", "x"}, {"suffix", "tail"}}).param == "suffix");
  CHECK(completion_error({{"prompt", "x"}, {"stop_token_ids", {1, 99999}}}).param == "stop_token_ids[1]");
  CHECK(completion_error(json::array()).message.find("must be a JSON object") != std::string::npos);
  json many = json::array();
  for (int i = 0; i < 65; ++i) many.push_back("p");
  CHECK(completion_error({{"prompt", many}}).message.find("the limit is 64") != std::string::npos);
  CHECK(parse_completion_request({{"prompt", "x"}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 3}}, limits()).logprobs == 3);
}

TEST_CASE("range messages are the same for integers written in JSON text (parsed as unsigned)", "[parse]") {
  json b = json::parse(R"({"messages":[{"role":"user","content":"x"}],"n":50})");
  ApiError e = chat_error(b);
  CHECK(e.param == "n");
  CHECK(e.message == "'n' must be between 1 and 8, got 50");
  CHECK(chat_error(json::parse(R"({"messages":[{"role":"user","content":"x"}],"seed":18446744073709551615})")).param == "seed");
}
