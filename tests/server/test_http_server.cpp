// The HTTP layer end to end over loopback, with a scripted engine and a byte-level tokenizer: routing,
// status codes, SSE framing, cancellation on disconnect, auth, CORS, limits and draining.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <thread>

#include "engine/core/metrics.hpp"
#include "engine/template/chat_template.hpp"
#include "fake_engine.hpp"
#include "server/server.hpp"

using nlohmann::json;
using namespace strata;
using namespace std::chrono_literals;

namespace {

const char* kChatML =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

struct Harness {
  explicit Harness(ServerOptions o = {}, bool with_engine = true) : tmpl(kChatML) {
    o.host = "127.0.0.1";
    o.port = 0;
    if (o.served_model_names.empty()) o.served_model_names = {"tiny", "tiny-alias"};
    ctx.engine_port = with_engine ? &engine : nullptr;
    ctx.codec = with_engine ? &codec : nullptr;
    ctx.chat_template = &tmpl;
    ctx.max_context = 4096;
    ctx.model_id = "tiny";
    ctx.registry = registry;
    ctx.metrics = &metrics;
    server = std::make_unique<HttpServer>(o, ctx);
    server->start();
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    client->set_read_timeout(20, 0);
  }
  ~Harness() {
    server->stop();
    engine.join();
  }
  httplib::Result post(const std::string& path, const json& body, httplib::Headers h = {}) {
    return client->Post(path.c_str(), h, body.dump(), "application/json");
  }

  testing::FakeEngine engine;
  testing::ByteCodec codec;
  ChatTemplate tmpl;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Metrics metrics{registry, "test", "none", "cpu"};
  ServingContext ctx;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
};

json user_chat(json extra = json::object()) {
  json b = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"max_tokens", 5}};
  b.update(extra);
  return b;
}

// The JSON payloads of an SSE body, in order; "[DONE]" is kept as the string "[DONE]".
std::vector<json> sse_events(const std::string& body) {
  std::vector<json> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    std::string payload = body.substr(pos + 6, end - pos - 6);
    out.push_back(payload == "[DONE]" ? json("[DONE]") : json::parse(payload));
    pos = end + 2;
  }
  return out;
}

// A raw connection: sends `request`, reads until `needle` shows up, then closes without reading the rest.
void send_and_hang_up(int port, const std::string& request, const std::string& needle) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!needle.empty() && got.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
}

std::string http_post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds limit = 5000ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return cond();
}

}  // namespace

