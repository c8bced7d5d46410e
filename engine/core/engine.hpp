// The engine: one thread that owns the backend and the scheduler state. See DESIGN.md.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "engine/core/faults.hpp"
#include "engine/core/request.hpp"

namespace strata {

class Tokenizer;
class Metrics;
class Drafter;

// Speculative decoding (DESIGN.md invariant 1): a drafter proposes tokens, the target verifies them in one
// window and keeps exactly those it would have picked itself, so the mode changes speed, never output.
enum class SpeculationMode {
  Off,
  Ngram,  // prompt lookup (engine/spec NgramDrafter), built by the engine
  Draft,  // one drafter per request from drafter_factory (the draft model in production)
};

struct SpeculationOptions {
  SpeculationMode mode = SpeculationMode::Off;
  int max_k = 4;  // drafts per verify window at most (--spec-k); AdaptiveK drafts fewer when acceptance is low
  // Drafts that cost nothing to make (prompt lookup's copies) per verify window at most, where the window's exact
  // rows hold them (--spec-lookup-k; Drafter::propose's room); below max_k: max_k.
  int lookup_k = 15;
  int max_batch = 0;  // no drafts while more than this many requests are decoding (--spec-max-batch); 0 = always
  int ngram_min = 1, ngram_max = 4;
  // Called on the engine thread once per admitted request; a drafter that throws (here or in propose) is
  // dropped for that request and generation goes on without it.
  std::function<std::unique_ptr<Drafter>()> drafter_factory;
};

enum class SubmitResult { Accepted, QueueFull, Draining, NotReady };

struct EngineOptions {
  int max_queued = 256;          // waiting requests beyond this get QueueFull (HTTP 429)
  double watchdog_timeout_s = 30.0;
  int watchdog_max_restarts = 3;
  int prefill_chunk = 256;       // prompt rows per window
  int max_window_tokens = 2048;  // rows per window in all (decode rows first, then prompt chunks)
  // Paged backends (BackendInfo::kv_blocks > 0): a new request starts from the longest cached run of its
  // prompt's KV blocks (Backend::attach_prefix). Off: every prompt is computed from position 0.
  bool prefix_caching = true;
  // Paged backends: a request is admitted only while this many blocks stay free beyond its first chunk's
  // (room for the running requests' next decode rows); -1 = 1% of the pool, at least 1.
  int kv_watermark_blocks = -1;
  std::shared_ptr<Metrics> metrics;  // may be null
  // A file that gets one JSON line per window (start, the engine's host time before it, its duration, rows by
  // kind), for diagnosing throughput; "" = none. The engine refuses to start when it cannot be opened.
  std::string window_trace;
  FaultPlan faults;              // empty: no fault injection
  SpeculationOptions speculation;
};

struct EngineStats {
  int running = 0, waiting = 0, slots_busy = 0, slots_total = 0;
  double kv_usage = 0.0;
  int kv_blocks = 0, kv_free_blocks = 0;  // paged backends only (0 otherwise)
  long preemptions = 0;
  long prefix_lookups = 0, prefix_hits = 0;  // prompt blocks, over the current backend's life
};

class Engine {
 public:
  // The factory builds (and on recovery rebuilds) the backend.
  using BackendFactory = std::function<std::unique_ptr<Backend>()>;
  Engine(BackendFactory factory, const Tokenizer& tokenizer, std::vector<TokenId> eos_ids, EngineOptions opts);
  ~Engine();  // stops the thread; unfinished requests end with an error event

  // Thread-safe. On Accepted the channel will receive exactly one FinishEvent, last.
  SubmitResult submit(std::shared_ptr<GenerationRequest> req, std::shared_ptr<RequestChannel> channel);
  void start_draining();      // new submits answer Draining; running ones go on
  bool idle() const;          // nothing running or waiting
  bool healthy() const;       // engine thread alive and not wedged
  bool ready() const;
  EngineStats stats() const;
  int max_context() const;

  struct Impl;
 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
