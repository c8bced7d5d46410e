// The engine thread and its supervision. Ownership of the scheduler state (running, resume, in_call) moves
// only through CallGuard: the engine thread owns it except while a backend call it made is claimed by the
// watchdog, after which the watchdog owns it until it hands it to a fresh engine thread. HTTP threads touch
// only `waiting` and the flags, under `mu`.
#include "engine/core/engine.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "engine/core/fault_backend.hpp"
#include "engine/core/metrics.hpp"
#include "engine/core/output.hpp"
#include "engine/core/scheduler.hpp"
#include "engine/core/slot_state.hpp"
#include "engine/core/thread_name.hpp"
#include "engine/core/watchdog.hpp"
#include "engine/logging/logging.hpp"
#include "engine/spec/drafter.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Unwinds an engine thread whose call the watchdog claimed: from that point it owns nothing.
struct Abandoned {};

// An exception that came out of a backend call (as opposed to the engine's own code).
struct BackendFailure {
  std::string what;
};

// The backend's KV pool could not supply a window's blocks; nothing changed (KvExhausted).
struct OutOfKv {
  std::string what;
};

struct Failure {
  int http_status;
  std::string code;
  std::string message;
};

}  // namespace

// One backend and the heartbeat of the thread that drives it. A stalled thread keeps its incarnation alive
// (and with it the backend) for as long as it stays stuck; the engine moves on with a new one.
struct Incarnation {
  std::shared_ptr<Backend> backend;
  CallGuard guard;
};

struct Engine::Impl {
  Impl(BackendFactory f, const Tokenizer& t, std::vector<TokenId> eos, EngineOptions o)
      : factory(std::move(f)), tok(t), out(t, std::move(eos), &waker), opts(std::move(o)) {
    if (!opts.faults.empty()) faults = std::make_shared<FaultInjector>(opts.faults);
    if (!opts.window_trace.empty()) {
      trace.reset(std::fopen(opts.window_trace.c_str(), "w"));
      if (!trace) throw std::runtime_error("cannot open the window trace file " + opts.window_trace);
    }
  }

  BackendFactory factory;
  const Tokenizer& tok;
  Waker waker;  // before out, which posts to it
  OutputProcessor out;
  EngineOptions opts;
  std::shared_ptr<FaultInjector> faults;
  std::atomic<int> max_context{0}, vocab_size{0}, max_slots{0};
  // Paged KV, from the backend's info (0: not paged).
  std::atomic<int> kv_blocks{0}, kv_block_size{0}, kv_free{0};
  std::atomic<long> n_preemptions{0}, n_prefix_lookups{0}, n_prefix_hits{0};
  uint64_t seen_lookups = 0, seen_hits = 0, seen_evictions = 0;  // of the current backend's counters

  // Shared with HTTP threads; guarded by mu.
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<SlotState>> waiting;
  bool stopping = false, draining = false, failed = false, engine_alive = false;
  std::shared_ptr<Incarnation> current;
  std::thread engine_thread;

  // Published by the owner of the scheduler state for stats(), idle(), ready().
  std::atomic<int> n_running{0}, n_resume{0}, n_busy{0};
  std::atomic<long> n_cached_positions{0};
  std::atomic<bool> loading{true};

  // Scheduler state (see the file comment for who owns it when).
  std::vector<std::unique_ptr<SlotState>> running;  // admission order
  std::deque<std::unique_ptr<SlotState>> resume;    // requeued by a restart; admitted before `waiting`
  std::vector<SlotState*> in_call;                  // requests the call in flight works for
  BackendInfo info;
  uint64_t windows_run = 0;
  int consecutive_faults = 0;
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, FileCloser> trace;  // opts.window_trace
  Clock::time_point trace_epoch = Clock::now(), last_window_end{};

  std::unique_ptr<Watchdog> watchdog;

  // ---- backend calls -------------------------------------------------------------------------------
  template <class F>
  auto guarded(Incarnation& inc, CallInfo what, F&& f) -> decltype(f()) {
    uint64_t ticket = inc.guard.begin(std::move(what));
    try {
      if constexpr (std::is_void_v<decltype(f())>) {
        f();
        if (!inc.guard.end(ticket)) throw Abandoned{};
      } else {
        auto r = f();
        if (!inc.guard.end(ticket)) throw Abandoned{};
        return r;
      }
    } catch (const Abandoned&) {
      throw;
    } catch (const KvExhausted& e) {
      if (!inc.guard.end(ticket)) throw Abandoned{};
      throw OutOfKv{e.what()};
    } catch (const std::exception& e) {
      if (!inc.guard.end(ticket)) throw Abandoned{};
      throw BackendFailure{e.what()};
    } catch (...) {
      if (!inc.guard.end(ticket)) throw Abandoned{};
      throw BackendFailure{"unknown exception"};
    }
  }
  static CallInfo call(const char* what) { return CallInfo{what, 0, "", ""}; }

  std::unique_ptr<Backend> make_backend() {
    std::unique_ptr<Backend> b = factory();
    if (!b) throw Error("backend factory returned no backend");
    BackendInfo i = b->info();
    if (i.max_slots < 1) throw Error("backend '" + i.name + "' reports no slots (max_slots < 1)");
    if (i.max_context < 1) throw Error("backend '" + i.name + "' reports max_context < 1");
    if (faults) b = faults->wrap(std::move(b));
    return b;
  }

  void adopt_info(const BackendInfo& i) {
    info = i;
    max_context.store(i.max_context);
    vocab_size.store(i.vocab_size);
    max_slots.store(i.max_slots);
    kv_blocks.store(i.kv_block_size > 0 ? i.kv_blocks : 0);
    kv_block_size.store(i.kv_block_size > 0 ? i.kv_block_size : 0);
    kv_free.store(i.kv_block_size > 0 ? i.kv_free_blocks : 0);
    seen_lookups = i.kv_prefix_lookups;
    seen_hits = i.kv_prefix_hits;
    seen_evictions = i.kv_evictions;
    if (opts.metrics) opts.metrics->set_slots(n_busy.load(), i.max_slots);
  }

  // Engine thread: the pool's state after a change (admission, window, preemption), and the prefix-cache
  // counters' growth since the last look.
  void refresh_kv(Incarnation& inc) {
    if (kv_blocks.load() == 0) return;
    BackendInfo i = guarded(inc, call("info"), [&] { return inc.backend->info(); });
    kv_free.store(i.kv_free_blocks);
    if (opts.metrics) {
      if (i.kv_prefix_lookups >= seen_lookups && i.kv_prefix_hits >= seen_hits)
        opts.metrics->prefix_cache(int(i.kv_prefix_lookups - seen_lookups), int(i.kv_prefix_hits - seen_hits));
      if (i.kv_evictions >= seen_evictions) opts.metrics->prefix_evictions(int(i.kv_evictions - seen_evictions));
    }
    seen_lookups = i.kv_prefix_lookups;
    seen_hits = i.kv_prefix_hits;
    seen_evictions = i.kv_evictions;
    n_prefix_lookups.store(static_cast<long>(i.kv_prefix_lookups));
    n_prefix_hits.store(static_cast<long>(i.kv_prefix_hits));
  }

