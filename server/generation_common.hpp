// Pieces the chat and completions routes share: model resolution, prompt-length checks, building the n
// engine requests of a choice set, the "stop waiting" predicate (client gone or server aborting), and the
// SSE session around a stream's events.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/request.hpp"
#include "server/openai/responses.hpp"
#include "server/generation_job.hpp"
#include "server/route.hpp"

namespace strata {

// Throws 404 when `model` is neither empty nor a served id; returns the id to echo back.
std::string resolve_model(const RouteEnv& env, const std::string& model);
// Throws 503 when no engine is attached yet.
void require_engine(const RouteEnv& env);
// Throws 400 context_length_exceeded when the prompt leaves no room to generate, or when an explicit
// max_tokens does not fit after it (the engine refuses that too; checking here names the parameter).
void check_prompt_length(const RouteEnv& env, size_t prompt_tokens, const std::string& param,
                         std::optional<int> max_tokens);

std::string new_response_id(const std::string& prefix);  // "chatcmpl-" + 24 hex digits
ResponseHeader make_header(const std::string& id_prefix, const std::string& model);

// One engine request per choice; choice j gets seed + j (or a random seed when none was given). Without
// max_tokens a choice may fill the context (capped by --max-tokens-limit).
std::vector<std::shared_ptr<GenerationRequest>> make_requests(const RouteEnv& env, const GenerationOptions& g,
                                                              const std::vector<TokenId>& prompt, int logprobs,
                                                              bool prompt_logprobs, const std::string& id,
                                                              int first_index);

std::function<bool()> stop_predicate(const RouteEnv& env, const CallContext& call);

// A non-streaming request given up before it finished: 503 when the server is aborting; otherwise the
// client left, and the (unread) answer counts as 499 "client closed request" in metrics.
RouteResponse unfinished_response(const RouteEnv& env);

// An engine error or a cancellation we did not ask for, as the client should see it.
ApiError finish_error(const FinishEvent& f);
bool is_failure(const FinishEvent& f);

// A whole (non-streamed) answer, per choice: the text (every token's text, then the finish event's) and the
// finish event.
struct WholeAnswer {
  std::vector<std::string> text;
  std::vector<FinishEvent> finish;
};
// Waits for every choice of the job, showing each token to on_token(choice, token) as it comes. An error
// response when a choice failed or the wait was given up (client gone, server aborting), else nullopt.
std::optional<RouteResponse> collect_whole(const RouteEnv& env, GenerationJob& job, const CallContext& call,
                                           WholeAnswer* out,
                                           const std::function<void(size_t, const TokenEvent&)>& on_token);

// What both streaming routes do around their events: send them while the client listens, stop waiting when
// it leaves or the server aborts, and end the stream. finish() cancels the job and returns 499 when the
// client left (its slots are freed now, not when the response object dies); sends the error event when the
// engine stopped the job before it finished; else sends `usage_chunk` (unless null) and [DONE], 200.
class SseSession {
 public:
  SseSession(const RouteEnv& env, const CallContext& call, GenerationJob& job,
             const std::function<bool(const std::string&)>& write);
  SseSession(const SseSession&) = delete;  // stop() refers to this object
  SseSession& operator=(const SseSession&) = delete;
  bool send(const nlohmann::json& event);  // false once the client is gone (nothing more is written)
  // send() for an event that carries generated tokens: the first one's write time goes in the debug line
  // finish() logs ("stream delivered": arrival to first token written, and the arrival's wall-clock time,
  // to set beside a client's own timeline).
  bool send_token(const nlohmann::json& event);
  bool client_ok() const { return client_ok_; }
  // The predicate GenerationJob::wait takes.
  const std::function<bool()>& stop() const { return stop_; }
  int finish(const nlohmann::json& usage_chunk);

 private:
  void log_delivery() const;

  const std::function<bool(const std::string&)>& write_;
  GenerationJob& job_;
  std::chrono::steady_clock::time_point received_, submitted_, first_token_write_{};
  // When the first token's write began, and (debug logging) how long this thread sat on a run queue between
  // taking the first event and the write's return (-1: not measured).
  std::chrono::steady_clock::time_point first_write_begin_{};
  int64_t first_write_queued_ns_ = -1;
  bool client_ok_ = true;
  std::function<bool()> stop_;
};

// The state an SSE stream keeps alive while it runs: the route's plan and its engine job.
template <class Plan>
struct GenerationStream {
  const RouteEnv* env = nullptr;
  Plan plan;
  std::unique_ptr<GenerationJob> job;
  CallContext call;
};

// The last step both generation routes share: submit the job, then answer whole (`whole(env, plan, job,
// call)`) or hand the plan and job to a stream (`run(stream, write)`) that owns them until it ends.
template <class Plan, class Whole, class Run>
RouteResponse answer_generation(const RouteEnv& env, Plan plan, std::unique_ptr<GenerationJob> job,
                                const CallContext& call, bool stream, Whole whole, Run run) {
  if (auto err = job->submit(*env.engine, call.received)) return error_response(*err);
  if (!stream) return whole(env, plan, *job, call);
  auto s = std::make_shared<GenerationStream<Plan>>();
  s->env = &env;
  s->plan = std::move(plan);
  s->job = std::move(job);
  s->call = call;
  s->call.submitted = std::chrono::steady_clock::now();
  RouteResponse r;
  r.stream = [s, run](const std::function<bool(const std::string&)>& write) { return run(*s, write); };
  return r;
}

}  // namespace strata
