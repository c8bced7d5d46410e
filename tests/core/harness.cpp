#include "tests/core/harness.hpp"

#include <cstdlib>
#include <thread>

#include <spdlog/spdlog.h>

namespace strata::test {
namespace {
// The engine logs one line per request and every fault; tests provoke thousands. STRATA_TEST_LOG=1 keeps them.
const bool quiet_logs = [] {
  if (!std::getenv("STRATA_TEST_LOG")) spdlog::set_level(spdlog::level::off);
  return true;
}();
}  // namespace

const Tokenizer& fixture_tokenizer() {
  static std::unique_ptr<Tokenizer> tok = Tokenizer::load(STRATA_SOURCE_DIR "/tests/data/models/llama");
  return *tok;
}

std::shared_ptr<GenerationRequest> make_request(const std::string& id, std::vector<TokenId> prompt,
                                                int max_tokens) {
  auto r = std::make_shared<GenerationRequest>();
  r->id = id;
  r->prompt = std::move(prompt);
  r->max_tokens = max_tokens;
  r->sampling.temperature = 0.0f;
  return r;
}

std::string Outcome::text() const {
  std::string s;
  for (const auto& t : tokens) s += t.text;
  return s + finish.text;
}

std::vector<TokenId> Outcome::ids() const {
  std::vector<TokenId> v;
  for (const auto& t : tokens) v.push_back(t.token);
  return v;
}

Outcome collect(RequestChannel& ch, std::chrono::milliseconds timeout) {
  Outcome o;
  auto end = std::chrono::steady_clock::now() + timeout;
  while (!o.finished) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return o;
    auto ev = ch.pop(left);
    if (!ev) continue;
    if (ev->token) o.tokens.push_back(*ev->token);
    if (ev->finish) {
      o.finish = *ev->finish;
      o.finished = true;
    }
  }
  o.extra_events = ch.pop(std::chrono::milliseconds(5)).has_value();
  return o;
}

Outcome run_one(Engine& e, std::shared_ptr<GenerationRequest> r, std::chrono::milliseconds timeout) {
  auto ch = std::make_shared<RequestChannel>();
  if (e.submit(std::move(r), ch) != SubmitResult::Accepted) return Outcome{};
  return collect(*ch, timeout);
}

}  // namespace strata::test