  int kv_watermark() const {
    if (opts.kv_watermark_blocks >= 0) return opts.kv_watermark_blocks;
    return std::max(1, kv_blocks.load() / 100);
  }

  // Whether a paged backend has room to start `s`: its first chunk's blocks plus the watermark. With nothing
  // else holding a slot a request always goes in (validate() made sure it fits the whole pool alone).
  bool kv_room_for(const SlotState& s) const {
    const int bs = kv_block_size.load();
    if (bs <= 0) return true;
    bool others = false;
    for (const auto& r : running)
      if (r->slot != kNoSlot) others = true;
    if (!others) return true;
    const int first = std::min({s.pending_rows(), opts.prefill_chunk, opts.max_window_tokens});
    const int need = (first + bs - 1) / bs + kv_watermark();
    return kv_free.load() >= need;
  }

  // ---- finishing requests --------------------------------------------------------------------------
  void deliver_finish(SlotState& s, FinishEvent f) {
    auto now = Clock::now();
    f.prompt_tokens = s.n_prompt;
    f.cached_prompt_tokens = s.prefix_hit;
    f.completion_tokens = s.n_generated;
    f.total_seconds = seconds(s.req->arrival, now);
    f.queue_seconds = s.admitted_once ? seconds(s.req->arrival, s.admitted) : f.total_seconds;
    f.ttft_seconds = s.n_generated > 0 ? seconds(s.req->arrival, s.first_token) : 0.0;
    f.first_event_seconds = s.first_event != Clock::time_point{} ? seconds(s.req->arrival, s.first_event) : 0.0;
    if (opts.metrics) {
      opts.metrics->e2e_latency(f.total_seconds);
      opts.metrics->request_lengths(s.n_prompt, s.n_generated);
    }
    // One structured line per finished request (JSON fields with --log-format json), tagged with its id.
    nlohmann::json fields = {{"prompt_tokens", f.prompt_tokens},
                             {"completion_tokens", f.completion_tokens},
                             {"ttft_s", f.ttft_seconds},
                             {"first_event_s", f.first_event_seconds},
                             {"queue_s", f.queue_seconds},
                             {"total_s", f.total_seconds},
                             {"finish_reason", finish_reason_name(f.reason)},
                             {"status", f.http_status}};
    if (!f.error_code.empty()) fields["error_code"] = f.error_code;
    if (s.spec_windows > 0) {
      fields["spec_windows"] = s.spec_windows;
      fields["spec_drafted"] = s.spec_proposed;
      fields["spec_accepted"] = s.spec_accepted;
      fields["spec_mean_accepted"] = static_cast<double>(s.spec_accepted) / s.spec_windows;
      if (s.spec_ahead > 0) fields["spec_drafted_ahead"] = s.spec_ahead;
    }
    log_event(spdlog::level::info, s.req->id, "request finished", fields);
    s.done = true;
    s.channel->push(Event{std::nullopt, std::move(f)});
  }

  void deliver_error(SlotState& s, const Failure& fault) {
    FinishEvent f;
    f.reason = FinishReason::Error;
    f.http_status = fault.http_status;
    f.error_code = fault.code;
    f.error_message = fault.message;
    deliver_finish(s, std::move(f));
  }

  void deliver_cancel(SlotState& s) {
    FinishEvent f;
    f.reason = FinishReason::Cancelled;
    f.http_status = 499;  // client closed the request (nginx's convention); nobody reads the body
    f.error_code = "cancelled";
    deliver_finish(s, std::move(f));
  }

  // Gives the request's slot (if it holds one) back to the backend.
  void release_slot(Incarnation& inc, SlotState* s) {
    if (s->slot == kNoSlot) return;
    const SlotId slot = s->slot;
    s->slot = kNoSlot;
    n_busy.fetch_sub(1);
    guarded(inc, call("close_slot"), [&] { inc.backend->close_slot(slot); });
  }

  // Frees the slot of a finished request and drops it from `running`.
  void retire(Incarnation& inc, SlotState* s) {
    release_slot(inc, s);
    running.erase(std::remove_if(running.begin(), running.end(), [&](const auto& p) { return p.get() == s; }),
                  running.end());
  }

  // ---- recovery (run by whichever thread owns the scheduler state) ----------------------------------
  void fail_in_call(const Failure& fault) {
    flush_text();  // picks accepted before the fault: their text goes out before any error
    for (SlotState* s : in_call)
      if (!s->done) deliver_error(*s, fault);
    in_call.clear();
  }

  // The backend is gone: every slot is lost. Requests that were not in the failed call go back to the front
  // of the line and recompute their history on the new backend.
  void requeue_running() {
    flush_text();
    std::deque<std::unique_ptr<SlotState>> back;
    for (auto& s : running) {
      if (s->done) continue;
      s->slot = kNoSlot;
      s->n_cached = 0;
      s->suppressing = false;
      back.push_back(std::move(s));
    }
    running.clear();
    for (auto& s : resume) back.push_back(std::move(s));
    resume = std::move(back);
    n_busy.store(0);
  }

  void fail_everything(const Failure& fault) {
    fail_in_call(fault);
    for (auto& s : running)
      if (!s->done) deliver_error(*s, fault);
    running.clear();
    for (auto& s : resume) deliver_error(*s, fault);
    resume.clear();
    std::deque<std::unique_ptr<SlotState>> queued;
    {
      std::lock_guard<std::mutex> lock(mu);
      queued.swap(waiting);
    }
    for (auto& s : queued) deliver_error(*s, fault);
    n_busy.store(0);
    publish();
  }

  // Counts a fault; false when the engine gives up (liveness then fails).
  bool count_fault() {
    ++consecutive_faults;
    if (consecutive_faults > opts.watchdog_max_restarts) {
      spdlog::critical("engine: {} faults in a row without a good window (watchdog_max_restarts={}); giving up",
                       consecutive_faults, opts.watchdog_max_restarts);
      {
        std::lock_guard<std::mutex> lock(mu);
        failed = true;
      }
      loading.store(false);
      fail_everything({503, "engine_failed", "the engine failed repeatedly and stopped serving"});
      return false;
    }
    if (opts.metrics) opts.metrics->engine_restart();
    loading.store(true);
    return true;
  }

  // Engine thread, after an exception: the thread itself is fine, so it rebuilds in place.
  bool on_fault(Incarnation& inc, const Failure& fault) {
    spdlog::error("engine fault: {} ({}); ending {} request(s) of the failed call and rebuilding the backend",
                  fault.message, fault.code, in_call.size());
    fail_in_call(fault);
    requeue_running();
    try {
      inc.backend.reset();
    } catch (...) {
      spdlog::error("engine: backend destructor threw during recovery");
    }
    publish();
    return count_fault();
  }

