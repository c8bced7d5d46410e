// A scripted stand-in for the engine and a byte-level tokenizer, so the HTTP layer can be tested alone.
// The fake engine answers each request from its own thread the way the real one does: TokenEvents, then
// exactly one FinishEvent; it honours cancellation between tokens and records what it was asked.
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "server/engine_port.hpp"
#include "server/token_codec.hpp"

namespace strata::testing {

// Ids 0..255 are bytes; 256 is BOS (special), 257 EOS (special).
class ByteCodec : public TokenCodec {
 public:
  std::vector<TokenId> encode(std::string_view text, bool add_special) const override {
    std::vector<TokenId> out;
    if (add_special) out.push_back(256);
    for (unsigned char c : text) out.push_back(c);
    return out;
  }
  std::string decode(const std::vector<TokenId>& ids, bool skip_special) const override {
    std::string s;
    for (TokenId t : ids) {
      if (t < 256) s.push_back(static_cast<char>(t));
      else if (!skip_special) s += t == 256 ? "<s>" : "</s>";
    }
    return s;
  }
  int vocab_size() const override { return 258; }
};

// Output of choice with seed s: the letters 'a' + (s + k) % 26 for k = 0.. ; so equal seeds give equal text.
class FakeEngine : public EnginePort {
 public:
  ~FakeEngine() override { join(); }

  SubmitResult submit(std::shared_ptr<GenerationRequest> req, std::shared_ptr<RequestChannel> ch) override {
    if (draining) return SubmitResult::Draining;
    if (queue_full) return SubmitResult::QueueFull;
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(*req);
    ++running;
    threads_.emplace_back([this, req, ch] { generate(*req, *ch); });
    return SubmitResult::Accepted;
  }
  void start_draining() override { draining = true; }
  bool idle() const override { return running.load() == 0; }
  bool healthy() const override { return is_healthy; }
  bool ready() const override { return is_ready; }
  EngineStats stats() const override {
    EngineStats s;
    s.running = running.load();
    return s;
  }

  void join() {
    std::vector<std::thread> ts;
    {
      std::lock_guard<std::mutex> lock(mu);
      ts.swap(threads_);
    }
    for (auto& t : ts) t.join();
  }

  std::vector<GenerationRequest> requests() {
    std::lock_guard<std::mutex> lock(mu);
    return seen;
  }

  std::atomic<bool> queue_full{false}, draining{false}, is_healthy{true}, is_ready{true};
  std::atomic<bool> fail_midway{false};  // error after two tokens
  std::atomic<int> running{0}, cancelled{0};
  std::chrono::milliseconds token_delay{1};
  std::string tail;  // FinishEvent.text (held-back text released at the end)
  std::vector<std::string> script;  // when set: the texts of the tokens to emit, instead of letters

 private:
  void generate(const GenerationRequest& r, RequestChannel& ch) {
    FinishEvent f;
    f.prompt_tokens = static_cast<int>(r.prompt.size());
    int limit = script.empty() ? r.max_tokens : std::min<int>(r.max_tokens, static_cast<int>(script.size()));
    f.reason = script.empty() || limit < static_cast<int>(script.size()) ? FinishReason::Length : FinishReason::Stop;
    for (int k = 0; k < limit; ++k) {
      std::this_thread::sleep_for(token_delay);
      if (ch.cancelled()) {
        f.reason = FinishReason::Cancelled;
        ++cancelled;
        break;
      }
      if (fail_midway && k == 2) {
        f.reason = FinishReason::Error;
        f.http_status = 503;
        f.error_code = "engine_stalled";
        f.error_message = "the engine stalled";
        break;
      }
      TokenEvent t;
      t.text = script.empty() ? std::string(1, static_cast<char>('a' + (r.sampling.seed + k) % 26)) : script[k];
      t.token = static_cast<unsigned char>(t.text.empty() ? 'x' : t.text[0]);
      if (r.logprobs >= 0) {
        t.logprob = -0.5f;
        for (int j = 0; j < r.logprobs; ++j) t.top.push_back({static_cast<TokenId>('a' + j), -1.0f - j});
      }
      Event e;
      e.token = t;
      ch.push(e);
      ++f.completion_tokens;
    }
    if (f.reason != FinishReason::Cancelled && f.reason != FinishReason::Error) f.text = tail;
    if (r.prompt_logprobs)
      for (size_t k = 0; k < r.prompt.size(); ++k) {
        TokenEvent t;
        t.token = r.prompt[k];
        t.logprob = -2.0f;
        f.prompt_logprobs.push_back(t);
      }
    --running;
    Event e;
    e.finish = f;
    ch.push(e);
  }

  std::mutex mu;
  std::vector<GenerationRequest> seen;
  std::vector<std::thread> threads_;
};

}  // namespace strata::testing