TEST_CASE("a non-streaming chat completion returns the engine's tokens with usage", "[http]") {
  Harness h;
  auto r = h.post("/v1/chat/completions", user_chat({{"seed", 0}}));
  REQUIRE(r);
  REQUIRE(r->status == 200);
  json j = json::parse(r->body);
  CHECK(j["object"] == "chat.completion");
  CHECK(j["model"] == "tiny");
  CHECK(j["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
  CHECK(j["choices"][0]["message"]["role"] == "assistant");
  CHECK(j["choices"][0]["message"]["content"] == "abcde");  // seed 0: letters from 'a'
  CHECK(j["choices"][0]["finish_reason"] == "length");
  auto reqs = h.engine.requests();
  REQUIRE(reqs.size() == 1);
  // The prompt is the rendered ChatML template, tokenized.
  std::string rendered = h.codec.decode(reqs[0].prompt, false);
  CHECK(rendered == "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n");
  CHECK(j["usage"]["prompt_tokens"] == reqs[0].prompt.size());
  CHECK(j["usage"]["completion_tokens"] == 5);
  CHECK(j["usage"]["total_tokens"] == reqs[0].prompt.size() + 5);
}

TEST_CASE("n choices are n engine requests with seeds seed+i, and equal seeds give equal output", "[http]") {
  Harness h;
  auto r = h.post("/v1/chat/completions", user_chat({{"n", 3}, {"seed", 7}}));
  REQUIRE(r->status == 200);
  json j = json::parse(r->body);
  REQUIRE(j["choices"].size() == 3);
  std::set<uint64_t> seeds;
  for (auto& q : h.engine.requests()) seeds.insert(q.sampling.seed);
  CHECK(seeds == std::set<uint64_t>{7, 8, 9});
  CHECK(j["choices"][0]["message"]["content"] != j["choices"][1]["message"]["content"]);
  auto again = json::parse(h.post("/v1/chat/completions", user_chat({{"n", 3}, {"seed", 7}}))->body);
  for (int i = 0; i < 3; ++i) CHECK(again["choices"][i]["message"]["content"] == j["choices"][i]["message"]["content"]);
  CHECK(j["usage"]["completion_tokens"] == 15);
}

TEST_CASE("a request arrives when the server has it: its choices share one arrival, before the engine's", "[http]") {
  Harness h;
  const auto before = std::chrono::steady_clock::now();
  std::string text(3000, 'x');
  auto r = h.post("/v1/completions", {{"model", "tiny"}, {"prompt", text}, {"max_tokens", 2}, {"n", 3}});
  REQUIRE(r->status == 200);
  const auto after = std::chrono::steady_clock::now();
  auto qs = h.engine.requests();
  REQUIRE(qs.size() == 3);
  for (const auto& q : qs) {
    CHECK(q.arrival == qs[0].arrival);  // one HTTP request, one arrival, whatever the choices
    CHECK(q.arrival >= before);
    CHECK(q.arrival <= after);
  }
}

TEST_CASE("request parameters reach the engine request", "[http]") {
  Harness h;
  auto r = h.post("/v1/chat/completions",
                  user_chat({{"temperature", 0.3}, {"top_p", 0.8}, {"top_k", 5}, {"min_p", 0.1}, {"stop", {"zz"}},
                             {"presence_penalty", 1}, {"frequency_penalty", 0.5}, {"repetition_penalty", 1.2},
                             {"logit_bias", {{"65", 3}}}, {"min_tokens", 1}, {"ignore_eos", true},
                             {"stop_token_ids", {9}}, {"skip_special_tokens", false}, {"max_completion_tokens", 4}}));
  REQUIRE(r->status == 200);
  auto q = h.engine.requests().at(0);
  CHECK(q.sampling.temperature == Approx(0.3));
  CHECK(q.sampling.top_p == Approx(0.8));
  CHECK(q.sampling.top_k == 5);
  CHECK(q.sampling.min_p == Approx(0.1));
  CHECK(q.stop == std::vector<std::string>{"zz"});
  CHECK(q.sampling.presence_penalty == Approx(1.0));
  CHECK(q.sampling.frequency_penalty == Approx(0.5));
  CHECK(q.sampling.repetition_penalty == Approx(1.2));
  REQUIRE(q.sampling.logit_bias.size() == 1);
  CHECK(q.sampling.logit_bias[0].first == 65);
  CHECK(q.min_tokens == 1);
  CHECK(q.ignore_eos);
  CHECK(q.stop_token_ids == std::vector<TokenId>{9});
  CHECK_FALSE(q.skip_special_tokens);
  CHECK(q.max_tokens == 4);
}

TEST_CASE("a streamed chat sends role first, stable ids, usage when asked, and [DONE] last", "[http][sse]") {
  Harness h;
  auto r = h.post("/v1/chat/completions",
                  user_chat({{"stream", true}, {"seed", 0}, {"stream_options", {{"include_usage", true}}}}));
  REQUIRE(r->status == 200);
  CHECK(r->get_header_value("Content-Type").find("text/event-stream") == 0);
  auto ev = sse_events(r->body);
  REQUIRE(ev.size() >= 4);
  CHECK(ev.back() == "[DONE]");
  CHECK(ev[0]["choices"][0]["delta"]["role"] == "assistant");
  std::string text, id = ev[0]["id"];
  std::string finish;
  for (size_t i = 0; i + 2 < ev.size(); ++i) {
    CHECK(ev[i]["object"] == "chat.completion.chunk");
    CHECK(ev[i]["id"] == id);
    CHECK(ev[i]["created"] == ev[0]["created"]);
    auto& d = ev[i]["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
    if (!ev[i]["choices"][0]["finish_reason"].is_null()) finish = ev[i]["choices"][0]["finish_reason"];
  }
  CHECK(text == "abcde");
  CHECK(finish == "length");
  json usage = ev[ev.size() - 2];
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["completion_tokens"] == 5);
}

TEST_CASE("held-back text released at finish is streamed before the finish chunk", "[http][sse]") {
  Harness h;
  h.engine.tail = "!";
  auto ev = sse_events(h.post("/v1/chat/completions", user_chat({{"stream", true}, {"seed", 0}}))->body);
  std::string text;
  for (auto& e : ev)
    if (e.is_object() && e["choices"].size() && e["choices"][0]["delta"].contains("content"))
      text += e["choices"][0]["delta"]["content"].get<std::string>();
  CHECK(text == "abcde!");
}

TEST_CASE("an engine error after the stream started is sent as an error event and the stream ends", "[http][sse]") {
  Harness h;
  h.engine.fail_midway = true;
  auto r = h.post("/v1/chat/completions", user_chat({{"stream", true}, {"max_tokens", 10}}));
  REQUIRE(r->status == 200);
  auto ev = sse_events(r->body);
  REQUIRE_FALSE(ev.empty());
  CHECK(ev.back().is_object());
  CHECK(ev.back()["error"]["code"] == "engine_stalled");
  for (auto& e : ev) CHECK(e != "[DONE]");
}

TEST_CASE("a non-streaming engine error answers its status and code", "[http]") {
  Harness h;
  h.engine.fail_midway = true;
  auto r = h.post("/v1/chat/completions", user_chat({{"max_tokens", 10}}));
  CHECK(r->status == 503);
  CHECK(json::parse(r->body)["error"]["code"] == "engine_stalled");
}

TEST_CASE("a client that hangs up mid-stream cancels its generation", "[http][cancel]") {
  Harness h;
  h.engine.token_delay = 20ms;
  json body = user_chat({{"stream", true}, {"max_tokens", 400}});
  send_and_hang_up(h.server->port(), http_post("/v1/chat/completions", body.dump()), "\"content\":\"");
  CHECK(wait_for([&] { return h.engine.cancelled.load() == 1; }));
  CHECK(wait_for([&] { return h.engine.running.load() == 0; }));
}

TEST_CASE("a client that hangs up mid-stream of a legacy completion cancels it too", "[http][cancel]") {
  Harness h;
  h.engine.token_delay = 20ms;
  json body = {{"prompt", "hello"}, {"stream", true}, {"max_tokens", 400}, {"n", 2}};
  send_and_hang_up(h.server->port(), http_post("/v1/completions", body.dump()), "\"text\":\"");
  CHECK(wait_for([&] { return h.engine.cancelled.load() == 2; }));
  CHECK(wait_for([&] { return h.engine.running.load() == 0; }));
  CHECK(wait_for([&] { return h.client->Get("/metrics")->body.find("status=\"499\"") != std::string::npos; }));
}

TEST_CASE("a client that hangs up during a non-streaming request cancels it too", "[http][cancel]") {
  Harness h;
  h.engine.token_delay = 20ms;
  json body = user_chat({{"max_tokens", 400}, {"n", 2}});
  std::thread t([&] { send_and_hang_up(h.server->port(), http_post("/v1/chat/completions", body.dump()), ""); });
  t.join();
  CHECK(wait_for([&] { return h.engine.cancelled.load() == 2; }));
  // Counted as 499 "client closed request", not as a server failure.
  CHECK(wait_for([&] { return h.client->Get("/metrics")->body.find("status=\"499\"") != std::string::npos; }));
}

TEST_CASE("legacy completions: echo, logprobs and prompt-major choice indices", "[http]") {
  Harness h;
  auto r = h.post("/v1/completions", {{"model", "tiny-alias"}, {"prompt", {"ab", "cd"}}, {"n", 2}, {"seed", 1},
                                      {"max_tokens", 3}, {"echo", true}, {"logprobs", 2}});
  REQUIRE(r->status == 200);
  json j = json::parse(r->body);
  CHECK(j["object"] == "text_completion");
  CHECK(j["model"] == "tiny-alias");
  REQUIRE(j["choices"].size() == 4);
  CHECK(j["choices"][0]["text"] == "abbcd");  // echo "ab" + seed 1 -> "bcd"
  CHECK(j["choices"][1]["text"] == "abcde");  // seed 2
  CHECK(j["choices"][2]["text"].get<std::string>().rfind("cd", 0) == 0);
  json lp = j["choices"][0]["logprobs"];
  // BOS + 2 prompt bytes echoed, then 3 generated tokens.
  REQUIRE(lp["tokens"].size() == 6);
  CHECK(lp["token_logprobs"][0].is_null());
  CHECK(lp["top_logprobs"][4].size() == 2);
  CHECK(j["usage"]["prompt_tokens"] == 6);  // two prompts of BOS + 2 bytes
  CHECK(j["usage"]["completion_tokens"] == 12);
  for (auto& q : h.engine.requests()) CHECK(q.prompt_logprobs);
}

TEST_CASE("streamed completions end with usage and [DONE]", "[http][sse]") {
  Harness h;
  auto r = h.post("/v1/completions", {{"prompt", {1, 2, 3}}, {"stream", true}, {"seed", 0}, {"max_tokens", 3},
                                      {"stream_options", {{"include_usage", true}}}});
  auto ev = sse_events(r->body);
  REQUIRE(ev.size() >= 3);
  CHECK(ev.back() == "[DONE]");
  std::string text;
  for (auto& e : ev)
    if (e.is_object() && !e["choices"].empty()) text += e["choices"][0]["text"].get<std::string>();
  CHECK(text == "abc");
  CHECK(ev[ev.size() - 2]["usage"]["prompt_tokens"] == 3);
}

TEST_CASE("a streamed completion sends a chunk for every token, text or not yet", "[http][sse]") {
  // The second token's text is held back (say, the first byte of a two-byte character): its chunk still goes
  // out when the token is made, with text "", and the bytes come with the next token.
  Harness h;
  h.engine.script = {"a", "", "\xc3\xa9", "b"};
  auto r = h.post("/v1/completions", {{"prompt", "x"}, {"stream", true}, {"max_tokens", 8}});
  auto ev = sse_events(r->body);
  std::vector<std::string> texts;
  std::string finish;
  for (auto& e : ev) {
    if (!e.is_object() || e["choices"].empty()) continue;
    const json& c = e["choices"][0];
    if (!c["finish_reason"].is_null()) {
      finish = c["finish_reason"];
      continue;
    }
    texts.push_back(c["text"].get<std::string>());
  }
  CHECK(texts == std::vector<std::string>{"a", "", "\xc3\xa9", "b"});
  CHECK(finish == "stop");
}

TEST_CASE("status codes: 401, 404, 413, 429, 503 with OpenAI-shaped bodies", "[http][errors]") {
  ServerOptions o;
  o.api_keys = {"sekret"};
  o.max_body_bytes = 4096;
  Harness h(o);
  auto no_key = h.post("/v1/chat/completions", user_chat());
  CHECK(no_key->status == 401);
  CHECK(json::parse(no_key->body)["error"]["code"] == "invalid_api_key");
  CHECK(h.post("/v1/chat/completions", user_chat(), {{"Authorization", "Bearer wrong"}})->status == 401);
  CHECK(h.client->Get("/health")->status == 200);  // liveness stays open
  httplib::Headers auth = {{"Authorization", "Bearer sekret"}};
  CHECK(h.post("/v1/chat/completions", user_chat(), auth)->status == 200);
  auto unknown = h.post("/v1/chat/completions", user_chat({{"model", "gpt-4"}}), auth);
  CHECK(unknown->status == 404);
  CHECK(json::parse(unknown->body)["error"]["code"] == "model_not_found");
  auto big = h.post("/v1/chat/completions", user_chat({{"pad", std::string(8000, 'x')}}), auth);
  CHECK(big->status == 413);
  CHECK(json::parse(big->body)["error"]["message"].get<std::string>().find("4096") != std::string::npos);
  h.engine.queue_full = true;
  auto full = h.post("/v1/chat/completions", user_chat({{"n", 2}}), auth);
  CHECK(full->status == 429);
  CHECK(json::parse(full->body)["error"]["type"] == "rate_limit_error");
  h.engine.queue_full = false;
  h.engine.draining = true;
  CHECK(h.post("/v1/completions", {{"prompt", "x"}}, auth)->status == 503);
  auto route = h.client->Get("/nope", auth);
  CHECK(route->status == 404);
  CHECK(json::parse(route->body)["error"]["message"].get<std::string>().find("/nope") != std::string::npos);
}

TEST_CASE("bad JSON is a 400 naming where it broke, and the server keeps serving", "[http][errors]") {
  Harness h;
  auto r = h.client->Post("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}",
                          "application/json");
  REQUIRE(r->status == 400);
  json e = json::parse(r->body)["error"];
  CHECK(e["param"] == "messages[0].content");
  CHECK(h.client->Post("/v1/chat/completions", std::string(100000, '['), "application/json")->status == 400);
  CHECK(h.post("/v1/chat/completions", user_chat({{"temperature", -1}}))->status == 400);
  CHECK(h.post("/v1/chat/completions", user_chat())->status == 200);
}

TEST_CASE("the prompt must leave room in the context", "[http][errors]") {
  Harness h;
  h.ctx.max_context = 0;
  auto r = h.post("/v1/completions", {{"prompt", std::string(5000, 'a')}, {"max_tokens", 1}});
  REQUIRE(r->status == 400);
  json e = json::parse(r->body)["error"];
  CHECK(e["code"] == "context_length_exceeded");
  CHECK(e["message"].get<std::string>().find("5001 tokens") != std::string::npos);
  CHECK(e["message"].get<std::string>().find("4096") != std::string::npos);
}

TEST_CASE("template raise_exception is the client's fault: 400 with the template's message", "[http][errors]") {
  ServerOptions o;
  Harness h(o);
  ChatTemplate strict("{% if messages[0].role != 'system' %}{{ raise_exception('a system message must come first') }}{% endif %}x");
  h.ctx.chat_template = &strict;
  h.ctx.codec = nullptr;  // force the route environment to be rebuilt with the new template
  h.client->Get("/health");
  h.ctx.codec = &h.codec;
  auto r = h.post("/v1/chat/completions", user_chat());
  REQUIRE(r->status == 400);
  CHECK(json::parse(r->body)["error"]["message"].get<std::string>().find("a system message must come first") != std::string::npos);
}

TEST_CASE("health and readiness follow the engine; routes answer 503 while loading", "[http][health]") {
  Harness loading(ServerOptions{}, false);
  CHECK(loading.client->Get("/health")->status == 503);
  CHECK(loading.client->Get("/ready")->status == 503);
  auto r = loading.post("/v1/chat/completions", user_chat());
  CHECK(r->status == 503);
  CHECK(json::parse(r->body)["error"]["code"] == "model_loading");

  Harness h;
  CHECK(h.client->Get("/health")->status == 200);
  CHECK(h.client->Get("/ready")->status == 200);
  h.engine.is_ready = false;
  CHECK(h.client->Get("/ready")->status == 503);
  CHECK(h.client->Get("/health")->status == 200);
  h.engine.is_healthy = false;
  CHECK(h.client->Get("/health")->status == 503);
}

TEST_CASE("/v1/models lists every served id with the context length", "[http]") {
  Harness h;
  json j = json::parse(h.client->Get("/v1/models")->body);
  REQUIRE(j["data"].size() == 2);
  CHECK(j["data"][0]["id"] == "tiny");
  CHECK(j["data"][1]["id"] == "tiny-alias");
  CHECK(j["data"][1]["max_model_len"] == 4096);
  CHECK(h.client->Get("/v1/models/tiny-alias")->status == 200);
  CHECK(h.client->Get("/v1/models/other")->status == 404);
}

TEST_CASE("tokenize and detokenize round-trip, in vLLM and llama-server spellings", "[http]") {
  Harness h;
  json t = json::parse(h.post("/tokenize", {{"prompt", "hi"}})->body);
  CHECK(t["tokens"] == json::array({256, 'h', 'i'}));
  CHECK(t["count"] == 3);
  json t2 = json::parse(h.post("/tokenize", {{"content", "hi"}, {"add_special", false}})->body);
  CHECK(t2["tokens"] == json::array({'h', 'i'}));
  json d = json::parse(h.post("/detokenize", {{"tokens", {'h', 'i'}}})->body);
  CHECK(d["prompt"] == "hi");
  CHECK(d["content"] == "hi");
  CHECK(h.post("/detokenize", {{"tokens", {99999}}})->status == 400);
  CHECK(h.post("/tokenize", json::object())->status == 400);
}

TEST_CASE("CORS preflight and response headers follow --cors-origins", "[http][cors]") {
  ServerOptions o;
  o.cors_origins = {"http://ui.example"};
  o.api_keys = {"k"};
  Harness h(o);
  auto pre = h.client->Options("/v1/chat/completions", {{"Origin", "http://ui.example"},
                                                        {"Access-Control-Request-Method", "POST"}});
  CHECK(pre->status == 204);
  CHECK(pre->get_header_value("Access-Control-Allow-Origin") == "http://ui.example");
  auto other = h.client->Get("/health", {{"Origin", "http://evil.example"}});
  CHECK_FALSE(other->has_header("Access-Control-Allow-Origin"));
  auto ok = h.client->Get("/v1/models", {{"Origin", "http://ui.example"}, {"Authorization", "Bearer k"}});
  CHECK(ok->get_header_value("Access-Control-Allow-Origin") == "http://ui.example");
}

TEST_CASE("drain_and_stop lets a running request finish and refuses new ones", "[http][drain]") {
  ServerOptions o;
  o.shutdown_timeout_s = 10;
  Harness h(o);
  h.engine.token_delay = 10ms;
  int running_status = 0;
  std::string running_body;
  std::thread t([&] {
    httplib::Client c("127.0.0.1", h.server->port());
    auto r = c.Post("/v1/chat/completions", user_chat({{"max_tokens", 30}}).dump(), "application/json");
    if (r) {
      running_status = r->status;
      running_body = r->body;
    }
  });
  REQUIRE(wait_for([&] { return h.engine.running.load() == 1; }));
  std::thread d([&] { h.server->drain_and_stop(); });
  std::this_thread::sleep_for(50ms);
  httplib::Client late("127.0.0.1", h.server->port());
  auto refused = late.Post("/v1/chat/completions", user_chat().dump(), "application/json");
  if (refused) CHECK(refused->status == 503);  // or the listener is already closed
  t.join();
  d.join();
  REQUIRE(running_status == 200);
  CHECK(json::parse(running_body)["usage"]["completion_tokens"] == 30);
}

TEST_CASE("/metrics serves the registry and counts requests by endpoint and status", "[http][metrics]") {
  Harness h;
  h.post("/v1/chat/completions", user_chat());
  h.post("/v1/chat/completions", user_chat({{"temperature", 9}}));
  auto m = h.client->Get("/metrics");
  REQUIRE(m->status == 200);
  CHECK(m->get_header_value("Content-Type").find("text/plain") == 0);
  CHECK(m->body.find("strata_requests_total") != std::string::npos);
  CHECK(m->body.find("status=\"400\"") != std::string::npos);
  CHECK(m->body.find("status=\"200\"") != std::string::npos);
}

namespace {
json weather_tools() {
  return json::array({{{"type", "function"},
                       {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
}
// The model's output cut into token texts at awkward places, as a tokenizer would.
std::vector<std::string> hermes_call_tokens() {
  return {"<tool", "_call>", "{\"name\": \"get_", "weather\", \"arguments\": {\"city\"", ": \"Paris\"}}", "</tool_call>"};
}
}  // namespace

TEST_CASE("tool calls are parsed into tool_calls with finish_reason tool_calls", "[http][tools]") {
  ServerOptions o;
  o.tool_call_parser = "hermes";
  Harness h(o);
  h.engine.script = hermes_call_tokens();
  auto r = h.post("/v1/chat/completions", user_chat({{"tools", weather_tools()}, {"max_tokens", 50}}));
  REQUIRE(r->status == 200);
  json c = json::parse(r->body)["choices"][0];
  CHECK(c["finish_reason"] == "tool_calls");
  CHECK(c["message"]["content"].is_null());
  REQUIRE(c["message"]["tool_calls"].size() == 1);
  json call = c["message"]["tool_calls"][0];
  CHECK(call["type"] == "function");
  CHECK(call["id"].get<std::string>().rfind("call_", 0) == 0);
  CHECK(call["function"]["name"] == "get_weather");
  CHECK(json::parse(call["function"]["arguments"].get<std::string>()) == json({{"city", "Paris"}}));
  // Markers may be special tokens: they must reach the parser.
  CHECK_FALSE(h.engine.requests().at(0).skip_special_tokens);
}

TEST_CASE("streamed tool calls arrive as OpenAI deltas: id and name first, then arguments", "[http][tools][sse]") {
  ServerOptions o;
  o.tool_call_parser = "hermes";
  Harness h(o);
  h.engine.script = hermes_call_tokens();
  auto ev = sse_events(h.post("/v1/chat/completions", user_chat({{"tools", weather_tools()}, {"stream", true}, {"max_tokens", 50}}))->body);
  std::string args, name, id, finish, content;
  bool header_first = false;
  for (auto& e : ev) {
    if (!e.is_object() || e["choices"].empty()) continue;
    json d = e["choices"][0]["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
    if (!d.contains("tool_calls")) continue;
    for (auto& t : d["tool_calls"]) {
      CHECK(t["index"] == 0);
      if (t.contains("id")) {
        header_first = args.empty();
        id = t["id"];
        name = t["function"]["name"];
      }
      args += t["function"]["arguments"].get<std::string>();
    }
  }
  CHECK(header_first);
  CHECK(name == "get_weather");
  CHECK_FALSE(id.empty());
  CHECK(json::parse(args) == json({{"city", "Paris"}}));
  CHECK(finish == "tool_calls");
  CHECK(content.empty());
}

TEST_CASE("without tools, or with tool_choice none, call-shaped text stays content", "[http][tools]") {
  ServerOptions o;
  o.tool_call_parser = "hermes";
  Harness h(o);
  h.engine.script = hermes_call_tokens();
  std::string whole;
  for (auto& t : hermes_call_tokens()) whole += t;
  json a = json::parse(h.post("/v1/chat/completions", user_chat({{"max_tokens", 50}}))->body)["choices"][0];
  CHECK(a["message"]["content"] == whole);
  CHECK(a["finish_reason"] == "stop");
  json b = json::parse(h.post("/v1/chat/completions",
                              user_chat({{"tools", weather_tools()}, {"tool_choice", "none"}, {"max_tokens", 50}}))->body)["choices"][0];
  CHECK(b["message"]["content"] == whole);
}

TEST_CASE("a <think> thought goes to reasoning_content, streamed and not; --reasoning-format none keeps it inline", "[http][reasoning]") {
  std::vector<std::string> out = {"<th", "ink>", "let me see", "</think>", "\n\nThe answer", " is 4."};
  {
    Harness h;
    h.engine.script = out;
    json m = json::parse(h.post("/v1/chat/completions", user_chat({{"max_tokens", 50}}))->body)["choices"][0]["message"];
    CHECK(m["reasoning_content"] == "let me see");
    CHECK(m["content"] == "The answer is 4.");
    auto ev = sse_events(h.post("/v1/chat/completions", user_chat({{"max_tokens", 50}, {"stream", true}}))->body);
    std::string reasoning, content;
    for (auto& e : ev) {
      if (!e.is_object() || e["choices"].empty()) continue;
      json d = e["choices"][0]["delta"];
      if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("content")) content += d["content"].get<std::string>();
    }
    CHECK(reasoning == "let me see");
    CHECK(content == "The answer is 4.");
  }
  {
    ServerOptions o;
    o.reasoning_format = "none";
    Harness h(o);
    h.engine.script = out;
    json m = json::parse(h.post("/v1/chat/completions", user_chat({{"max_tokens", 50}}))->body)["choices"][0]["message"];
    CHECK_FALSE(m.contains("reasoning_content"));
    CHECK(m["content"] == "<think>let me see</think>\n\nThe answer is 4.");
  }
}

TEST_CASE("max_tokens must fit after the prompt; without it the engine is asked to fill the context", "[http][errors]") {
  Harness h;
  auto r = h.post("/v1/completions", {{"prompt", std::string(4000, 'a')}, {"max_tokens", 200}});
  REQUIRE(r->status == 400);
  json e = json::parse(r->body)["error"];
  CHECK(e["param"] == "max_tokens");
  CHECK(e["code"] == "context_length_exceeded");
  CHECK(e["message"].get<std::string>().find("at most 95 can be generated") != std::string::npos);  // 4096 - 4001
  // The implicit completions default of 16 shrinks to the room left instead of failing.
  REQUIRE(h.post("/v1/completions", {{"prompt", std::string(4090, 'a')}})->status == 200);
  REQUIRE(h.post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "x"}}}}})->status == 200);
  auto reqs = h.engine.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].max_tokens == 5);   // 4096 - (BOS + 4090)
  CHECK(reqs[1].max_tokens == -1);  // chat without max_tokens: fill what the context leaves
}