  // Watchdog thread: a backend call has run past the timeout.
  void watch() {
    std::shared_ptr<Incarnation> inc;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!engine_alive) return;
      inc = current;
    }
    std::optional<StalledCall> stalled = inc->guard.claim_if_stalled(opts.watchdog_timeout_s);
    if (!stalled) return;
    // From here this thread owns the scheduler state; the engine thread leaves when (if) its call returns.
    spdlog::error("{}", describe_stall(*stalled, opts.watchdog_timeout_s, info.name));
    if (opts.metrics) opts.metrics->watchdog_stall();
    loading.store(true);
    try {
      if (inc->backend) inc->backend->release();
    } catch (const std::exception& e) {
      spdlog::error("engine: backend release() threw: {}", e.what());
    }
    std::ostringstream msg;
    msg << "the engine stalled: " << stalled->info.what << " ran past the watchdog timeout of "
        << opts.watchdog_timeout_s << " s";
    fail_in_call({503, "engine_stalled", msg.str()});
    requeue_running();
    publish();
    bool stop_now;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (engine_thread.joinable()) engine_thread.detach();
      stop_now = stopping;
    }
    bool go_on = !stop_now && count_fault();
    if (stop_now) fail_everything({503, "engine_shutdown", "the engine shut down"});
    std::lock_guard<std::mutex> lock(mu);
    if (!go_on) {
      engine_alive = false;
      cv.notify_all();
      return;
    }
    auto next = std::make_shared<Incarnation>();
    current = next;
    engine_thread = std::thread([this, next] { thread_main(next); });
  }

  // ---- the engine thread ---------------------------------------------------------------------------
  void thread_main(std::shared_ptr<Incarnation> inc) {
    name_this_thread("strata-engine");
    try {
      serve(*inc);
    } catch (const Abandoned&) {
      return;  // the watchdog took over; `this` may not even exist any more
    }
    std::lock_guard<std::mutex> lock(mu);
    engine_alive = false;
    cv.notify_all();
  }

  void serve(Incarnation& inc) {
    for (;;) {
      try {
        if (!inc.backend) {
          inc.backend = guarded(inc, call("load backend"), [&] { return std::shared_ptr<Backend>(make_backend()); });
          adopt_info(inc.backend->info());
          loading.store(false);
        }
        if (!step(inc)) return;
      } catch (const Abandoned&) {
        throw;
      } catch (const BackendFailure& e) {
        if (!on_fault(inc, {500, "backend_error", "backend failure: " + e.what})) return;
      } catch (const std::exception& e) {
        if (!on_fault(inc, {500, "engine_error", std::string("engine failure: ") + e.what()})) return;
      } catch (...) {
        if (!on_fault(inc, {500, "engine_error", "engine failure: unknown exception"})) return;
      }
    }
  }

  // One scheduler iteration; false once a stop has ended every request.
  bool step(Incarnation& inc) {
    if (running.empty()) flush_text();  // requests that all ended by their ids: nothing will start
    {
      std::unique_lock<std::mutex> lock(mu);
      if (running.empty() && resume.empty())
        cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return stopping || !waiting.empty(); });
      if (stopping) {
        lock.unlock();
        shutdown(inc);
        return false;
      }
    }
    sweep_cancelled(inc);
    admit(inc);
    if (running.empty() && !resume.empty()) {
      // The backend refused a slot with none in use; give it a moment rather than spin.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return true;
    }
    finish_exhausted(inc);
    publish();
    if (!running.empty()) run_window(inc);
    waker.flush();  // anything a window that threw left posted
    publish();
    return true;
  }

  void shutdown(Incarnation& inc) {
    flush_text();
    Failure f{503, "engine_shutdown", "the engine shut down before the request finished"};
    for (auto& s : running) {
      if (s->done) continue;
      deliver_error(*s, f);
      if (s->slot != kNoSlot) {
        try {
          guarded(inc, call("close_slot"), [&] { inc.backend->close_slot(s->slot); });
        } catch (const BackendFailure&) {
          // The process is going away; the backend is destroyed next anyway.
        }
      }
    }
    running.clear();
    fail_everything(f);
  }

  void sweep_cancelled(Incarnation& inc) {
    std::vector<SlotState*> gone;
    for (auto& s : running)
      if (s->channel->cancelled()) gone.push_back(s.get());
    if (!gone.empty()) flush_text();  // their last picks' text first (which may end them, too)
    for (SlotState* s : gone) {
      if (!s->done) deliver_cancel(*s);
      retire(inc, s);
    }
    for (auto it = resume.begin(); it != resume.end();) {
      if ((*it)->channel->cancelled()) {
        deliver_cancel(**it);
        it = resume.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<std::unique_ptr<SlotState>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto it = waiting.begin(); it != waiting.end();) {
        if ((*it)->channel->cancelled()) {
          dropped.push_back(std::move(*it));
          it = waiting.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& s : dropped) deliver_cancel(*s);
  }

  void configure_sampling(Incarnation& inc, SlotState& s) {
    SamplingParams p = s.req->sampling;
    s.suppressing = s.n_generated < s.req->min_tokens;
    if (s.suppressing) {
      std::vector<TokenId> mask = out.min_tokens_mask(*s.req);
      p.suppressed.insert(p.suppressed.end(), mask.begin(), mask.end());
    }
    guarded(inc, call("set_sampling"), [&] { inc.backend->set_sampling(s.slot, p); });
  }

  void admit(Incarnation& inc) {
    refresh_kv(inc);
    while (static_cast<int>(running.size()) < info.max_slots) {
      std::unique_ptr<SlotState> next;
      if (!resume.empty()) {
        if (!kv_room_for(*resume.front())) break;
        next = std::move(resume.front());
        resume.pop_front();
      } else {
        std::lock_guard<std::mutex> lock(mu);
        if (waiting.empty()) break;
        if (!kv_room_for(*waiting.front())) break;
        next = std::move(waiting.front());
        waiting.pop_front();
      }
      running.push_back(std::move(next));
      SlotState& s = *running.back();
      in_call = {&s};
      SlotId slot = guarded(inc, call("open_slot"), [&] { return inc.backend->open_slot(); });
      if (slot == kNoSlot) {
        // The backend has less room than it advertised: wait for a running request to leave.
        resume.push_front(std::move(running.back()));
        running.pop_back();
        in_call.clear();
        break;
      }
      s.slot = slot;
      n_busy.fetch_add(1);
      configure_sampling(inc, s);
      // Prompt logprobs need every prompt row's logits, so such a request computes its prompt in full.
      const bool needs_all_rows = s.req->prompt_logprobs && s.prompt_logprobs_done < s.n_prompt;
      if (opts.prefix_caching && kv_blocks.load() > 0 && !needs_all_rows && s.n_cached == 0) {
        int cached = guarded(inc, call("attach_prefix"), [&] { return inc.backend->attach_prefix(slot, s.seq); });
        if (cached < 0 || cached >= static_cast<int>(s.seq.size()))
          throw BackendFailure{"backend attached a prefix of " + std::to_string(cached) + " positions to a sequence of " +
                               std::to_string(s.seq.size())};
        s.n_cached = cached;
        if (!s.admitted_once) s.prefix_hit = cached;
      }
      refresh_kv(inc);
      if (!s.draft_k) attach_drafter(s);
      if (!s.admitted_once) {
        s.admitted_once = true;
        s.admitted = Clock::now();
        if (opts.metrics) {
          opts.metrics->queue_time(seconds(s.req->arrival, s.admitted));
          opts.metrics->prompt_tokens(s.n_prompt);
        }
      }
      in_call.clear();
    }
  }

  // Once per request (a restart keeps it). A drafter that cannot be built only means no speculation.
  void attach_drafter(SlotState& s) {
    const SpeculationOptions& so = opts.speculation;
    if (so.mode == SpeculationMode::Off) return;
    s.draft_k.emplace(so.max_k);
    try {
      if (so.mode == SpeculationMode::Ngram) s.drafter = std::make_unique<NgramDrafter>(so.ngram_min, so.ngram_max);
      else s.drafter = so.drafter_factory();
    } catch (const std::exception& e) {
      spdlog::warn("request {}: drafter not available ({}); decoding without speculation", s.req->id, e.what());
      s.drafter.reset();
    }
  }

  // How many drafts this request's next window may verify. Each row of a verify window is sampled with the
  // settings in force when the window starts, so a window must not cross the min_tokens boundary (where EOS
  // stops being masked); and drafts past max_tokens could never be emitted.
  // With `most` (the most drafts that cost nothing to make, DraftRoom) set as well.
  int draft_budget(const SlotState& s, int* most = nullptr) const {
    if (most) *most = 0;
    if (!s.drafter || !s.draft_k || s.pending_rows() != 1 || !s.decoding() || !s.wants_pick()) return 0;
    int limit = s.max_tokens - s.n_generated - 1;
    if (s.suppressing) limit = std::min(limit, s.req->min_tokens - s.n_generated - 1);
    const int k = std::max(std::min(s.draft_k->next(), limit), 0);
    if (most) *most = std::max(k, std::min(opts.speculation.lookup_k, limit));
    return k;
  }

  void propose_drafts(Incarnation& inc, const std::vector<SlotState*>& live, const WindowBudget& budget) {
    const int max_batch = opts.speculation.max_batch;
    int allowance = draft_allowance(live, budget);  // draft rows the next window can verify
    const long decoding =
        max_batch > 0 ? std::count_if(live.begin(), live.end(), [](const SlotState* s) { return s->decoding(); }) : 0;
    std::vector<SlotState*> want;
    std::vector<int> ks;
    std::vector<DraftRoom> rooms;
    int asked = 0, decode_rows = 0;
    for (SlotState* s : live) {
      s->drafts.clear();
      s->drafts_ahead = false;
      decode_rows += s->decoding() ? 1 : 0;
      if (decoding > max_batch) continue;  // a full batch: verify rows would only slow the others down
      int most = 0;
      const int k = draft_budget(*s, &most);
      if (k == 0) continue;
      asked += k;
      want.push_back(s);
      ks.push_back(k);
      rooms.push_back(DraftRoom{k, most});
    }
    // Where the exact rows (not the window budget) cannot hold every request's drafts, nobody drafts: a batch
    // that leaves each request a draft or two pays a wider window for little (strata-tiny on the H200 at batch
    // 8, one draft a request: 0.81-0.91x).
    if (asked > allowance && budget.exact_rows < budget.max_rows) return;
    // Under the window budget alone the drafts are trimmed first come, first served, as the planner trims them.
    size_t kept = 0;
    for (; kept < ks.size() && allowance > 0; ++kept) {
      ks[kept] = std::min(ks[kept], allowance);
      allowance -= ks[kept];
    }
    want.resize(kept);
    ks.resize(kept);
    rooms.resize(kept);
    // The rows left after every k go to the rooms in the same order, and so do the rows the window would
    // hold at no cost (the backend's cheap rows past the decode rows and every k).
    int cheap = std::max(0, info.cheap_rows - decode_rows);
    for (int k : ks) cheap -= k;
    for (size_t i = 0; i < kept; ++i) {
      DraftRoom& r = rooms[i];
      r.most = ks[i] + std::min(std::max(r.most - ks[i], 0), allowance);
      allowance -= r.most - ks[i];
      r.cheap = ks[i] + std::min(std::max(cheap, 0), r.most - ks[i]);
      cheap -= r.cheap - ks[i];
    }
    auto drop = [&](SlotState* s, const std::string& why) {
      drop_drafter(*s, why);
      s->drafts.clear();
    };
    auto one_by_one = [&](size_t i) {
      SlotState* s = want[i];
      in_call = {s};
      try {
        s->drafts = guarded(inc, call("draft"), [&] { return s->drafter->propose(s->seq, ks[i], rooms[i]); });
      } catch (const BackendFailure& e) {
        drop(s, e.what);
      }
      in_call.clear();
    };
    // Slots whose drafters can share windows (one draft backend) propose together, in order of first appearance.
    std::vector<bool> done(want.size(), false);
    for (size_t i = 0; i < want.size(); ++i) {
      if (done[i]) continue;
      const void* key = want[i]->drafter->batch_key();
      std::vector<size_t> group{i};
      if (key)
        for (size_t j = i + 1; j < want.size(); ++j)
          if (!done[j] && want[j]->drafter->batch_key() == key) group.push_back(j);
      for (size_t j : group) done[j] = true;
      if (group.size() == 1) {
        one_by_one(i);
        continue;
      }
      std::vector<DraftJob> jobs;
      for (size_t j : group) jobs.push_back(DraftJob{want[j]->drafter.get(), &want[j]->seq, ks[j], rooms[j], {}});
      in_call.clear();
      for (size_t j : group) in_call.push_back(want[j]);
      bool ok = true;
      try {
        guarded(inc, call("draft"), [&] { jobs[0].drafter->propose_together(jobs); });
      } catch (const BackendFailure&) {
        ok = false;  // which slot's drafts faulted is unknown: each one tries again alone
      }
      in_call.clear();
      for (size_t g = 0; g < group.size(); ++g) {
        if (ok) want[group[g]]->drafts = std::move(jobs[g].drafts);
        else one_by_one(group[g]);
      }
    }
    for (size_t i = 0; i < want.size(); ++i) {
      SlotState* s = want[i];
      s->drafts_ahead = s->drafter && !s->drafts.empty() && s->drafter->drafted_ahead();
      if (static_cast<int>(s->drafts.size()) > rooms[i].most) s->drafts.resize(static_cast<size_t>(rooms[i].most));
      // A token the target cannot embed would fault the window; everything from it on is dropped.
      for (size_t d = 0; d < s->drafts.size(); ++d) {
        TokenId t = s->drafts[d];
        if (t < 0 || (info.vocab_size > 0 && t >= info.vocab_size)) {
          s->drafts.resize(d);
          break;
        }
      }
    }
  }

  // Drafter::while_verifying for the requests whose drafts the started window verifies. A drafter that throws
  // (its backend out of KV blocks included: that is not the target's window's to handle) is dropped as in
  // propose_drafts; its drafts are in the window already and are verified as usual.
  void draft_while_verifying(Incarnation& inc, const std::vector<SlotState*>& members) {
    for (SlotState* s : members) {
      if (!s->drafter || s->drafts.empty()) continue;
      in_call = {s};
      std::optional<std::string> failed;
      try {
        guarded(inc, call("draft"), [&] { s->drafter->while_verifying(); });
      } catch (const BackendFailure& e) {
        failed = e.what;
      } catch (const OutOfKv& e) {
        failed = e.what;
      }
      if (failed) drop_drafter(*s, *failed);
    }
    in_call = members;
  }

  // The drafter is an optimisation: losing it must not cost the request (issue 6). Its request goes on
  // without speculation.
  void drop_drafter(SlotState& s, const std::string& why) {
    spdlog::warn("request {}: drafter '{}' failed ({}); continuing without speculation", s.req->id,
                 s.drafter->name(), why);
    s.drafter.reset();
  }

  // Requests with nothing left to compute and no pick to make (max_tokens == 0 once the prompt is in).
  void finish_exhausted(Incarnation& inc) {
    std::vector<SlotState*> done;
    for (auto& s : running)
      if (s->slot != kNoSlot && s->pending_rows() == 0 && !s->wants_pick()) done.push_back(s.get());
    for (SlotState* s : done) {
      deliver_finish(*s, out.finish_length(*s));
      retire(inc, s);
    }
  }

  CallInfo describe(const PlannedWindow& plan) const {
    CallInfo ci;
    ci.what = "window";
    ci.window_index = windows_run + 1;
    // Built for every window (the watchdog may need it while the call hangs), so plain appends: an
    // ostringstream per window of 128 slots was a visible part of the engine thread's time.
    const auto num = [](auto v) { return std::to_string(v); };
    ci.shape = std::string(plan.kind()) + ": " + num(plan.window.rows.size()) + " rows (" + num(plan.decode_rows) +
               " decode, " + num(plan.prefill_rows) + " prefill) over " + num(plan.members.size()) + " slots";
    std::string& slots = ci.slots;
    slots.reserve(plan.members.size() * 48);
    size_t i = 0;
    for (SlotState* s : plan.members) {
      while (i < plan.row_owner.size() && plan.row_owner[i] != s) ++i;
      size_t j = i;
      while (j < plan.row_owner.size() && plan.row_owner[j] == s) ++j;
      if (!slots.empty()) slots += ", ";
      slots += "slot ";
      slots += num(s->slot);
      slots += " (request ";
      slots += s->req->id;
      slots += ") pos ";
      slots += num(plan.window.rows[i].pos);
      slots += "..";
      slots += num(plan.window.rows[j - 1].pos);
      i = j;
    }
    return ci;
  }

  // One line of the window trace: when the window started, the engine's own time since the previous window
  // returned (accepting its picks, admission, this window's plan: what the device waits for), the window's
  // duration (start to results, the previous window's text made inside it), its rows, and how many admitted
  // prompts it left out (the prefill cap or the row budget was spent before their turn).
  void trace_window(const PlannedWindow& plan, Clock::time_point t0, Clock::time_point t1) {
    const double gap_us = last_window_end == Clock::time_point{} ? -1.0 : seconds(last_window_end, t0) * 1e6;
    size_t held = 0;
    for (const auto& s : running)
      if (s->slot != kNoSlot && !s->done && !s->decoding() &&
          std::find(plan.members.begin(), plan.members.end(), s.get()) == plan.members.end())
        ++held;
    std::fprintf(trace.get(),
                 "{\"t\":%.6f,\"gap_us\":%.1f,\"us\":%.1f,\"kind\":\"%s\",\"rows\":%zu,\"decode\":%d,"
                 "\"prefill\":%d,\"members\":%zu,\"running\":%zu,\"held\":%zu}\n",
                 seconds(trace_epoch, t0), gap_us, seconds(t0, t1) * 1e6, plan.kind(), plan.window.rows.size(),
                 plan.decode_rows, plan.prefill_rows, plan.members.size(), running.size(), held);
    last_window_end = t1;
  }

  // ---- the window pipeline --------------------------------------------------------------------------
  // A window's picks are accepted (accept_pick: history, counters, the ids' verdict) as soon as its call
  // returns: that is all the next window needs. Their text (detokenizing, stop strings, token events) is made
  // by flush_text() once the next window has started, while the device computes it; only requests' first
  // tokens go out before that (flush_first_tokens). A stop string found
  // then ends its request although the request has a row in that window: the row's result is dropped and
  // the slot retired after the window. Entries point into `running` or `ended`; whatever destroys a
  // SlotState flushes first, so no entry outlives its request.
  struct PendingPick {
    SlotState* s;
    RowResult r;
    OutputProcessor::Verdict v;
    int n_at;  // n_generated right after this pick
  };
  std::vector<PendingPick> pending;
  std::vector<std::unique_ptr<SlotState>> ended;  // ended by their ids: slot closed, last text pending

  void flush_text() {
    if (pending.empty() && ended.empty()) return;
    emit_picks(pending.begin(), pending.end());
    pending.clear();
    ended.clear();
  }

  // The first tokens of the window just accepted go out at once, before the next window is planned and
  // started: the accelerator waits for one token's text (microseconds), where a TTFT waited behind the
  // planning, the launch and every other stream's text and wake-up (0.5 / 2.3 ms p50 at 128 streams, run 33).
  // All picks of a slot move together, in order; a request that ends here is retired with the window's others.
  // This thread wakes their readers itself (a window has one or two): through the waker thread the wake-up
  // waited for that thread to be scheduled first (p99 0.54 against 0.02 ms at 128 streams, run 35).
  void flush_first_tokens() {
    const auto rest = std::stable_partition(pending.begin(), pending.end(),
                                            [](const PendingPick& p) { return p.s->first_event == Clock::time_point{}; });
    if (rest == pending.begin()) return;
    emit_picks(pending.begin(), rest, /*wake_here=*/true);
    pending.erase(pending.begin(), rest);
  }

  // Text, token events and finishes of picks [from, to), handed to the waker at once, or woken from this
  // thread when `wake_here`.
  void emit_picks(std::vector<PendingPick>::iterator from, std::vector<PendingPick>::iterator to,
                  bool wake_here = false) {
    std::vector<std::pair<SlotState*, FinishEvent>> finished;
    int generated = 0;
    for (auto it = from; it != to; ++it) {
      PendingPick& p = *it;
      SlotState& s = *p.s;
      if (s.done || s.ending) continue;  // a stop string ended it at an earlier pick (a verify window's)
      ++generated;
      if (s.first_event == Clock::time_point{}) s.first_event = Clock::now();
      std::optional<FinishEvent> f = out.emit_pick(s, std::move(p.r), p.v, p.n_at);
      if (f) {
        s.ending = true;
        finished.emplace_back(&s, std::move(*f));
      }
    }
    if (opts.metrics && generated > 0) opts.metrics->generation_tokens(generated);
    if (wake_here)
      waker.wake_now();
    else
      waker.flush();  // one hand-off for all of them
    for (auto& [s, f] : finished) deliver_finish(*s, std::move(f));
  }

  // Requests whose finish is out (a stop string, found while a window ran) give their slots back; no window
  // is in flight when this runs.
  void retire_done(Incarnation& inc) {
    std::vector<SlotState*> done;
    for (auto& s : running)
      if (s->done) done.push_back(s.get());
    for (SlotState* s : done) retire(inc, s);
  }

  // A request its ids ended (EOS, a stop id, max_tokens): its slot goes back now, before the next window is
  // planned, and the request waits in `ended` for its last text.
  void end_by_ids(Incarnation& inc, SlotState* s) {
    auto it = std::find_if(running.begin(), running.end(), [&](const auto& p) { return p.get() == s; });
    ended.push_back(std::move(*it));
    running.erase(it);
    release_slot(inc, s);
  }

  // One window: planned, started, the previous window's text made while it runs, its picks accepted. With
  // nothing to run, the previous window's text is flushed here.
  void run_window(Incarnation& inc) {
    std::vector<SlotState*> live;
    for (auto& s : running)
      if (s->slot != kNoSlot && !s->done) live.push_back(s.get());
    WindowBudget budget;
    budget.max_rows = opts.max_window_tokens;
    if (info.max_window_rows > 0) budget.max_rows = std::min(budget.max_rows, info.max_window_rows);
    budget.prefill_rows = opts.prefill_chunk;
    budget.exact_rows = info.exact_rows;
    const auto d0 = Clock::now();
    propose_drafts(inc, live, budget);
    if (opts.metrics) {
      bool drafted = false, ahead = true;
      for (const SlotState* s : live)
        if (!s->drafts.empty()) drafted = true, ahead = ahead && s->drafts_ahead;
      opts.metrics->spec_draft_time(seconds(d0, Clock::now()), drafted && ahead);
    }
    PlannedWindow plan;
    std::vector<RowResult> results;
    auto t0 = Clock::now();
    // A paged backend refuses a window its pool cannot hold (nothing changed); the youngest request then
    // gives its blocks back and waits to be recomputed, and the window is planned again without it.
    for (;;) {
      plan = plan_window(live, budget);
      if (plan.window.rows.empty()) {
        flush_text();
        retire_done(inc);
        return;
      }
      in_call = plan.members;
      t0 = Clock::now();
      try {
        const CallInfo what = describe(plan);
        guarded(inc, what, [&] { inc.backend->start_window(plan.window); });
        draft_while_verifying(inc, plan.members);
        flush_text();  // the previous window's text, while this one runs
        results = guarded(inc, what, [&] { return inc.backend->finish_window(); });
        break;
      } catch (const OutOfKv& e) {
        in_call.clear();
        flush_text();
        retire_done(inc);
        live.erase(std::remove_if(live.begin(), live.end(), [](const SlotState* x) { return x->done; }), live.end());
        SlotState* victim = youngest_with_slot();
        if (victim == nullptr || live.size() <= 1) {
          // Alone and still out of blocks: validate() should have made this impossible.
          if (live.empty()) return;
          SlotState* s = victim != nullptr ? victim : live.front();
          deliver_error(*s, {500, "kv_cache_exhausted", "the KV cache cannot hold this request: " + e.what});
          retire(inc, s);
          refresh_kv(inc);
          return;
        }
        preempt(inc, victim, e.what);
        live.erase(std::remove(live.begin(), live.end(), victim), live.end());
        refresh_kv(inc);
      }
    }
    auto t1 = Clock::now();
    ++windows_run;
    consecutive_faults = 0;  // a good window proves the rebuilt engine works
    if (opts.metrics) opts.metrics->window_duration(plan.kind(), seconds(t0, t1));
    if (trace) trace_window(plan, t0, t1);
    if (results.size() != plan.window.rows.size())
      throw BackendFailure{"backend returned " + std::to_string(results.size()) + " results for a window of " +
                           std::to_string(plan.window.rows.size()) + " rows"};

    std::vector<SlotState*> to_end;
    // Accepts one pick as plain decoding would, token by token; false once its ids end the request (a stop
    // inside accepted drafts ends it there).
    auto emit = [&](SlotState& s, RowResult& r) {
      check_pick(r.pick);
      if (s.n_generated == 0) {
        s.first_token = t1;
        if (opts.metrics) {
          opts.metrics->time_to_first_token(seconds(s.req->arrival, t1));
          opts.metrics->prefill_time(seconds(s.admitted, t1));
        }
      } else if (opts.metrics) {
        opts.metrics->inter_token_latency(seconds(s.last_token, t1));
      }
      s.last_token = t1;
      const OutputProcessor::Verdict v = out.accept_pick(s, r.pick);
      pending.push_back(PendingPick{&s, std::move(r), v, s.n_generated});
      if (v != OutputProcessor::Verdict::Continue) {
        to_end.push_back(&s);
        return false;
      }
      if (s.suppressing && s.n_generated >= s.req->min_tokens)
        configure_sampling(inc, s);  // min_tokens reached: EOS and stop ids may be picked again
      return true;
    };
    std::vector<int> drafts_of(results.size(), 0);  // at the first row of each member's part
    for (size_t i = 0, m = 0; i < results.size() && m < plan.members.size(); ++m) {
      while (i < results.size() && plan.row_owner[i] != plan.members[m]) ++i;
      if (i < results.size()) drafts_of[i] = plan.member_drafts[m];
      while (i < results.size() && plan.row_owner[i] == plan.members[m]) ++i;
    }
    for (size_t i = 0; i < results.size(); ++i) {
      const Row& row = plan.window.rows[i];
      SlotState& s = *plan.row_owner[i];
      if (s.done) {  // a stop string ended it while this window ran: the rows' results are dropped
        i += static_cast<size_t>(drafts_of[i]);
        continue;
      }
      if (drafts_of[i] > 0) {
        i += verify(inc, s, plan.window.rows, results, i, drafts_of[i], emit);
        continue;
      }
      s.n_cached = row.pos + 1;
      if (row.want_feature && s.drafter) s.drafter->take_feature(row.pos, std::move(results[i].feature));
      if (row.want_logits) out.record_prompt_logprob(s, row.pos, results[i].logits);
      if (!row.want_pick) continue;
      emit(s, results[i]);
    }
    in_call.clear();
    flush_first_tokens();
    for (SlotState* s : to_end) end_by_ids(inc, s);
    retire_done(inc);
    refresh_kv(inc);
  }

  SlotState* youngest_with_slot() {
    for (auto it = running.rbegin(); it != running.rend(); ++it)
      if ((*it)->slot != kNoSlot && !(*it)->done) return it->get();
    return nullptr;
  }

  // Gives a running request's KV back (its full blocks stay in the prefix cache) and puts it first in line
  // with everything it generated: readmitted, it recomputes prompt + generated tokens (mostly from the
  // prefix cache) and goes on exactly where it was, since a pick depends only on its own history and
  // position (DESIGN.md invariant 2).
  void preempt(Incarnation& inc, SlotState* s, const std::string& why) {
    log_event(spdlog::level::info, s->req->id, "request preempted",
              {{"reason", why}, {"positions", s->n_cached}, {"generated", s->n_generated}});
    s->n_cached = 0;
    s->suppressing = false;
    s->drafts.clear();
    auto it = std::find_if(running.begin(), running.end(), [&](const auto& p) { return p.get() == s; });
    resume.push_front(std::move(*it));
    running.erase(it);
    n_preemptions.fetch_add(1);
    if (opts.metrics) opts.metrics->preemption();
    release_slot(inc, s);
  }

  void check_pick(TokenId pick) const {
    if (pick < 0 || (info.vocab_size > 0 && pick >= info.vocab_size))
      throw BackendFailure{"backend picked token " + std::to_string(pick) + " outside the vocabulary of " +
                           std::to_string(info.vocab_size)};
  }

  // A verify window part: rows [first, first + n_drafts] are [last, d1..dk]. Draft i is kept iff it equals
  // the pick of the row before it, which is the token plain decoding would have produced there; so the picks
  // up to and including the first mismatch are exactly plain decoding's next tokens. Returns the rows
  // consumed after `first`.
  template <class Emit>
  size_t verify(Incarnation& inc, SlotState& s, const std::vector<Row>& rows, std::vector<RowResult>& results,
                size_t first, int n_drafts, Emit& emit) {
    int accepted = 0;
    while (accepted < n_drafts &&
           rows[first + 1 + static_cast<size_t>(accepted)].token == results[first + static_cast<size_t>(accepted)].pick)
      ++accepted;
    for (int j = 0; j <= accepted; ++j) check_pick(results[first + static_cast<size_t>(j)].pick);
    // STRATA_DEBUG_VERIFY=1 (read once; a debugging switch): every verify window on stderr, its request, first
    // position, drafts and accepted count and each row's token / pick, to set one backend's speculation beside
    // another's (docs/PERFORMANCE.md run 116).
    static const bool debug_verify = [] {
      const char* e = std::getenv("STRATA_DEBUG_VERIFY");
      return e != nullptr && e[0] == '1';
    }();
    if (debug_verify) {
      std::string line = "verify " + s.req->id + " pos " + std::to_string(rows[first].pos) + " drafts " +
                         std::to_string(n_drafts) + " accepted " + std::to_string(accepted) +
                         (s.drafts_ahead ? " ahead:" : ":");
      for (int j = 0; j <= n_drafts; ++j)
        line += " " + std::to_string(rows[first + static_cast<size_t>(j)].token) + "/" +
                std::to_string(results[first + static_cast<size_t>(j)].pick);
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    // Rejected drafts' KV cells and penalty history go before anything else reads the slot.
    guarded(inc, call("commit"), [&] { inc.backend->commit(s.slot, 1 + accepted); });
    s.n_cached = rows[first].pos + 1 + accepted;
    ++s.spec_windows;
    s.spec_proposed += n_drafts;
    s.spec_accepted += accepted;
    s.spec_ahead += s.drafts_ahead ? 1 : 0;
    // Adaptive k follows the drafts a window's k asked for; a longer copy's further drafts are lookup's reach.
    if (s.draft_k) {
      const int k = s.draft_k->next();
      s.draft_k->update(std::min(n_drafts, k), std::min(accepted, k));
    }
    if (opts.metrics) {
      opts.metrics->spec_draft(n_drafts, accepted);
      if (s.drafts_ahead) opts.metrics->spec_drafted_ahead();
      for (int j = 0; j < accepted; ++j) opts.metrics->spec_accepted_at(j);
    }
    // The kept rows' features (the last token's and the accepted drafts') go to a feature-reading drafter.
    for (int j = 0; j <= accepted; ++j) {
      const size_t r = first + static_cast<size_t>(j);
      if (rows[r].want_feature && s.drafter) s.drafter->take_feature(rows[r].pos, std::move(results[r].feature));
    }
    for (int j = 0; j <= accepted; ++j)
      if (!emit(s, results[first + static_cast<size_t>(j)])) break;
    return static_cast<size_t>(n_drafts);
  }

  void publish() {
    long cached = 0;
    for (auto& s : running)
      if (s->slot != kNoSlot) cached += s->n_cached;
    n_running.store(static_cast<int>(running.size()));
    n_resume.store(static_cast<int>(resume.size()));
    n_cached_positions.store(cached);
    if (opts.metrics) {
      size_t queued;
      {
        std::lock_guard<std::mutex> lock(mu);
        queued = waiting.size();
      }
      opts.metrics->set_running(static_cast<int>(running.size()));
      opts.metrics->set_waiting(static_cast<int>(queued + resume.size()));
      opts.metrics->set_slots(n_busy.load(), info.max_slots);
      opts.metrics->set_kv_usage(kv_usage());
      opts.metrics->set_kv_blocks(kv_free.load(), kv_blocks.load());
    }
  }

  double kv_usage() const {
    // Paged: blocks that cannot be handed out now (held by a slot) over the pool.
    if (kv_blocks.load() > 0) return static_cast<double>(kv_blocks.load() - kv_free.load()) / kv_blocks.load();
    double cap = static_cast<double>(max_slots.load()) * max_context.load();
    return cap > 0 ? static_cast<double>(n_cached_positions.load()) / cap : 0.0;
  }

  // ---- submission (HTTP threads) --------------------------------------------------------------------
  // A request the engine refuses outright still gets its one FinishEvent, like any accepted request.
  std::optional<Failure> validate(const GenerationRequest& r, int& effective_max_tokens) const {
    int ctx = max_context.load(), vocab = vocab_size.load();
    int n = static_cast<int>(r.prompt.size());
    if (n == 0) return Failure{400, "invalid_prompt", "the prompt is empty: at least one token is needed"};
    for (int i = 0; i < n; ++i) {
      TokenId t = r.prompt[static_cast<size_t>(i)];
      if (t < 0 || (vocab > 0 && t >= vocab))
        return Failure{400, "invalid_prompt",
                     "prompt token " + std::to_string(i) + " has id " + std::to_string(t) +
                         ", outside the vocabulary of " + std::to_string(vocab)};
    }
    // A paged backend's whole pool may be smaller than one context: a request must fit it alone.
    const long kv_positions = static_cast<long>(kv_blocks.load()) * kv_block_size.load();
    const int cap = kv_positions > 0 && kv_positions < ctx ? static_cast<int>(kv_positions) : ctx;
    effective_max_tokens = r.max_tokens < 0 ? cap - n : r.max_tokens;
    if (n >= ctx || static_cast<long>(n) + effective_max_tokens > ctx)
      return Failure{400, "context_length_exceeded",
                   "this model's maximum context length is " + std::to_string(ctx) + " tokens, but the prompt has " +
                       std::to_string(n) + " tokens and max_tokens is " + std::to_string(effective_max_tokens) +
                       " (" + std::to_string(static_cast<long>(n) + effective_max_tokens) + " in all)"};
    if (cap < ctx && (n >= cap || static_cast<long>(n) + effective_max_tokens > cap))
      return Failure{400, "context_length_exceeded",
                     "the KV cache holds " + std::to_string(cap) + " positions in all (" +
                         std::to_string(kv_blocks.load()) + " blocks of " + std::to_string(kv_block_size.load()) +
                         "), but the prompt has " + std::to_string(n) + " tokens and max_tokens is " +
                         std::to_string(effective_max_tokens) + " (" +
                         std::to_string(static_cast<long>(n) + effective_max_tokens) + " in all)"};
    if (r.min_tokens < 0 || r.min_tokens > effective_max_tokens)
      return Failure{400, "invalid_min_tokens",
                   "min_tokens is " + std::to_string(r.min_tokens) + "; it must be within [0, max_tokens=" +
                       std::to_string(effective_max_tokens) + "]"};
    if (r.logprobs < -1) return Failure{400, "invalid_logprobs", "logprobs must be -1 (none) or at least 0"};
    return std::nullopt;
  }
};

Engine::Engine(BackendFactory factory, const Tokenizer& tokenizer, std::vector<TokenId> eos_ids,
               EngineOptions opts)
    : impl_(std::make_unique<Impl>(std::move(factory), tokenizer, std::move(eos_ids), std::move(opts))) {
  Impl& m = *impl_;
  if (m.opts.max_queued < 0) throw Error("engine: max_queued must not be negative");
  if (m.opts.prefill_chunk < 1) throw Error("engine: prefill_chunk must be at least 1");
  if (m.opts.max_window_tokens < 1) throw Error("engine: max_window_tokens must be at least 1");
  if (!(m.opts.watchdog_timeout_s > 0)) throw Error("engine: watchdog_timeout_s must be positive");
  if (m.opts.watchdog_max_restarts < 0) throw Error("engine: watchdog_max_restarts must not be negative");
  const SpeculationOptions& so = m.opts.speculation;
  if (so.mode != SpeculationMode::Off && so.max_k < 1)
    throw Error("engine: speculation.max_k must be at least 1 when speculation is on");
  if (so.max_batch < 0) throw Error("engine: speculation.max_batch must not be negative (0 = no limit)");
  if (so.mode == SpeculationMode::Ngram && (so.ngram_min < 1 || so.ngram_max < so.ngram_min))
    throw Error("engine: speculation n-gram sizes must satisfy 1 <= ngram_min <= ngram_max");
  if (so.mode == SpeculationMode::Draft && !so.drafter_factory)
    throw Error("engine: speculation mode 'draft' needs a drafter_factory");
  // The first backend is built here, on the caller's thread, so a load error reaches main as an exception
  // with its message instead of a dead engine.
  auto first = std::make_shared<Incarnation>();
  first->backend = m.make_backend();
  m.adopt_info(first->backend->info());
  m.loading.store(false);
  m.publish();
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.current = first;
    m.engine_alive = true;
    m.engine_thread = std::thread([&m, first] { m.thread_main(first); });
  }
  auto poll = std::chrono::milliseconds(
      std::clamp(static_cast<long>(m.opts.watchdog_timeout_s * 1000 / 20), 2L, 100L));
  m.watchdog = std::make_unique<Watchdog>(poll, [&m] { m.watch(); });
}

Engine::~Engine() {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  m.stopping = true;
  m.cv.notify_all();
  // A wedged thread is claimed by the watchdog within its timeout, so this wait is bounded.
  m.cv.wait(lock, [&] { return !m.engine_alive; });
  std::thread t = std::move(m.engine_thread);
  lock.unlock();
  if (t.joinable()) t.join();
  m.watchdog.reset();
}

SubmitResult Engine::submit(std::shared_ptr<GenerationRequest> req, std::shared_ptr<RequestChannel> channel) {
  if (!req || !channel) throw Error("engine submit: request and channel must not be null");
  Impl& m = *impl_;
  int max_tokens = 0;
  std::optional<Failure> refusal;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.failed || m.stopping) return SubmitResult::NotReady;
    if (m.draining) return SubmitResult::Draining;
    if (static_cast<int>(m.waiting.size()) >= m.opts.max_queued) return SubmitResult::QueueFull;
    refusal = m.validate(*req, max_tokens);
    if (!refusal) {
      m.waiting.push_back(std::make_unique<SlotState>(req, channel, m.tok, max_tokens));
      m.cv.notify_all();
      return SubmitResult::Accepted;
    }
  }
  SlotState refused(req, channel, m.tok, 0);
  m.deliver_error(refused, *refusal);
  return SubmitResult::Accepted;
}

void Engine::start_draining() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->draining = true;
}

bool Engine::idle() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->waiting.empty() && impl_->n_running.load() == 0 && impl_->n_resume.load() == 0;
}

bool Engine::healthy() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return !impl_->failed && impl_->engine_alive;
}

bool Engine::ready() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return !impl_->failed && impl_->engine_alive && !impl_->draining && !impl_->stopping && !impl_->loading.load();
}

EngineStats Engine::stats() const {
  EngineStats st;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    st.waiting = static_cast<int>(impl_->waiting.size());
  }
  st.waiting += impl_->n_resume.load();
  st.running = impl_->n_running.load();
  st.slots_busy = impl_->n_busy.load();
  st.slots_total = impl_->max_slots.load();
  st.kv_usage = impl_->kv_usage();
  st.kv_blocks = impl_->kv_blocks.load();
  st.kv_free_blocks = impl_->kv_free.load();
  st.preemptions = impl_->n_preemptions.load();
  st.prefix_lookups = impl_->n_prefix_lookups.load();
  st.prefix_hits = impl_->n_prefix_hits.load();
  return st;
}

int Engine::max_context() const { return impl_->max_context.load(); }

}  // namespace strata
