// A typed generation request, as the server hands it to the engine, and the per-request channel the engine
// answers through. HTTP threads only push requests and pop events; the engine thread does everything else.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/core/types.hpp"

namespace strata {

enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct GenerationRequest {
  std::string id;                 // request id, on every log line about it
  std::vector<TokenId> prompt;
  SamplingParams sampling;
  int max_tokens = 256;           // prompt + max_tokens > context: refused (400); < 0: whatever the context leaves
  int min_tokens = 0;
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop strings: never emitted, matched on the detokenized text
  std::vector<TokenId> stop_token_ids;  // extra ids that end generation (the id itself is not emitted as text)
  bool skip_special_tokens = true;
  int logprobs = -1;              // -1 none; >= 0: pick logprob + this many top alternatives per token
  bool prompt_logprobs = false;   // completions echo+logprobs: logprobs of the prompt tokens too
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
};

// One generated token and the text that became stable with it (may be empty while held back).
struct TokenEvent {
  TokenId token = -1;
  std::string text;
  float logprob = 0.0f;
  std::vector<TopLogprob> top;
};

struct FinishEvent {
  FinishReason reason = FinishReason::Stop;
  std::string text;          // text released at the end (held-back bytes that were not a stop)
  std::string stop_matched;  // the stop string or "" (EOS/stop id)
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // of prompt_tokens, those whose KV the prefix cache supplied at admission
  int completion_tokens = 0;
  int http_status = 200;     // for errors: 4xx client fault, 5xx engine fault
  std::string error_code;    // e.g. "engine_stalled", "context_length_exceeded"
  std::string error_message;
  std::vector<TokenEvent> prompt_logprobs;  // when asked: one per prompt token (first has no logprob)
  double ttft_seconds = 0, total_seconds = 0, queue_seconds = 0;
  double first_event_seconds = 0;  // arrival to the first token's event on the channel (0: none)
};

struct Event {
  std::optional<TokenEvent> token;
  std::optional<FinishEvent> finish;  // the last event of a request
};

// Single-producer (engine) single-consumer (HTTP handler) queue with a cancellation flag the engine checks
// between windows.
class RequestChannel {
 public:
  // Queues the event and, when `wake`, wakes a reader blocked in pop; with wake false the producer wakes it
  // later through wake() (the engine does that through its Waker, or itself for first tokens).
  void push(Event e, bool wake = true);
  void wake();
  // Waits up to `timeout` for the next event; nullopt on timeout (the handler then checks its client).
  std::optional<Event> pop(std::chrono::milliseconds timeout);
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  // When the reader was first woken and when it first took an event (steady clock; epoch while not yet),
  // so a request's log can tell a late wake-up from a late reader.
  std::chrono::steady_clock::time_point first_wake() const { return at(first_wake_ns_); }
  std::chrono::steady_clock::time_point first_pop() const { return at(first_pop_ns_); }

 private:
  static std::chrono::steady_clock::time_point at(const std::atomic<int64_t>& ns) {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns.load(std::memory_order_relaxed)));
  }
  static void stamp(std::atomic<int64_t>& ns);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> first_wake_ns_{0}, first_pop_ns_{0};
};

}  // namespace strata
